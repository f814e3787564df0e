"""Shell support: command analysis (parse, read-only, danger), the runner, tasks, the sandbox.

Kept import-light: `from codebelt.shell import analyze` loads tree-sitter only on first use.
"""

from __future__ import annotations


def analyze(command, cwd, workspace):
    """See `codebelt.shell.analyze.analyze`."""
    from .analyze import analyze as _analyze

    return _analyze(command, cwd, workspace)


__all__ = ["analyze"]
