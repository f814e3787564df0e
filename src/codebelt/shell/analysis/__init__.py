"""Shell command analysis: tree-sitter-bash → a `Script` of simple commands (`parse`), the
read-only classifier (`readonly`, `options`), the dangerous-command list (`danger`), and
`analyze`, which turns a parsed command into facts for the permission engine. No decisions
are made here and nothing is run."""
