"""Where a patch's paths point: resolved by the workspace's one path policy (`Workspace`:
symlinks and `..` resolved first, UNC and NUL refused), from a base directory, and refused
outside the workspace's roots."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..errors import PatchPathError, PathError
from ..workspace import Workspace

Resolver = Callable[[str], Path]
Display = Callable[[Path], str]


def workspace_resolver(root: Path | Workspace, base: Path | None = None, roots: list[Path] | None = None,
                       resolved: Callable[[str, Path], Path] | None = None) -> Resolver:
    """Resolve patch paths from `base` (default: the root); refuse anything outside the roots.
    Absolute paths are fine when they land inside. `resolved(text, base)`, when given, is the
    caller's resolution (a tool's: the one its permission decision was made on)."""
    ws = root if isinstance(root, Workspace) else Workspace(Path(root), [Path(r) for r in (roots or [])])
    start = Path(os.path.realpath(base)) if base is not None else ws.root
    dirs: dict[Path, Path] = {}  # patches name many files in few directories

    def resolve(text: str) -> Path:
        if not text or not text.strip():
            raise PatchPathError("a path in the patch is empty")
        try:
            resolved_path = (resolved(text, base if base is not None else ws.root) if resolved is not None
                             else ws.resolve(text, base=start, dir_cache=dirs))
        except PathError as e:
            raise PatchPathError(str(e)) from None
        if not ws.is_inside(resolved_path):
            raise PatchPathError(
                f"{text} is outside the workspace ({ws.root}); a patch may only change files inside it")
        return resolved_path

    return resolve


def relative_display(root: Path | Workspace) -> Display:
    ws = root if isinstance(root, Workspace) else Workspace(Path(root))
    return ws.relative
