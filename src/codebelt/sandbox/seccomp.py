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
- `socket(domain, …)` with a domain outside the allowed set fails with EACCES;
- `io_uring_setup` fails with ENOSYS (io_uring can create and connect sockets without the
  `socket` syscall, so the filter would otherwise not see them);
- everything else is allowed. `socketpair` stays allowed: it makes two connected ends and no
  address, which is how programs talk to their own children (node's IPC, pipes between workers).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16

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
_OFF_NR, _OFF_ARCH, _OFF_ARG0 = 0, 4, 16  # args[0] low word (little-endian machines only)

# (audit arch, socket, io_uring_setup, first number of a foreign ABI sharing the arch or None)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 425, 0x40000000),  # x32 numbers have bit 30 set
    "amd64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, None),
    "arm64": (0xC00000B7, 198, 425, None),
}


class SeccompUnavailable(OSError):
    """This machine's architecture is not one the filter knows."""


def supported() -> tuple[bool, str]:
    machine = platform.machine().lower()
    if platform.system() != "Linux" or machine not in _ARCHES:
        return False, f"no seccomp socket filter for {platform.system()}/{platform.machine()}"
    return True, "seccomp socket filter"


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(allowed_families: frozenset[int] | set[int]) -> bytes:
    """The BPF program (as the bytes of a sock_filter array) for this machine."""
    machine = platform.machine().lower()
    if machine not in _ARCHES:
        raise SeccompUnavailable(errno.ENOSYS, f"no seccomp filter for {platform.machine()}")
    arch, nr_socket, nr_uring, foreign = _ARCHES[machine]
    families = sorted(allowed_families)
    enosys = RET_ERRNO | errno.ENOSYS
    eacces = RET_ERRNO | errno.EACCES
    # Laid out in order; the jumps (placeholders here) are resolved once every position is known:
    #  0 ld arch
    #  1 jeq arch ? 0 : -> ret ENOSYS
    #  2 ld nr
    #  3 [x86_64] jge foreign -> ret ENOSYS
    #  . jeq io_uring_setup -> ret ENOSYS
    #  . jeq socket -> check domain, else ret ALLOW
    #  . ld arg0; jeq f1 -> allow; jeq f2 -> allow; ...; ret EACCES
    #  . ret ALLOW ; ret ENOSYS
    body: list[tuple] = []
    body.append((_LD_W_ABS, 0, 0, _OFF_ARCH))
    body.append(("ARCH",))  # placeholder, fixed below
    body.append((_LD_W_ABS, 0, 0, _OFF_NR))
    if foreign is not None:
        body.append(("FOREIGN",))
    body.append(("URING",))
    body.append(("SOCKET",))
    body.append((_RET_K, 0, 0, RET_ALLOW))  # not a socket call
    check = len(body)
    body.append((_LD_W_ABS, 0, 0, _OFF_ARG0))
    for _ in families:
        body.append(("FAMILY",))
    body.append((_RET_K, 0, 0, eacces))
    allow_at = len(body)
    body.append((_RET_K, 0, 0, RET_ALLOW))
    enosys_at = len(body)
    body.append((_RET_K, 0, 0, enosys))

    out: list[bytes] = []
    fam = iter(families)
    for i, ins in enumerate(body):
        nxt = i + 1
        if ins == ("ARCH",):
            out.append(_insn(_JEQ_K, 0, enosys_at - nxt, arch))
        elif ins == ("FOREIGN",):
            out.append(_insn(_JGE_K, enosys_at - nxt, 0, foreign))
        elif ins == ("URING",):
            out.append(_insn(_JEQ_K, enosys_at - nxt, 0, nr_uring))
        elif ins == ("SOCKET",):
            out.append(_insn(_JEQ_K, check - nxt, 0, nr_socket))
        elif ins == ("FAMILY",):
            out.append(_insn(_JEQ_K, allow_at - nxt, 0, next(fam)))
        else:
            out.append(_insn(*ins))
    return b"".join(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SocketFilter:
    """A filter built in the parent; `install_in_child()` only makes two prctl calls."""

    def __init__(self, allowed_families: frozenset[int] | set[int]):
        self.allowed = frozenset(allowed_families)
        code = program(self.allowed)
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
    return f"sockets: only {kept}"
