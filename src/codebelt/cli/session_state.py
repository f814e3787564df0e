"""The CLI's persistent session: what `codebelt call` keeps between processes, so a Read in one
call lets an Edit in the next one work, and a `cd` carries over — as in an agent's session.

Kept per workspace root and session name in the user's state directory (0600 files in a 0700
directory): the session id (one audit session, however many calls), the file read-state (what
was read, when, its hash — stale-read checks still apply against the file as it is now) and the
Bash working directory. Background tasks do not survive a process and are not kept.

What results point to — a large command output's file, an evicted result — is kept beside it
(`NAME.results/`, one subdirectory per call), so the next call can Read it (without asking: the
session's results are its own). Bounded: subdirectories older than a week go, then the oldest
until the whole is under 1 GB or 200 calls; `--new-session` removes them all.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from . import UsageError

NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_BYTES = 16 << 20  # a state file past this is ignored (and rewritten) rather than loaded
MAX_FILES = 10_000  # records kept per session: the most recent ones
RESULTS_MAX_AGE_S = 7 * 24 * 3600
RESULTS_MAX_BYTES = 1 << 30
RESULTS_MAX_CALLS = 200


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "codebelt" / "cli"


class SessionState:
    def __init__(self, root: Path, name: str):
        if not NAME.match(name) or name.startswith("."):
            raise UsageError(f"--session {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
        key = hashlib.sha256(str(Path(os.path.realpath(root))).encode()).hexdigest()[:16]
        self.dir = state_dir() / key
        self.path = self.dir / f"{name}.json"
        self.results = self.dir / f"{name}.results"
        self.name = name

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict[str, Any]:
        from ..errors import SettingsError
        from ..settings.reading import read_bytes

        try:  # bounded: a FIFO or /dev/zero in its place must not hang or fill memory
            raw = read_bytes(self.path, str(self.path), MAX_BYTES)
            data = json.loads(raw.decode("utf-8")) if raw is not None else {}
        except (SettingsError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def clear(self) -> None:
        with self._locked():
            self.path.unlink(missing_ok=True)
            shutil.rmtree(self.results, ignore_errors=True)

    def session_id(self) -> str:
        """The CLI session's id, made on its first call: every call of it is one audit session."""
        with self._locked():
            data = self._read()
            sid = data.get("id")
            if isinstance(sid, str) and re.fullmatch(r"[0-9a-f]{12}", sid):
                return sid
            data["id"] = sid = uuid.uuid4().hex[:12]
            self._write(data)
            return sid

    def prune_results(self) -> None:
        """Keep the results directory bounded: by age, then oldest first by size and count."""
        with self._locked():
            try:
                calls = [e for e in os.scandir(self.results) if e.is_dir(follow_symlinks=False)]
            except OSError:
                return
            now = time.time()
            aged: list[tuple[float, int, str]] = []
            for e in calls:
                try:
                    mtime = e.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if now - mtime > RESULTS_MAX_AGE_S:
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    aged.append((mtime, _size(e.path), e.path))
            aged.sort()
            total = sum(size for _, size, _ in aged)
            while aged and (total > RESULTS_MAX_BYTES or len(aged) > RESULTS_MAX_CALLS):
                _, size, path = aged.pop(0)
                shutil.rmtree(path, ignore_errors=True)
                total -= size

    def _write(self, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".state-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load_into(self, session: Any) -> None:
        from ..tools._services import file_states, shell_cwd

        with self._locked():
            data = self._read()
        files = data.get("files")
        if isinstance(files, dict):
            session.service(file_states).restore(files)
        cwd = data.get("cwd")
        if isinstance(cwd, str):
            session.service(shell_cwd).restore(cwd)

    def save_from(self, session: Any) -> None:
        from ..tools._services import file_states, shell_cwd

        ours = session.service(file_states).snapshot()
        cwd, _ = session.service(shell_cwd).current(consume=False)
        with self._locked():
            data = self._read()
            files = data.get("files") if isinstance(data.get("files"), dict) else {}
            files.update(ours)  # another process's records stay; ours are newer
            if len(files) > MAX_FILES:
                files = dict(sorted(files.items(), key=lambda kv: kv[1].get("mtime_ns", 0))[-MAX_FILES:])
            out = {"root": str(session.workspace.root), "cwd": str(cwd), "files": files}
            if isinstance(data.get("id"), str):
                out["id"] = data["id"]
            self._write(out)


def _size(path: str, limit: int = 100_000) -> int:
    """Bytes of the files below `path` (at most `limit` entries looked at)."""
    total = 0
    for n, (folder, _, names) in enumerate(os.walk(path)):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
        if n > limit:
            break
    return total
