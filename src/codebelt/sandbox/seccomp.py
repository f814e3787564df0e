"""A seccomp filter that decides which socket families a command may create.

Why: a network namespace (bwrap) cuts TCP/UDP off, but a Unix socket with a path (docker.sock,
ssh-agent, git's credential cache) is reached through the filesystem, which the namespace does
not separate; Landlock (before it has Unix-socket rules) only controls TCP, so UDP, MPTCP
(`socket(AF_INET, SOCK_STREAM, 262)`) and raw sockets pass it. Refusing the `socket` syscall by
family closes every one of those at once: a program cannot connect anywhere without a socket.

The filter is a small classic-BPF program built here and installed with prctl in the child,
after fork and before exec (it is inherited by everything the command starts):
- a system call from another architecture's table (i386 on x86_64, x32) fails with ENOSYS, so
  no second syscall table can reach `socket` by another number;
- `socket(domain, …)` with a domain outside the allowed set fails with EACCES, and a netlink
  socket only for NETLINK_ROUTE (what getaddrinfo and getifaddrs ask the kernel): other netlink
  protocols reach other processes (NETLINK_USERSOCK carries datagrams between any two processes
  of the host) or list the host's sockets (sock_diag);
- `io_uring_setup` fails with ENOSYS (io_uring can create and connect sockets without the
  `socket` syscall, so the filter would otherwise not see them);
- in the read-only jail, calls that change a file's mode, owner, times or extended attributes
  fail with EPERM (Landlock does not cover them), and so do System V IPC, POSIX message queues
  and the kernel keyrings: each is a channel to processes outside the jail that no file right
  or socket family controls (a host process's message queue or shared memory segment; the
  user's keyring, where Kerberos and other tools keep credentials);
- for a helper that needs no process of its own (ripgrep: threads only), `fork`, `vfork` and
  a `clone` without CLONE_THREAD fail with EPERM and `clone3` (whose flags a filter cannot
  read) with ENOSYS, so that the C library falls back to `clone`: nothing it could start
  outlives it where no pid namespace ends everything with it (Landlock);
- everything else is allowed. `socketpair` stays allowed: it makes two connected ends and no
  address, which is how programs talk to their own children (node's IPC, pipes between workers).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
NETLINK_ROUTE = 0

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# classic BPF opcodes
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
# args[N] low word at 16 + 8 N (little-endian machines only); the kernel reads socket()'s int
# arguments from the low word too, so high bits set by a caller cannot slip past the check
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG2 = 0, 4, 16, 32

# (audit arch, socket, io_uring_setup, first number of a foreign ABI sharing the arch or None)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 425, 0x40000000),  # x32 numbers have bit 30 set
    "amd64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, None),
    "arm64": (0xC00000B7, 198, 425, None),
}
# Calls that change a file's metadata (mode, owner, times, extended attributes). Landlock does
# not control them, so the read-only jail refuses them here (under bwrap the read-only mounts
# already do). aarch64 has only the *at / f* forms.
_METADATA = {
    "x86_64": (90, 91, 92, 93, 94, 132, 188, 189, 190, 197, 198, 199, 235, 260, 261, 268, 280, 452, 463, 466),
    "aarch64": (5, 6, 7, 14, 15, 16, 52, 53, 54, 55, 88, 452, 463, 466),
}
_METADATA["amd64"], _METADATA["arm64"] = _METADATA["x86_64"], _METADATA["aarch64"]
# System V IPC, POSIX message queues and keyrings: shared with processes outside the jail under
# Landlock (no IPC namespace), and the user's keyring even under bwrap when it runs as root.
_IPC = {
    "x86_64": (29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220, 240, 241, 242, 243, 244, 245, 248, 249, 250),
    "aarch64": (180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197,
                217, 218, 219),
}
_IPC["amd64"], _IPC["arm64"] = _IPC["x86_64"], _IPC["aarch64"]
# (clone, fork/vfork, clone3) — aarch64 has neither fork nor vfork
_PROCESSES = {"x86_64": (56, (57, 58), 435), "aarch64": (220, (), 435)}
_PROCESSES["amd64"], _PROCESSES["arm64"] = _PROCESSES["x86_64"], _PROCESSES["aarch64"]
CLONE_THREAD = 0x00010000
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K


class SeccompUnavailable(OSError):
    """This machine's architecture is not one the filter knows."""


def supported() -> tuple[bool, str]:
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in _ARCHES:
        return False, f"no seccomp socket filter for {platform.system()}/{platform.machine()}"
    return True, "seccomp socket filter"


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(allowed_families: frozenset[int] | set[int], read_only: bool = False,
            no_processes: bool = False) -> bytes:
    """The BPF program (as the bytes of a sock_filter array) for this machine. `read_only`: also
    refuse calls that change file metadata and the IPC channels above (EPERM). `no_processes`:
    threads only, no new process."""
    machine = platform.machine().lower()
    if machine not in _ARCHES:
        raise SeccompUnavailable(errno.ENOSYS, f"no seccomp filter for {platform.machine()}")
    arch, nr_socket, nr_uring, foreign = _ARCHES[machine]
    families = sorted(allowed_families)
    denied = (*_METADATA[machine], *_IPC[machine]) if read_only else ()
    # Laid out in order, as (kind, value) steps; jumps are resolved once every position is known.
    steps: list[tuple[str, int]] = [("ld", _OFF_ARCH), ("arch", arch), ("ld", _OFF_NR)]
    if foreign is not None:
        steps.append(("foreign", foreign))
    steps.append(("enosys_if", nr_uring))
    steps += [("eperm_if", nr) for nr in denied]
    if no_processes:
        nr_clone, forks, nr_clone3 = _PROCESSES[machine]
        steps += [("eperm_if", nr) for nr in forks] + [("enosys_if", nr_clone3), ("clone", nr_clone)]
    steps += [("socket", nr_socket), ("ret", RET_ALLOW), ("ld", _OFF_ARG0)]
    steps += [("family", f) for f in families if f != AF_NETLINK]
    if AF_NETLINK in families:
        steps += [("netlink", AF_NETLINK), ("ret", RET_ERRNO | errno.EACCES), ("ld", _OFF_ARG2),
                  ("family", NETLINK_ROUTE)]
    steps += [("ret", RET_ERRNO | errno.EACCES)]
    if no_processes:  # clone: a thread (CLONE_THREAD in its flags) or nothing
        steps += [("ld", _OFF_ARG0), ("thread", CLONE_THREAD)]
    at = {"allow": len(steps), "enosys": len(steps) + 1, "eperm": len(steps) + 2}
    clone_check = next((i for i, (kind, _) in enumerate(steps) if kind == "thread"), 0) - 1
    netlink_check = next((i + 2 for i, (kind, _) in enumerate(steps) if kind == "netlink"), 0)
    check = next(i for i, (kind, _) in enumerate(steps) if kind == "socket") + 2  # the arg load
    out: list[bytes] = []
    for i, (kind, k) in enumerate(steps):
        nxt = i + 1
        if kind == "ld":
            out.append(_insn(_LD_W_ABS, 0, 0, k))
        elif kind == "arch":
            out.append(_insn(_JEQ_K, 0, at["enosys"] - nxt, k))
        elif kind == "foreign":
            out.append(_insn(_JGE_K, at["enosys"] - nxt, 0, k))
        elif kind == "enosys_if":
            out.append(_insn(_JEQ_K, at["enosys"] - nxt, 0, k))
        elif kind == "eperm_if":
            out.append(_insn(_JEQ_K, at["eperm"] - nxt, 0, k))
        elif kind == "socket":
            out.append(_insn(_JEQ_K, check - nxt, 0, k))
        elif kind == "family":
            out.append(_insn(_JEQ_K, at["allow"] - nxt, 0, k))
        elif kind == "netlink":  # netlink: go on to its protocol check (after the refusal)
            out.append(_insn(_JEQ_K, netlink_check - nxt, 0, k))
        elif kind == "clone":
            out.append(_insn(_JEQ_K, clone_check - nxt, 0, k))
        elif kind == "thread":
            out.append(_insn(_JSET_K, at["allow"] - nxt, at["eperm"] - nxt, k))
        else:
            out.append(_insn(_RET_K, 0, 0, k))
    out += [_insn(_RET_K, 0, 0, RET_ALLOW), _insn(_RET_K, 0, 0, RET_ERRNO | errno.ENOSYS),
            _insn(_RET_K, 0, 0, RET_ERRNO | errno.EPERM)]
    return b"".join(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SocketFilter:
    """A filter built in the parent; `install_in_child()` only makes two prctl calls."""

    def __init__(self, allowed_families: frozenset[int] | set[int], read_only: bool = False,
                 no_processes: bool = False):
        self.allowed = frozenset(allowed_families)
        code = program(self.allowed, read_only, no_processes)
        self._buf = ctypes.create_string_buffer(code, len(code))
        self._prog = _SockFprog(len(code) // 8, ctypes.cast(self._buf, ctypes.c_void_p).value)
        from .landlock import _syscall

        self._libc = _syscall()
        self._addr = ctypes.addressof(self._prog)

    def install_in_child(self) -> None:
        """After fork, before exec. No new privileges first: the kernel requires it of a process
        without CAP_SYS_ADMIN, and it keeps a setuid program from shedding the filter."""
        libc = self._libc
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_void_p(self._addr), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def describe(allowed: frozenset[int]) -> str:
    names = {AF_UNIX: "Unix", AF_INET: "IPv4", AF_INET6: "IPv6", AF_NETLINK: "netlink"}
    kept = ", ".join(names.get(f, str(f)) for f in sorted(allowed)) or "none"
    kept = kept.replace("netlink", "netlink (route only)")
    return f"sockets: only {kept}"
