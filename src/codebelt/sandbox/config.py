"""What a sandbox needs to know: the writable roots, the temp dir, and the sandbox settings.

The backends (bwrap.py, landlock.py) and the limits take a `SandboxConfig`, so they can be
tested and benchmarked with plain directories.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SettingsError

MODES = ("auto", "bwrap", "landlock", "off", "required")
DEFAULT_MODE = "auto"


@dataclass(frozen=True)
class Limits:
    """Resource limits applied in every sandboxed child (settings `sandbox.limits.*`).

    processes: most processes the session's sandboxed commands may run at once (pids cgroup;
      RLIMIT_NPROC on top of the user's current count when not root). 0 disables it.
    file_size_mb: largest file a command may write (RLIMIT_FSIZE). 0 disables it.
    core_dumps: False sets RLIMIT_CORE to 0.
    memory_mb: most memory the session's commands use together (memory cgroup; else RLIMIT_AS
      per process). None: half of the machine's RAM. 0 disables it.
    """

    processes: int = 512
    file_size_mb: int = 8192
    core_dumps: bool = False
    memory_mb: int | None = None

    @property
    def effective_memory_mb(self) -> int:
        if self.memory_mb is not None:
            return self.memory_mb
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return 0
        return max(256, total // 2 // (1024 * 1024))

    @classmethod
    def from_settings(cls, raw: Any) -> "Limits":
        raw = raw or {}
        if not isinstance(raw, dict):
            raise SettingsError("sandbox.limits must be an object")
        try:
            processes = int(raw.get("processes", cls.processes))
            file_size_mb = int(raw.get("fileSizeMB", cls.file_size_mb))
            memory = raw.get("memoryMB")
            memory_mb = None if memory is None else int(memory)
        except (TypeError, ValueError):
            raise SettingsError(
                "sandbox.limits.processes, fileSizeMB and memoryMB must be integers"
            ) from None
        if processes < 0 or file_size_mb < 0 or (memory_mb is not None and memory_mb < 0):
            raise SettingsError("sandbox.limits values must be >= 0 (0 turns a limit off)")
        return cls(processes, file_size_mb, bool(raw.get("coreDumps", cls.core_dumps)), memory_mb)


def default_name() -> str:
    import uuid

    return f"codebelt-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class SandboxConfig:
    """Everything a backend needs. Paths are absolute and resolved."""

    writable_roots: tuple[Path, ...]  # the workspace root first, then additional directories
    temp_dir: Path | None  # the per-session TMPDIR (writable; exported as TMPDIR)
    mode: str = DEFAULT_MODE
    network: bool = False  # every connection (no proxy, no namespace of its own)
    # `sandbox.network` is an object: commands reach the allowed names through codebelt's proxy
    # (only bwrap's network namespace can hold them to it; under Landlock the network stays off)
    domains: bool = False
    limits: Limits = field(default_factory=Limits)
    # names the session's cgroups: unique unless given (a cgroup is owned by one sandbox; two
    # sandboxes of one process sharing a default name would leave the second without caps)
    name: str = field(default_factory=lambda: default_name())
    allow_unix_sockets: bool = False  # with the network off, Unix sockets may still be created
    jail: bool = True  # run commands judged read-only in the read-only jail (whatever the mode)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(
                f"unknown sandbox.mode {self.mode!r}; expected one of {', '.join(MODES)}"
            )

    @property
    def writable(self) -> tuple[Path, ...]:
        """Every directory a sandboxed command may write below."""
        return self.writable_roots + ((self.temp_dir,) if self.temp_dir else ())

    @classmethod
    def from_settings(cls, sandbox: Any, roots: tuple[Path, ...] | list[Path], temp_dir: Path | None,
                      name: str | None = None) -> "SandboxConfig":
        """From the `sandbox` settings section (`settings.schema.SandboxSettings`)."""
        lim = sandbox.limits
        return cls(
            writable_roots=tuple(Path(os.path.realpath(r)) for r in roots),
            temp_dir=Path(os.path.realpath(temp_dir)) if temp_dir else None,
            mode=sandbox.mode,
            network=sandbox.network is True,
            domains=not isinstance(sandbox.network, bool),
            limits=Limits(lim.processes, lim.file_size_mb, lim.core_dumps, lim.memory_mb),
            name=name or default_name(),
            allow_unix_sockets=sandbox.allow_unix_sockets,
            jail=sandbox.jail,
        )
