"""What the Read deny rules cover in the workspace tree.

Two answers, from the one shared walk of each root (`files.scan`):

- the paths the read-only jail and the write sandbox mask: every entry a deny rule matches (a matched directory is
  masked whole), and every other name of a denied file — a hard link (`ln .env x`) is the same
  file, so it is masked too;
- the inodes of denied files, so that a file whose (st_dev, st_ino) is a denied file's is denied
  to the file tools and the command classifier, whatever it is called.

A rule about paths outside the workspace (`Read(~/.aws/**)`, `Read(//srv/keys/*.pem)`) is
matched the same way in a walk of its own: from the deepest directory its pattern names without
a wildcard (`~/.aws`, `/srv/keys`), bounded like the workspace's. A pattern without any
wildcard names one path, and one ending in `/**` everything below one: that path is masked as it
is (and walked too, so that hard links to the files in it are found — not the home directory, `/`
or a parent of the workspace, whose walk would cost every command: links into those are not
found). A file once denied stays denied by inode, under any name, while it is in the walked
trees (a rename must not lift a rule that names a path). A directory on the way that is a symlink is masked at its
target, whole: a pattern matched below a link's name says nothing about the target's names.

Matching a rule against every name of a big tree is the expensive part, so each directory's
matches are kept with its `Dir` record and reused while the directory is unchanged. Inode numbers
come from the directory listing (`d_ino`); where the file system reports other numbers in `stat`
(some overlay setups), the denied files and their links are found with `lstat` instead.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.scan import DIR, FILE, LINK, Dir, Found, Snapshot, shared

if TYPE_CHECKING:
    from .rules import Rule

VERIFY_SAMPLE = 16  # denied files whose listed inode number is checked against lstat
MAX_ONCE = 100_000  # denied files remembered by inode across renames
GLOB_CHARS = frozenset("*?[\\")


def _outside(rules: "list[Rule]", roots: list[Path]) -> tuple[list[Path], list[Path]]:
    """For the rules whose paths lie outside the workspace roots: (directories to walk, paths to
    mask as they are)."""
    tops: list[Path] = []
    direct: list[Path] = []
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for rule in rules:
        if rule.specifier is None:
            continue
        base, pattern = rule.path_pattern()
        if not pattern.startswith("/") and "/" not in pattern.rstrip("/"):
            continue  # unanchored: matches below its base only, which is a root
        parts = [c for c in pattern.strip("/").split("/") if c]
        literal: list[str] = []
        for c in parts:
            if GLOB_CHARS.intersection(c):
                break
            literal.append(c)
        path = base.joinpath(*literal)
        if any(path == r or r in path.parents for r in roots):
            continue  # inside the workspace: its own walk covers it
        # a symlink on the way: what lies beyond is the target, masked whole
        here = base
        for c in literal:
            here = here / c
            if os.path.islink(here):
                target = Path(os.path.realpath(here))
                if target.exists() and not any(target == r or target in r.parents for r in roots):
                    direct.append(target)
                break
        else:
            whole = len(literal) == len(parts) or parts[len(literal):] == ["**"]
            if whole:  # the pattern names one path, or everything below one
                if os.path.lexists(path):
                    direct.append(path)
                # walked as well (hard links to the files in it), unless it is a huge tree: the
                # home directory, /, or a parent of the workspace
                if os.path.isdir(path) and path not in (home, Path("/")) and not any(path in r.parents for r in roots):
                    tops.append(path)
            elif os.path.isdir(path):
                tops.append(path)
    tops = sorted(set(tops), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for t in tops:
        if not any(k == t or k in t.parents for k in kept):
            kept.append(t)
    return kept, list(dict.fromkeys(direct))


def _stamp(p: Path) -> tuple:
    try:
        st = os.stat(p, follow_symlinks=False)
    except OSError:
        return (str(p),)
    return (str(p), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class DeniedView:
    # denied entries (a denied directory stands for its contents) and hard links to denied files;
    # those the walk listed are `Found`: with the identity of the directory they were listed in
    masks: list[Path]
    inodes: dict[tuple[int, int], Path]  # (st_dev, st_ino) of every denied regular file → one of its denied paths
    gap: str | None  # why the view may be missing paths (the walk was cut short), or None


class DeniedFiles:
    """The Read deny rules of one session over the shared walks of its roots."""

    def __init__(self, rules: "list[Rule]"):
        self.active = bool(rules)
        self._rules = list(rules)
        self._everything = any(r.specifier is None for r in rules)  # a bare `Read` deny
        self._matchers = [r.path_regex() for r in rules if r.specifier is not None]
        self._per_dir: dict[tuple[Path, str], tuple[Dir, tuple[int, ...]]] = {}
        self._lock = threading.Lock()
        self._last: tuple[tuple[Snapshot, ...], tuple, DeniedView] | None = None
        self._once: dict[tuple[int, int], Path] = {}  # every denied file seen, while it is in the trees

    def view(self, roots: list[Path], max_age: float) -> DeniedView:
        """What the rules cover now in the roots and in the places outside them that the rules
        name (walked as their own trees)."""
        tops, direct = _outside(self._rules, [Path(r) for r in roots]) if not self._everything else ([], [])
        snaps = tuple(shared(r).snapshot(max_age) for r in [*roots, *tops])
        stamps = tuple(_stamp(p) for p in direct)
        with self._lock:
            last = self._last
            # the same listings (a refresh that found nothing changed hands out the same dict)
            if (last is not None and len(last[0]) == len(snaps)
                    and all(a.dirs is b.dirs and a.complete == b.complete for a, b in zip(last[0], snaps))
                    and last[1] == stamps):
                return last[2]
            view = self._compute(snaps, direct)
            self._last = (snaps, stamps, view)
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

    def _compute(self, snaps: tuple[Snapshot, ...], direct: "list[Path]" = ()) -> DeniedView:
        masks: list[Path] = list(direct)
        files: list[tuple[Path, int, int]] = []  # denied regular files: (path, dev, listed inode)
        for p in direct:
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files.append((p, st.st_dev, st.st_ino))
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
                    files += [(_found(snap.path(rel, n), k, d), d.dev, ino)
                              for n, k, ino in zip(d.names, d.kinds, d.inos) if k == FILE]
                    continue
                open_dirs.append((snap, rel, d))
                for i in self._denied_in(snap.root, rel, d):
                    name, kind = d.names[i], d.kinds[i]
                    masks.append(found := _found(snap.path(rel, name), kind, d))
                    if kind == DIR:
                        inside.add(prefix + name)
                    elif kind == FILE:
                        files.append((found, d.dev, d.inos[i]))
        for key in [k for k in self._per_dir if k not in seen]:
            del self._per_dir[key]  # directories gone from the tree
        denied = set(masks)
        if all(_listed_inode_is_real(p, dev, ino) for p, dev, ino in files[:VERIFY_SAMPLE]):
            # A file once denied stays denied under any name while it is in the trees: a rule
            # names paths, and renaming the file (or a directory above it) must not lift it.
            inodes = {**self._once, **{(dev, ino): p for p, dev, ino in files}}
            numbers = {ino for _, ino in inodes}
            present: set[tuple[int, int]] = set()
            for snap, rel, d in open_dirs:
                if numbers.isdisjoint(d.inos):
                    continue
                for name, kind, ino in zip(d.names, d.kinds, d.inos):
                    if kind == FILE and (d.dev, ino) in inodes:
                        present.add((d.dev, ino))
                        p = snap.path(rel, name)
                        if p not in denied:
                            masks.append(_found(p, kind, d))
            present.update((dev, ino) for _, dev, ino in files)
            # gone from the trees: forgotten, so that a new file reusing the number is not denied
            inodes = {k: v for k, v in inodes.items() if k in present}
            if gaps:  # a walk cut short forgets nothing it did not reach
                inodes = {**self._once, **inodes}
            self._once = dict(list(inodes.items())[-MAX_ONCE:])
        else:
            inodes, links = _by_lstat(files, open_dirs, denied)
            masks += links
        return DeniedView(list(dict.fromkeys(masks)), inodes, "; ".join(gaps) or None)


def _found(p: Path, kind: str, d: Dir) -> Path:
    """`p`, listed in `d`, with the identity of that directory (`Found`): the masks are
    mounted by path a moment later, and a directory swapped in at `p`'s parent meanwhile must be
    told from the one the walk saw. A link's entry is covered at its target, elsewhere: no
    identity for that."""
    return p if kind == LINK else Found(p, found_in=(d.key[0], d.key[1]))


def _listed_inode_is_real(p: Path, dev: int, ino: int) -> bool:
    """Whether `p`'s inode number in stat is the one its directory's listing gave. Asked of
    the directory the walk listed (through one descriptor): a directory swapped in at `p`'s
    parent since (a command renaming directories) says nothing about the file system's
    numbers, and must not turn the inode tracking off."""
    where = getattr(p, "found_in", None)
    try:
        dfd = os.open(p.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return True  # gone since the walk: nothing to compare
    try:
        here = os.fstat(dfd)
        if where is not None and (here.st_dev, here.st_ino) != where:
            return True  # another directory there now: nothing to compare
        st = os.stat(p.name, dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return True
    finally:
        os.close(dfd)
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
                links.append(_found(p, kind, d))
    return inodes, links
