"""Resource limits for sandboxed commands: no core dumps, a file-size cap, a process cap.

The process cap is the one that matters for a fork bomb, and RLIMIT_NPROC cannot provide it
everywhere: it counts every process of the real UID machine-wide, and the kernel never enforces
it for root (INIT_USER). So the cap is a pids cgroup per session when a pids controller is
writable (cgroup v1 `pids` hierarchy, or v2 with `pids` delegated to our cgroup), and otherwise,
for non-root users, RLIMIT_NPROC set to "processes this user runs now + the cap". As root with no
writable pids cgroup there is no process cap; `ProcessCap.describe()` says so and the bwrap
backend's pid namespace still lets the runner kill the whole tree at once.

Everything `apply_in_child` does runs between fork and exec (a subprocess preexec_fn), so it is
prepared in the parent and only does plain syscalls in the child.
"""

from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path

from .config import Limits

MB = 1024 * 1024


def _mountinfo() -> list[tuple[str, str, str]]:
    """(mount point, fs type, super options) for every mount this process sees."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) >= 5 and len(rfields) >= 3:
            out.append((fields[4].replace("\\040", " "), rfields[0], rfields[2]))
    return out


def _own_cgroups() -> dict[str, str]:
    """Controller list ('' for v2) → this process's cgroup path, from /proc/self/cgroup."""
    out = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            out[controllers] = path
    except (OSError, ValueError):
        pass
    return out


def find_pids_parent() -> tuple[Path | None, str]:
    """The cgroup directory under which a session cgroup with pids.max can be made, and why not."""
    own = _own_cgroups()
    for mount, fstype, opts in _mountinfo():
        if fstype == "cgroup" and "pids" in opts.split(","):
            rel = next((p for c, p in own.items() if "pids" in c.split(",")), None)
            if rel is None:
                continue
            parent = Path(mount) / rel.lstrip("/")
            if os.access(parent, os.W_OK):
                return parent, f"cgroup v1 pids controller at {parent}"
            return None, f"the pids cgroup {parent} is not writable"
    for mount, fstype, _ in _mountinfo():
        if fstype != "cgroup2" or "" not in own:
            continue
        parent = Path(mount) / own[""].lstrip("/")
        try:
            delegated = "pids" in (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if delegated and os.access(parent, os.W_OK):
            return parent, f"cgroup v2 pids controller at {parent}"
        return None, f"the pids controller is not delegated to the cgroup {parent}"
    return None, "no pids cgroup controller is mounted"


class ProcessCap:
    """The session's process cap: a pids cgroup every sandboxed child joins, or RLIMIT_NPROC."""

    def __init__(self, limits: Limits, name: str):
        self.max = limits.processes
        self.cgroup: Path | None = None
        self._procs_fd: int | None = None
        self.reason = "process limit off (sandbox.limits.processes is 0)"
        if self.max <= 0:
            return
        parent, why = find_pids_parent()
        if parent is not None:
            _remove_stale_groups(parent)
            try:
                group = parent / f"{name}-{os.getpid()}"
                group.mkdir(exist_ok=True)
                (group / "pids.max").write_text(f"{self.max}\n")
                self._procs_fd = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
                self.cgroup = group
                self.reason = f"at most {self.max} processes (pids cgroup {group})"
                return
            except OSError as e:
                why = f"cannot create a pids cgroup under {parent}: {e.strerror}"
                self._remove_group(parent / f"{name}-{os.getpid()}")
        if os.getuid() != 0:
            self.reason = f"at most {self.max} more processes of this user (RLIMIT_NPROC; {why})"
        else:
            self.reason = (
                f"no process limit: {why}, and RLIMIT_NPROC is not enforced for root "
                "(only the timeout and, with bwrap, the pid namespace end a fork bomb)"
            )

    def nproc_limit(self) -> int | None:
        """RLIMIT_NPROC for the next child (non-root without a cgroup), computed in the parent."""
        if self.cgroup is not None or self.max <= 0 or os.getuid() == 0:
            return None
        uid = os.getuid()
        count = 0
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if entry.stat(follow_symlinks=False).st_uid == uid:
                        count += 1
                except OSError:
                    pass
        return count + self.max

    def join_in_child(self) -> None:
        """Move the calling (child) process into the session cgroup. Runs after fork."""
        if self._procs_fd is not None:
            os.write(self._procs_fd, str(os.getpid()).encode())

    def pids(self) -> list[int]:
        if self.cgroup is None:
            return []
        try:
            return [int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process left in the cgroup (repeating: a fork bomb keeps forking)."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)

    @staticmethod
    def _remove_group(group: Path) -> None:
        try:
            group.rmdir()
        except OSError:
            pass

    def close(self) -> None:
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        if self.cgroup is not None:
            self.kill_all()
            for _ in range(50):  # the kernel frees a cgroup a moment after its last exit
                try:
                    self.cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
            self.cgroup = None


def _remove_stale_groups(parent: Path) -> None:
    """Remove empty session cgroups left by codebelt processes that died without closing."""
    try:
        groups = list(parent.glob("codebelt-*-*"))
    except OSError:
        return
    for group in groups:
        owner = group.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            ProcessCap._remove_group(group)  # fails harmlessly if processes are still inside


def rlimits(limits: Limits, nproc: int | None) -> list[tuple[int, tuple[int, int]]]:
    """The (resource, (soft, hard)) pairs to set in the child; never raises a hard limit."""
    out = []
    if not limits.core_dumps:
        out.append((resource.RLIMIT_CORE, (0, 0)))
    if limits.file_size_mb > 0:
        out.append((resource.RLIMIT_FSIZE, _capped(resource.RLIMIT_FSIZE, limits.file_size_mb * MB)))
    if nproc is not None:
        out.append((resource.RLIMIT_NPROC, _capped(resource.RLIMIT_NPROC, nproc)))
    return out


def _capped(res: int, value: int) -> tuple[int, int]:
    _, hard = resource.getrlimit(res)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    return value, value


def apply_rlimits(pairs: list[tuple[int, tuple[int, int]]]) -> None:
    """Child side: set the prepared limits."""
    for res, pair in pairs:
        resource.setrlimit(res, pair)
