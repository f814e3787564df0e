"""The disk a session's command output may take, all commands together.

Every command's output is spooled to a file; a per-command cap stops one runaway `yes`, but ten
of them in the background still fill the disk. `OutputQuota` adds up the spool files a session
still holds (running commands, background tasks' outputs, outputs too large to show inline) and
tells a command's watcher when the total is over the cap. Only a command whose output grew is
stopped: a quiet one is never killed for another's output.
"""

from __future__ import annotations

import threading
from typing import Hashable


class OutputQuota:
    def __init__(self, limit: int | None):
        self.limit = limit
        self._sizes: dict[Hashable, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        with self._lock:
            return self._total

    def update(self, key: Hashable, size: int) -> bool:
        """Record the size of `key`'s spool; True when it grew and the total is over the cap."""
        with self._lock:
            before = self._sizes.get(key, 0)
            self._sizes[key] = size
            self._total += size - before
            return self.limit is not None and size > before and self._total > self.limit

    def release(self, key: Hashable) -> None:
        """`key`'s spool file was deleted."""
        with self._lock:
            self._total -= self._sizes.pop(key, 0)
