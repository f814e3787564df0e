"""Which directories a baseline leaves out: large trees a build or an installer makes again.

A directory is left out when its name (or its path below the root, for a pattern with a `/`)
matches a pattern and git tracks nothing in it: `build/` holding sources a repository tracks is
kept like any other directory, `node_modules/` that `.gitignore` leaves out is not. What a
command changes inside a left-out tree is still seen (its directories are watched) and said —
"not kept, excluded", with how many paths — but its contents are neither read nor stored.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Callable, Iterable

class Exclusions:
    def __init__(self, patterns: Iterable[str], tracked: Callable[[str], bool] = lambda rel: False):
        names, paths = [], []
        for p in patterns:
            p = p.strip().strip("/")
            if p:
                (paths if "/" in p else names).append(fnmatch.translate(p))
        self._name = re.compile("|".join(names)) if names else None
        self._path = re.compile("|".join(paths)) if paths else None
        self.tracked = tracked  # a directory's path → whether git tracks a file under it

    def __bool__(self) -> bool:
        return self._name is not None or self._path is not None

    def matches(self, path: str, rel: str) -> bool:
        """Whether the directory `path` (`rel` below its root) is left out."""
        name = rel.rpartition("/")[2]
        hit = (self._name is not None and self._name.match(name)) or (self._path is not None and self._path.match(rel))
        return bool(hit) and not self.tracked(path)
