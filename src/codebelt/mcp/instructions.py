"""The server's `instructions`: what the model should know before it picks a tool."""

INSTRUCTIONS = """\
codebelt gives you the tools to work on the codebase in {root}: read, search, edit and run \
commands. Paths may be absolute or relative to that root; results show paths relative to it.

Choosing a tool:
- Read a file with Read, never with `cat`, `head`, `tail` or `sed -n` through Bash. Read pages \
long files with offset/limit, and also reads images, PDFs and notebooks.
- Search file contents with Grep (ripgrep), never with `grep` or `rg` through Bash. Find files by \
name with Glob (e.g. "**/*.py"), never with `find` or `ls -R`.
- Change a file with Edit (one exact replacement) or MultiEdit (several, applied together). Read a \
file before you edit it: edits to a file you have not read, or that changed since you read it, \
are refused. old_string must match the file exactly (indentation included) and be unique, or \
set replace_all. Use Write only for new files or complete rewrites.
- ApplyPatch takes a patch in the apply_patch format: "*** Begin Patch", then "*** Add File: \
path", "*** Update File: path" (with "@@" hunks of " ", "-", "+" lines) or "*** Delete File: \
path" sections, then "*** End Patch". Use it for changes across several files.
- Run builds, tests, git and other programs with Bash. Quote paths that contain spaces. Set \
run_in_background for long-running commands (servers, watchers, long builds), then read their \
new output with BashOutput and stop them with KillShell.
- Independent reads and searches can be called in parallel.

Permissions: some calls need the user's approval. When a call is denied, the error says why and \
what would allow it; do not retry the same call, change your approach or ask the user. Large \
outputs are saved to a file whose path the result gives: read it with Read (offset/limit) or Grep.
"""


def instructions_for(root: str) -> str:
    return INSTRUCTIONS.format(root=root)
