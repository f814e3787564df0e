"""What the Read deny rules cover in the workspace tree.

Two answers, from the one shared walk of each root (`files.scan`):

- the paths the read-only jail masks: every entry a deny rule matches (a matched directory is
  masked whole), and every other name of a denied file — a hard link (`ln .env x`) is the same
  file, so it is masked too;
- the inodes of denied files, so that a file whose (st_dev, st_ino) is a denied file's is denied
  to the file tools and the command classifier, whatever it is called.

Matching a rule against every name of a big tree is the expensive part, so each directory's
matches are kept with its `Dir` record and reused while the directory is unchanged. Inode numbers
come from the directory listing (`d_ino`); where the file system reports other numbers in `stat`
(some overlay setups), the denied files and their links are found with `lstat` instead.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.scan import DIR, FILE, Dir, Snapshot, shared

if TYPE_CHECKING:
    from .rules import Rule

VERIFY_SAMPLE = 16  # denied files whose listed inode number is checked against lstat


@dataclass(frozen=True)
class DeniedView:
    masks: list[Path]  # denied entries (a denied directory stands for its contents) and hard links to denied files
    inodes: dict[tuple[int, int], Path]  # (st_dev, st_ino) of every denied regular file → one of its denied paths
    gap: str | None  # why the view may be missing paths (the walk was cut short), or None


class DeniedFiles:
    """The Read deny rules of one session over the shared walks of its roots."""

    def __init__(self, rules: "list[Rule]"):
        self.active = bool(rules)
        self._everything = any(r.specifier is None for r in rules)  # a bare `Read` deny
        self._matchers = [r.path_regex() for r in rules if r.specifier is not None]
        self._per_dir: dict[tuple[Path, str], tuple[Dir, tuple[int, ...]]] = {}
        self._lock = threading.Lock()
        self._last: tuple[tuple[Snapshot, ...], DeniedView] | None = None

    def view(self, roots: list[Path], max_age: float) -> DeniedView:
        snaps = tuple(shared(r).snapshot(max_age) for r in roots)
        with self._lock:
            last = self._last
            if last is not None and len(last[0]) == len(snaps) and all(a is b for a, b in zip(last[0], snaps)):
                return last[1]
            view = self._compute(snaps)
            self._last = (snaps, view)
            return view

    # -- matching ---------------------------------------------------------------------------
    def _denied_in(self, root: Path, rel: str, d: Dir) -> tuple[int, ...]:
        """Indexes of `d`'s entries a deny rule matches (kept while `d` is unchanged)."""
        hit = self._per_dir.get((root, rel))
        if hit is not None and hit[0] is d:
            return hit[1]
        if self._everything:
            found = tuple(range(len(d.names)))
        else:
            directory = root / rel if rel else root
            tests = []
            for base, rx in self._matchers:
                if rx is None or not (directory == base or base in directory.parents):
                    continue
                prefix = directory.relative_to(base).as_posix()
                tests.append(("" if prefix == "." else prefix + "/", rx.match))
            found = tuple(i for i, name in enumerate(d.names)
                          if any(m(p + name) or m(p + name + "/") for p, m in tests)) if tests else ()
        self._per_dir[(root, rel)] = (d, found)
        return found

    def _compute(self, snaps: tuple[Snapshot, ...]) -> DeniedView:
        masks: list[Path] = []
        files: list[tuple[Path, int, int]] = []  # denied regular files: (path, dev, listed inode)
        open_dirs: list[tuple[Snapshot, str, Dir]] = []  # directories not inside a denied one
        seen: set[tuple[Path, str]] = set()
        gaps = [s.reason for s in snaps if not s.complete and s.reason]
        for snap in snaps:
            inside: set[str] = set()  # directories denied, or inside a denied one
            for rel, d in snap.dirs.items():
                seen.add((snap.root, rel))
                prefix = rel + "/" if rel else ""
                if rel in inside:
                    inside.update(prefix + n for n in d.subdirs)
                    files += [(snap.path(rel, n), d.dev, ino) for n, k, ino in zip(d.names, d.kinds, d.inos) if k == FILE]
                    continue
                open_dirs.append((snap, rel, d))
                for i in self._denied_in(snap.root, rel, d):
                    name, kind = d.names[i], d.kinds[i]
                    masks.append(snap.path(rel, name))
                    if kind == DIR:
                        inside.add(prefix + name)
                    elif kind == FILE:
                        files.append((snap.path(rel, name), d.dev, d.inos[i]))
        for key in [k for k in self._per_dir if k not in seen]:
            del self._per_dir[key]  # directories gone from the tree
        denied = set(masks)
        if all(_listed_inode_is_real(p, dev, ino) for p, dev, ino in files[:VERIFY_SAMPLE]):
            inodes = {(dev, ino): p for p, dev, ino in files}
            numbers = {ino for _, ino in inodes}
            for snap, rel, d in open_dirs:
                if numbers.isdisjoint(d.inos):
                    continue
                for name, kind, ino in zip(d.names, d.kinds, d.inos):
                    if kind == FILE and (d.dev, ino) in inodes:
                        p = snap.path(rel, name)
                        if p not in denied:
                            masks.append(p)
        else:
            inodes, links = _by_lstat(files, open_dirs, denied)
            masks += links
        return DeniedView(masks, inodes, "; ".join(gaps) or None)


def _listed_inode_is_real(p: Path, dev: int, ino: int) -> bool:
    try:
        st = os.stat(p, follow_symlinks=False)
    except OSError:
        return True  # gone since the walk: nothing to compare
    return (st.st_dev, st.st_ino) == (dev, ino)


def _by_lstat(files, open_dirs, denied: set[Path]) -> tuple[dict[tuple[int, int], Path], list[Path]]:
    """Where listed inode numbers are not stat's: lstat every denied file, then every regular
    file with more than one link, to find the other names."""
    inodes: dict[tuple[int, int], Path] = {}
    for p, _dev, _ino in files:
        try:
            st = os.stat(p, follow_symlinks=False)
        except OSError:
            continue
        inodes[(st.st_dev, st.st_ino)] = p
    links: list[Path] = []
    if not inodes:
        return inodes, links
    for snap, rel, d in open_dirs:
        for name, kind in zip(d.names, d.kinds):
            if kind != FILE:
                continue
            p = snap.path(rel, name)
            if p in denied:
                continue
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError:
                continue
            if st.st_nlink > 1 and (st.st_dev, st.st_ino) in inodes:
                links.append(p)
    return inodes, links
