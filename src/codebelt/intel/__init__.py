"""Code intelligence: a tree-sitter index (definitions, references, a ranked repository map)
and a client for real language servers. A plain library: it knows nothing of sessions."""
