"""`apply_patch`: apply a Codex patch to the current directory.

    apply_patch 'PATCH'            the patch as the only argument
    apply_patch < patch.txt        or on stdin
    apply_patch <<'EOF' … EOF      (a heredoc is stdin)

Exit status: 0 applied, 1 the patch failed (nothing changed), 2 usage error.
Only the patch engine is imported: no MCP, no image or PDF libraries.
"""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = """\
usage: apply_patch 'PATCH'
       apply_patch < patch.txt

Apply a patch in the Codex format to files under the current directory:

  *** Begin Patch
  *** Add File: path/new.txt
  +line of the new file
  *** Update File: path/old.py
  *** Move to: path/renamed.py      (optional)
  @@ def some_function():           (optional context; may repeat to narrow)
   context line
  -removed line
  +added line
  *** Delete File: path/obsolete.txt
  *** End Patch

Paths are relative to the current directory; paths that resolve outside it are refused.
The patch is applied all or nothing. Exit status: 0 applied, 1 failed (no file changed), 2 usage.
"""


def main(argv: list[str] | None = None) -> int:
    """The console script (its return value is the exit status: the wrapper calls sys.exit)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0
    if len(args) > 1:
        sys.stderr.write("apply_patch: expected one argument (the patch), got %d\n\n%s" % (len(args), USAGE))
        return 2
    if args:
        patch = args[0]
    else:
        if sys.stdin is None or sys.stdin.isatty():
            sys.stderr.write("apply_patch: no patch given (pass it as the argument or on stdin)\n\n" + USAGE)
            return 2
        data = sys.stdin.buffer.read()
        patch = data.decode("utf-8", "surrogateescape")
    if not patch.strip():
        sys.stderr.write("apply_patch: the patch is empty\n\n" + USAGE)
        return 2

    from .apply import apply_patch
    from .errors import PatchError

    try:
        changes = apply_patch(patch, Path.cwd())
    except PatchError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    except OSError as e:  # e.g. the current directory vanished
        sys.stderr.write(f"apply_patch: {e}\n")
        return 1
    sys.stdout.write(changes.summary())
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
