"""Resource limits for sandboxed commands: no core dumps, a file-size cap, a process cap and a
memory cap.

The process cap is the one that matters for a fork bomb, and RLIMIT_NPROC cannot provide it
everywhere: it counts every process of the real UID machine-wide, and the kernel never enforces
it for root (INIT_USER). So the cap is a pids cgroup per session when a pids controller is
writable (cgroup v1 `pids` hierarchy, or v2 with `pids` delegated to our cgroup), and otherwise,
for non-root users, RLIMIT_NPROC set to "processes this user runs now + the cap". As root with no
writable pids cgroup there is no process cap; `ProcessCap.describe()` says so and the bwrap
backend's pid namespace still lets the runner kill the whole tree at once.

The memory cap is a memory cgroup per session (v1 `memory.limit_in_bytes`, with swap counted, or
v2 `memory.max` with no swap) when one is writable: the kernel then kills a command that passes
it, and the kill is counted (`oom_kills`) so the result can say why the command died. Without a
writable memory cgroup it falls back to RLIMIT_AS per process (allocations past it fail).

Everything `apply_in_child` does runs between fork and exec (a subprocess preexec_fn), so it is
prepared in the parent and only does plain syscalls in the child.
"""

from __future__ import annotations

import fcntl
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


def find_controller_parent(controller: str) -> tuple[Path | None, str, int]:
    """The cgroup directory under which a session cgroup with this controller can be made, why
    not, and the cgroup version (1 or 2)."""
    own = _own_cgroups()
    for mount, fstype, opts in _mountinfo():
        if fstype == "cgroup" and controller in opts.split(","):
            rel = next((p for c, p in own.items() if controller in c.split(",")), None)
            if rel is None:
                continue
            parent = Path(mount) / rel.lstrip("/")
            if os.access(parent, os.W_OK):
                return parent, f"cgroup v1 {controller} controller at {parent}", 1
            return None, f"the {controller} cgroup {parent} is not writable", 1
    for mount, fstype, _ in _mountinfo():
        if fstype != "cgroup2" or "" not in own:
            continue
        parent = Path(mount) / own[""].lstrip("/")
        try:
            delegated = controller in (parent / "cgroup.subtree_control").read_text().split()
        except OSError:
            continue
        if delegated and os.access(parent, os.W_OK):
            return parent, f"cgroup v2 {controller} controller at {parent}", 2
        return None, f"the {controller} controller is not delegated to the cgroup {parent}", 2
    return None, f"no {controller} cgroup controller is mounted", 0


def find_pids_parent() -> tuple[Path | None, str]:
    """The cgroup directory under which a session cgroup with pids.max can be made, and why not."""
    parent, why, _ = find_controller_parent("pids")
    return parent, why


class ProcessCap:
    """The session's process cap: a pids cgroup every sandboxed child joins, or RLIMIT_NPROC."""

    def __init__(self, limits: Limits, name: str):
        self.max = limits.processes
        self.cgroup: Path | None = None
        self._procs_fd: int | None = None
        self._lock_fd: int | None = None
        self.reason = "process limit off (sandbox.limits.processes is 0)"
        if self.max <= 0:
            return
        parent, why = find_pids_parent()
        if parent is not None:
            _remove_stale_groups(parent)
            group = parent / f"{name}-{os.getpid()}"
            try:
                self._lock_fd = own_group(group)
                (group / "pids.max").write_text(f"{self.max}\n")
                self._procs_fd = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
                self.cgroup = group
                self.reason = f"at most {self.max} processes (pids cgroup {group})"
                return
            except OSError as e:
                why = f"cannot create a pids cgroup under {parent}: {e.strerror}"
                self._lock_fd = _release(group, self._lock_fd)
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

    def close(self) -> None:
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        if self.cgroup is not None:
            self.kill_all()
            _remove_own(self.cgroup)
            self.cgroup = None
        self._lock_fd = _release(None, self._lock_fd)


class MemoryCap:
    """The session's memory cap: a memory cgroup every sandboxed child joins, or RLIMIT_AS."""

    def __init__(self, limits: Limits, name: str):
        self.mb = limits.effective_memory_mb
        self.cgroup: Path | None = None
        self.version = 0
        self._procs_fd: int | None = None
        self._lock_fd: int | None = None
        self.address_space: int | None = None  # RLIMIT_AS bytes when there is no cgroup
        if self.mb <= 0:
            self.reason = "memory limit off (sandbox.limits.memoryMB is 0)"
            return
        parent, why, version = find_controller_parent("memory")
        if parent is not None:
            _remove_stale_groups(parent)
            group = parent / f"{name}-{os.getpid()}"
            try:
                self._lock_fd = own_group(group)
                limit = str(self.mb * MB)
                if version == 1:
                    (group / "memory.limit_in_bytes").write_text(limit)
                    swap = group / "memory.memsw.limit_in_bytes"
                    if swap.exists():  # memory + swap: a command cannot escape into swap
                        swap.write_text(limit)
                else:
                    (group / "memory.max").write_text(limit)
                    swap = group / "memory.swap.max"
                    if swap.exists():
                        swap.write_text("0")
                self._procs_fd = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
                self.cgroup, self.version = group, version
                self.reason = f"at most {self.mb} MB of memory for the session's commands (memory cgroup {group})"
                return
            except OSError as e:
                why = f"cannot create a memory cgroup under {parent}: {e.strerror}"
                self._lock_fd = _release(group, self._lock_fd)
        self.address_space = self.mb * MB
        self.reason = f"at most {self.mb} MB of address space per process (RLIMIT_AS; {why})"

    def join_in_child(self) -> None:
        if self._procs_fd is not None:
            os.write(self._procs_fd, str(os.getpid()).encode())

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in the session cgroup for passing the cap."""
        if self.cgroup is None:
            return 0
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.cgroup / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def close(self) -> None:
        if self._procs_fd is not None:
            os.close(self._procs_fd)
            self._procs_fd = None
        if self.cgroup is not None:
            _remove_own(self.cgroup)
            self.cgroup = None
        self._lock_fd = _release(None, self._lock_fd)


# -- who owns a session cgroup ------------------------------------------------------------------
# A session cgroup is owned by the process that holds an exclusive flock on its directory for as
# long as it uses it (the lock goes with the process, however it ends). A pid in the group's
# name says nothing across pid namespaces — two codebelt processes in different containers see
# different pids, and a pid is reused — so a group is stale exactly when its lock can be taken.


def own_group(group: Path) -> int:
    """Create `group` (or take an existing one nobody owns) and lock it: the lock's descriptor,
    held until the group is removed. Raises OSError when another process owns it, or when a
    remover took the directory away between its creation and the lock."""
    try:
        group.mkdir()
    except FileExistsError:
        pass
    fd = os.open(group, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # locked what is still the group under that name (not a directory removed meanwhile)
        st, now = os.fstat(fd), os.stat(group)
        if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
            raise FileNotFoundError(2, "the cgroup was removed while it was being made", str(group))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _release(group: Path | None, fd: int | None) -> None:
    """Remove `group` (when given, empty, and locked by `fd`: never one another process owns)
    while still holding its lock, then let the lock go."""
    if group is not None and fd is not None:
        try:
            group.rmdir()
        except OSError:
            pass
    if fd is not None:
        os.close(fd)
    return None


def _remove_own(group: Path) -> None:
    for _ in range(50):  # the kernel frees a cgroup a moment after its last exit
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _remove_stale_groups(parent: Path) -> None:
    """Remove empty session cgroups whose owner is gone: those whose lock can be taken and
    whose owner pid (the name's last part) is not a live process here. The lock alone is not
    proof: a codebelt release from before the lock holds none on the group it is using (a pid
    alive here keeps it), and the pid alone is not either (another pid namespace's owner, a
    reused pid: the lock keeps those). An empty group left by an owner whose pid was reused
    stays until that pid ends — a leak of an empty directory, never a live session's group."""
    try:
        groups = list(parent.glob("codebelt-*"))
    except OSError:
        return
    for group in groups:
        owner = group.name.rsplit("-", 1)[-1]
        if not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        try:
            fd = os.open(group, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # owned by a live process, whatever its pid looks like from here
            continue
        _release(group, fd)  # fails harmlessly if processes are still inside


def rlimits(limits: Limits, nproc: int | None, address_space: int | None = None) -> list[tuple[int, tuple[int, int]]]:
    """The (resource, (soft, hard)) pairs to set in the child; never raises a hard limit."""
    out = []
    if address_space:
        out.append((resource.RLIMIT_AS, _capped(resource.RLIMIT_AS, address_space)))
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
