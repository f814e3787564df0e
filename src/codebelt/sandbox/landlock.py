"""Landlock through ctypes: a child that may read everything but write only where allowed.

Design: the ruleset is built once, in the parent (opening each allowed directory with O_PATH and
adding a path-beneath rule), and kept open as a close-on-exec fd. The child, between fork and
exec, only makes three plain syscalls: prctl(PR_SET_NO_NEW_PRIVS), landlock_restrict_self(fd)
— the fd is inherited across fork and closed by exec — and, when running as root,
prctl(PR_CAPBSET_DROP) for every capability so that the command exec'd as uid 0 gets no
capabilities (otherwise root could bypass file permissions, signal any process or load modules).

What it controls (by ABI version, which `abi_version()` reports):
  1+ file writes, creation, removal (reads are not handled: allowed everywhere)
  2+ REFER (renames/links across directories; only within the writable trees)
  3+ TRUNCATE
  4+ TCP connect and bind: denied when the network is off (UDP, e.g. DNS, is not covered)
  6+ scopes: signals to processes outside the sandbox are denied; abstract unix sockets too
     when the network is off.
What it cannot do: carve a read-only hole inside a writable tree (rules only add rights), so the
protected paths inside the workspace (.git/hooks, .codebelt …) stay writable under Landlock.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import stat
from dataclasses import dataclass
from pathlib import Path

# Syscall numbers are the same on x86_64 and aarch64 (and every arch using the generic table).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
SUPPORTED_MACHINES = ("x86_64", "amd64", "aarch64", "arm64")

CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24

# Filesystem access rights.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

# Every right that changes the filesystem; reads and execution are left unhandled (allowed).
WRITE_V1 = (
    FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
    | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM
)
# What a file (not a directory) rule may grant.
FILE_RIGHTS = FS_WRITE_FILE | FS_TRUNCATE
# Handled only in the read-only jail, where reading is limited to what the rules grant.
READ_RIGHTS = FS_READ_FILE | FS_READ_DIR | FS_EXECUTE

# Devices any command may write to, like a normal shell. Not /dev/shm: it is shared with every
# process on the host (and survives the session), so a command could leave things there for
# others to pick up; POSIX shared memory and named semaphores fail under Landlock (bwrap gives
# each command a private one).
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
WRITABLE_DEVICE_DIRS = ("/dev/pts",)


class LandlockError(OSError):
    """Landlock is missing, disabled, or a ruleset could not be built."""


@dataclass(frozen=True)
class Grant:
    """Read access beneath `path` in a ruleset that handles reading (the read-only jail).

    list_only: only listing directories (a directory whose subtree holds a masked path: its
      entries are granted one by one, the masked one not, and a rule on the directory itself
      can only let it be listed — a rule covers everything beneath it).
    follow: open `path` through symlinks (system paths); False for entries found inside a
      workspace, where a symlink must not turn into a grant on its target.
    """

    path: Path
    list_only: bool = False
    follow: bool = True


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise LandlockError(err, f"{what}: {os.strerror(err)}")
    return ret


def abi_version() -> tuple[int, str]:
    """(ABI version, reason). Version 0 means Landlock cannot be used; the reason says why."""
    if platform.system() != "Linux":
        return 0, f"Landlock is Linux-only (this is {platform.system()})"
    if platform.machine().lower() not in SUPPORTED_MACHINES:
        return 0, f"Landlock syscall numbers are not known for {platform.machine()}"
    libc = _syscall()
    ret = libc.syscall(
        ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
        ctypes.c_uint32(CREATE_RULESET_VERSION),
    )
    if ret >= 0:
        return int(ret), f"Landlock ABI {ret}"
    err = ctypes.get_errno()
    if err == errno.ENOSYS:
        return 0, f"the kernel ({platform.release()}) has no Landlock (needs Linux >= 5.13)"
    if err == errno.EOPNOTSUPP:
        return 0, "Landlock is built into the kernel but disabled (add landlock to the lsm= boot option)"
    return 0, f"Landlock is unavailable: {os.strerror(err)}"


def _fs_rights(abi: int) -> int:
    rights = WRITE_V1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


class Ruleset:
    """A built Landlock ruleset (an open fd) that children apply with `restrict_in_child`."""

    def __init__(self, writable: list[Path], network: bool, abi: int | None = None,
                 readable: "list[Path | Grant] | None" = None, devices: bool = True,
                 masked_reads: "list[Grant] | None" = None):
        """`readable`: None leaves reads unhandled (allowed everywhere); a list handles reading
        and executing too and grants them beneath these paths only (the read-only jail).
        `devices`: grant writing /dev/null and the other harmless devices (a helper that needs
        no device gets none). `masked_reads`: the write sandbox with paths it may not read —
        reading is handled and granted by these grants (everything around the masked paths),
        and the writable trees get write rights only (a rule covers all beneath it, so a read
        right there would cover the masked files too)."""
        if abi is None:
            abi, why = abi_version()
            if abi <= 0:
                raise LandlockError(errno.EOPNOTSUPP, why)
        self.abi = abi
        self.network = network
        handled_fs = _fs_rights(abi)
        write_rights = handled_fs
        if readable is not None or masked_reads is not None:
            handled_fs |= READ_RIGHTS
        attr = _RulesetAttr(handled_fs, 0, 0)
        size = 8
        if abi >= 4:
            size = 16
            if not network:
                attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP  # no rules: all denied
        if abi >= 6:
            size = 24
            attr.scoped = SCOPE_SIGNAL | (0 if network else SCOPE_ABSTRACT_UNIX_SOCKET)
        libc = _syscall()
        self.fd: int | None = _check(
            libc.syscall(
                ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                ctypes.c_uint32(0),
            ),
            "landlock_create_ruleset",
        )
        os.set_inheritable(self.fd, False)
        self.rules: list[str] = []
        try:
            for d in writable:
                self._allow(d, write_rights if masked_reads is not None else handled_fs, must_exist=True)
            if readable is None:
                for d in WRITABLE_DEVICE_DIRS:
                    self._allow(Path(d), handled_fs & ~FS_REFER & ~FS_MAKE_CHAR & ~FS_MAKE_BLOCK)
                for g in masked_reads or ():
                    self._allow(g.path, FS_READ_DIR if g.list_only else READ_RIGHTS, follow=g.follow)
            else:
                for g in readable:
                    g = g if isinstance(g, Grant) else Grant(g)
                    self._allow(g.path, FS_READ_DIR if g.list_only else READ_RIGHTS, follow=g.follow)
            for dev in WRITABLE_DEVICES if devices else ():
                if readable is not None and dev in ("/dev/tty", "/dev/ptmx"):
                    continue  # the jail has no terminal: nothing of the host's ttys
                self._allow(Path(dev), handled_fs & (FILE_RIGHTS | FS_READ_FILE))
        except BaseException:
            self.close()
            raise
        self._cap_last = _cap_last_cap() if os.geteuid() == 0 else -1
        # Arguments for the child, built here so the child only calls into libc.
        self._restrict_args = (ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_long(self.fd), ctypes.c_long(0))

    def _allow(self, path: Path, rights: int, must_exist: bool = False, follow: bool = True) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
        except OSError as e:
            if must_exist:
                raise LandlockError(e.errno, f"cannot open {path} for a Landlock rule: {e.strerror}")
            return  # an optional device that this machine does not have
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                return  # reached through its target, which has (or lacks) a rule of its own
            if not stat.S_ISDIR(mode):  # a file rule takes file rights only
                rights &= FILE_RIGHTS | FS_READ_FILE | FS_EXECUTE
            attr = _PathBeneathAttr(rights, fd)
            _check(
                _syscall().syscall(
                    ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(self.fd), ctypes.c_int(RULE_PATH_BENEATH),
                    ctypes.byref(attr), ctypes.c_uint32(0),
                ),
                f"landlock_add_rule({path})",
            )
            self.rules.append(str(path))
        finally:
            os.close(fd)

    def restrict_in_child(self) -> None:
        """Child side, after fork and before exec: no new privileges, no capabilities, the ruleset.

        Uses only objects prepared in the parent; raises (failing the spawn) if anything fails.
        """
        _restrict_in_child(self._cap_last, self._restrict_args)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class SignalScope:
    """A ruleset that handles nothing but signals (ABI 6+): a process restricted by it may signal
    only the processes of its own Landlock domain and of the domains nested in it (those its
    descendants enter by restricting themselves further), and none outside may be signalled or
    traced by those nested ones. Each restriction starts a domain of its own: two processes
    restricted by the same ruleset cannot signal each other, nor their descendants."""

    def __init__(self):
        abi, why = abi_version()
        if abi < 6:
            raise LandlockError(errno.EOPNOTSUPP, why if abi <= 0 else f"Landlock ABI {abi} has no signal scoping (needs 6)")
        attr = _RulesetAttr(0, 0, SCOPE_SIGNAL)
        self.fd: int | None = _check(
            _syscall().syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(24),
                               ctypes.c_uint32(0)),
            "landlock_create_ruleset",
        )
        os.set_inheritable(self.fd, False)
        self._cap_last = _cap_last_cap() if os.geteuid() == 0 else -1
        self._restrict_args = (ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_long(self.fd), ctypes.c_long(0))

    def restrict_in_child(self) -> None:
        """Child side, after fork: no new privileges, no capabilities, a domain of its own."""
        _restrict_in_child(self._cap_last, self._restrict_args)


def _restrict_in_child(cap_last: int, restrict_args: tuple) -> None:
    libc = _libc
    for cap in range(cap_last + 1):  # as root: exec must not hand capabilities back
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(*restrict_args) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")


def _cap_last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40
