"""'Did you mean …?' for paths that do not exist: near names in the nearest existing directory."""

from __future__ import annotations

import difflib
from pathlib import Path

from .beneath import ANYWHERE, Beneath

MAX_ENTRIES = 5000  # don't list huge directories just to make a suggestion


def _nearest_entries(path: Path, beneath: Beneath) -> tuple[Path, list[str], list[str]]:
    """(nearest existing directory above `path`, its entry names, the missing components).
    Directories are listed through descriptors opened without following symlinks, so a
    suggestion never shows names from wherever a swapped-in link points."""
    parent = path.parent
    missing = [path.name]
    while True:
        try:
            return parent, beneath.scandir_names(parent, MAX_ENTRIES), missing
        except OSError:
            if parent == parent.parent:
                return parent, [], missing
            missing.insert(0, parent.name)
            parent = parent.parent


def similar_paths(path: Path, limit: int = 3, beneath: Beneath = ANYWHERE) -> list[Path]:
    """Existing paths whose names are close to the missing `path` (same directory first)."""
    parent, names, missing = _nearest_entries(path, beneath)
    if not names:
        return []
    want = missing[0]
    stem = _stem(want)
    # Compare stems, so a shared extension alone (nope.txt vs a.txt) is no suggestion; the same
    # stem with another extension (config.yml vs config.yaml) is.
    scored = []
    for n in names:
        ratio = difflib.SequenceMatcher(None, stem.lower(), _stem(n).lower()).ratio()
        if ratio >= 0.75 or (ratio >= 0.6 and len(stem) > 3):
            scored.append((-ratio, difflib.SequenceMatcher(None, want, n).ratio() * -1, n))
    found = [n for *_, n in sorted(scored)]
    # A missing directory component that has a near match: complete the rest of the path.
    return [parent.joinpath(n, *missing[1:]) for n in found[:limit]]


def did_you_mean(path: Path, show, beneath: Beneath = ANYWHERE) -> str:
    """' Did you mean X?' (with `show` mapping a Path to display text), or ''."""
    near = similar_paths(path, beneath=beneath)
    if not near:
        return ""
    return " Did you mean " + " or ".join(show(p) for p in near) + "?"


def _stem(name: str) -> str:
    stem = name.rsplit(".", 1)[0] if "." in name[1:] else name
    return stem or name
