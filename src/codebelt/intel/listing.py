"""Which files of a workspace the index reads: ripgrep's listing (so .gitignore, .ignore and
hidden-file rules apply), narrowed to files a grammar reads and the caller's `include`, capped."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..errors import IntelError
from ..search import ripgrep
from .languages import language_for

LIST_TIMEOUT = 60.0


@dataclass
class Listing:
    files: dict[str, tuple[str, str]] = field(default_factory=dict)  # rel -> (abs, language)
    capped: bool = False  # more files were there than `max_files`
    errors: list[str] = field(default_factory=list)


class _Accept:
    def __init__(self, root: Path, include: Callable[[Path], bool] | None, max_files: int):
        self.root = root
        self.prefix = str(root).rstrip(os.sep) + os.sep
        self.include = include
        self.max_files = max_files
        self.listing = Listing()

    def __call__(self, rel: str) -> bool:
        """Consider one relative path; False once the cap is reached."""
        files = self.listing.files
        if len(files) >= self.max_files:
            self.listing.capped = True
            return False
        lang = language_for(rel)
        if lang is None or rel in files:
            return True
        path = self.prefix + rel
        if self.include is not None and not self.include(Path(path)):
            return True
        files[rel] = (path, lang)
        return True


class _Records(ripgrep.RecordReader):
    def __init__(self, accept: _Accept):
        super().__init__(sep=b"\0", max_record=8192)
        self.accept = accept

    def on_record(self, record: bytes, clipped: bool) -> bool:
        if clipped or not record:
            return True
        rel = os.fsdecode(record)
        if rel.startswith("./"):
            rel = rel[2:]
        return self.accept(rel)

    def reset(self) -> None:
        super().reset()
        self.accept.listing = Listing()


def list_with_ripgrep(root: Path, include: Callable[[Path], bool] | None, max_files: int,
                      rg: "str | ripgrep.Ripgrep | None" = None) -> Listing:
    accept = _Accept(root, include, max_files)
    consumer = _Records(accept)
    # sorted so that a capped listing is the same one each time
    result = ripgrep.run(["--files", "--null", "--no-messages", "--sort=path"], root, consumer,
                         rg=rg, timeout=LIST_TIMEOUT)
    listing = accept.listing
    if result.timed_out:
        raise IntelError(f"listing the files of {root} took longer than {LIST_TIMEOUT:.0f} s")
    if result.returncode == 2 and not listing.files and not result.stopped_early:
        raise IntelError(f"could not list the files of {root}: {'; '.join([e for e in result.errors if e][:3])}")
    listing.errors = [e for e in result.errors if e][:10]
    return listing


def list_from(root: Path, paths: Iterable[Path], include: Callable[[Path], bool] | None,
              max_files: int) -> Listing:
    """The same narrowing for a caller-supplied listing (paths absolute or relative to root);
    paths outside the root are dropped."""
    accept = _Accept(root, include, max_files)
    for p in paths:
        p = Path(p)
        if not p.is_absolute():
            p = root / p
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            continue
        if rel in ("", ".") or rel.startswith("../") or "/../" in f"/{rel}/":
            continue
        if not accept(rel):
            break
    return accept.listing
