"""Reading one settings (or hook configuration) file, bounded.

A settings file is read when a session starts, before anything else can run, so it must never
hang or exhaust memory: a FIFO, `/dev/zero`, a directory or a multi-gigabyte file in its place
(a checkout may hold any of these, or a symlink to them) is refused with a sentence naming it.
Only regular files are read (opened without blocking, checked with fstat on the descriptor that
is read), at most MAX_BYTES of them.

Symlinks are followed: a file's provenance is where it was found (the workspace's
`.codebelt/settings.json` is a workspace file whatever it points at), never where it points.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ..errors import SettingsError

MAX_BYTES = 1 << 20  # far above any real settings file; small enough to read at every start


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path, label: str, limit: int = MAX_BYTES) -> bytes | None:
    """The file's bytes, or None if nothing is there (a dangling symlink counts as nothing).
    Raises SettingsError for anything but a regular file of at most `limit` bytes."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        # Looked at before it is opened: opening some devices has effects of its own (a tape
        # rewinds, a watchdog arms). The descriptor is checked again below.
        before = os.stat(path)
        if not stat.S_ISREG(before.st_mode):
            raise SettingsError(f"settings file {label} is {_kind(before.st_mode)}, not a regular file; "
                                "it was not read")
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise SettingsError(f"cannot read settings file {label}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SettingsError(f"settings file {label} is {_kind(st.st_mode)}, not a regular file; it was not read")
        if st.st_size > limit:
            raise SettingsError(f"settings file {label} is {st.st_size:,} bytes, over the {limit:,}-byte limit; "
                               "it was not read")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # the size may grow (or lie, as in /proc) between fstat and read
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise SettingsError(f"settings file {label} is over the {limit:,}-byte limit; it was not read")
        return b"".join(chunks)
    except BlockingIOError:
        raise SettingsError(f"settings file {label} could not be read without waiting; it was not read") from None
    except OSError as e:
        raise SettingsError(f"cannot read settings file {label}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def read_json(path: Path, label: str | None = None) -> dict[str, Any] | None:
    """A settings file as a JSON object, or None if there is none; SettingsError naming the file
    if it cannot be read safely or does not hold a JSON object."""
    label = label or str(path)
    raw = read_bytes(path, label)
    return None if raw is None else parse_json(raw, label)


def parse_json(raw: bytes, label: str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise SettingsError(f"settings file {label} is not UTF-8 text (byte {e.start}); settings files are JSON "
                            "in UTF-8") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise SettingsError(
            f"settings file {label} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except RecursionError:
        raise SettingsError(f"settings file {label} is nested too deeply to be settings") from None
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {label} must hold a JSON object")
    return data
