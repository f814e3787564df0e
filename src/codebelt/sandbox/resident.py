"""The resident jail: one process per session inside a bwrap jail that starts each jailed command.

Why: building a bwrap jail per command (namespaces, some thirty mounts, a network namespace, then
an interpreter for the Landlock layer) costs tens of milliseconds; a clone from a process that is
already inside one costs about one. Built once: the namespaces (network, IPC, UTS, cgroup), the
read-only view and the seccomp filter (inherited from the bwrap it runs in). Every command still
gets of its own, built when it starts (`run_command`):

- a pid namespace of which it is pid 1: when it ends, the kernel ends everything it left, and it
  sees no other process (its own /proc);
- a mount namespace copied from the resident's (private: nothing mounted in one is seen
  elsewhere), with a fresh tmpfs as its scratch directory and the masks it was given (the
  session's Read deny paths, and /etc's secrets that appeared since the resident started) as they
  are at that moment;
- its own process group, no capability, no_new_privs, and a Landlock layer that refuses every
  write but to its scratch and /dev/null, /dev/zero, /dev/full (and its own stdout/stderr when
  they are files): no FIFO, socket or /proc/sys file is writable.

Channel: the resident reads requests from one end of a SOCK_SEQPACKET socket pair whose other end
only codebelt holds; no path, no name, and no command keeps it (each closes every descriptor but
its own 0, 1, 2 and the ones it was given). A request is JSON (argv, env, cwd, scratch, masks,
the Landlock layer's ABI and writable paths, the descriptor number each attached descriptor
gets) with descriptors attached: first a status socket for that command — the resident sends
"pid+cred" with a pidfd and the pid as credentials once it is cloned, and "done RAW" with its
wait status when it is reaped, then closes it — then the descriptors to install. When codebelt
closes its end the resident exits, and bwrap's pid namespace ends whatever is left.

Runs as `python -I -S -c <write_layer.py + this source> CONTROL_FD` with codebelt's interpreter,
standard library only (codebelt's package need not be visible in the jail); `restrict_writes`
comes from write_layer.py, shared with the one-shot stage.
"""

import ctypes
import fcntl
import json
import os
import select
import signal
import socket
import stat
import struct
import sys

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 38, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
MAX_REQUEST = 4 << 20
MAX_FDS = 8
# /proc entries that a fresh procfs would make writable again (bwrap binds them read-only too)
PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus")

SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine, 56)

libc = ctypes.CDLL(None, use_errno=True)
pylibc = ctypes.PyDLL(None, use_errno=True)
pylibc.syscall.restype = ctypes.c_long
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: s.encode("utf-8", "surrogateescape") if s is not None else None  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def bind_readonly(source, target):
    """A read-only bind keeping the source mount's other flags (nodev on /dev/null's would make
    the mask unreadable instead of empty; a flag dropped would be refused in a user namespace).
    Not recursive: a mount below the source (a pinned directory) would stay writable."""
    mount(source, target, None, MS_BIND)
    kept = os.statvfs(target).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)


def mask(path):
    """Cover `path` in this mount namespace: a file with an empty one, a directory with an empty
    read-only tmpfs. A link is resolved at its target, which is masked (or not visible) itself."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return  # not in the jail's view
    if stat.S_ISLNK(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555")
    else:
        bind_readonly("/dev/null", path)


def apply_mount(op):
    """One step of a write sandbox command's view, in the order codebelt gave them (bwrap's
    order: the protected paths, then the masks, then what is shown over a mask):
    ["pin", dir] binds a directory onto itself (--bind-try: it can then not be renamed or
    replaced); ["ro", path] re-binds a path read-only (--ro-bind-try); ["mask", path] covers it;
    ["show", file, path] binds a file read-only over a path (--ro-bind); ["readonly", path]
    makes that mount read-only here; ["devpts", path] mounts a pty instance of its own there. A
    path gone since codebelt listed it is skipped, as bwrap's -try options do."""
    kind, path = op[0], op[-1]
    try:
        if kind == "pin":
            mount(path, path, None, MS_BIND | MS_REC)
        elif kind == "ro":
            bind_readonly(path, path)
        elif kind == "mask":
            mask(path)
        elif kind == "show":
            bind_readonly(op[1], path)
        elif kind == "readonly":
            kept = os.statvfs(path).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
            mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept)
        elif kind == "devpts":
            mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
        else:
            raise ValueError(f"unknown mount step {kind!r}")
    except FileNotFoundError:
        if kind in ("show", "readonly", "devpts"):
            raise


def loopback_up():
    """Bring up the loopback of a new network namespace (as bwrap does for its own)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH14s", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH14s", b"lo", 0, b"")))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def drop_capabilities():
    """No capability for the command or anything it executes, uid 0 included: bounding set,
    ambient set, and the effective, permitted and inheritable sets all emptied."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = CapHeader(0x20080522, 0), (CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def clone_into_namespaces(flags=0):
    """fork() into a new pid and mount namespace: the child is pid 1 of its namespace and a
    child of the resident. A raw clone (os.fork cannot take flags; unshare(CLONE_NEWPID) works
    once per process). Called with the interpreter's lock held (PyDLL) in a single-threaded
    process, so the child goes on like a forked one."""
    return pylibc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(CLONE_NEWPID | CLONE_NEWNS | flags | signal.SIGCHLD),
                          ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_ulong(0))


def run_command(req, fds, status):
    """The command: pid 1 of its own pid namespace (when it ends, the kernel ends everything in
    the namespace) and alone in its own mount namespace. Builds its view, drops what it may do,
    and execs. Never returns."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)  # Python ignores SIGPIPE and SIGXFSZ; exec keeps an ignore
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    above = max([2, *req["fds"]]) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, above) for fd in fds]  # no dup2 below clobbers a source
    for target, fd in zip(req["fds"], high):
        os.dup2(fd, target)  # from here on, what goes wrong is said on the command's stderr
    try:
        # its own process group, which codebelt signals; the session is the resident's, which has
        # no terminal (bwrap --new-session), and a new one would cost a scheduler autogroup
        os.setpgid(0, 0)
        for path in req["tmpfs"]:
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700" if path != "/dev/shm" else "mode=1777")
        for path in req["masks"]:
            mask(path)
        for op in req.get("mounts", ()):
            apply_mount(op)
        if req.get("net"):
            loopback_up()
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        for name in PROC_READONLY:
            if os.path.exists(f"/proc/{name}"):
                bind_readonly(f"/proc/{name}", f"/proc/{name}")
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        status.close()
        status = None
        keep = sorted({0, *req["fds"]})
        start = 3
        for n in keep:
            if n >= start:
                os.closerange(start, n)
                start = n + 1
        os.closerange(start, 1 << 20)  # the control socket, every other command's status socket
        os.chdir(req["cwd"])
        drop_capabilities()
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")  # as bwrap does
        if req["abi"]:
            restrict_writes(req["abi"], req["writable"])
    except BaseException as e:  # noqa: BLE001 - whatever failed, the command must not start
        _fail(e, status)
    argv, env = req["argv"], req["env"]
    try:
        os.execve(argv[0], argv, env)
    except OSError as e:  # as a shell says it
        os.write(2, f"{argv[0]}: {e.strerror}\n".encode("utf-8", "surrogateescape"))
        os._exit(127)


def _fail(e, status=None):
    """Say why on the command's stderr (and to codebelt) and end."""
    text = f"codebelt jail: the command could not be started in the jail ({e}); it did not run"
    try:
        os.write(2, (text + "\n").encode("utf-8", "surrogateescape"))
        if status is not None:
            status.send(b"err " + text.encode("utf-8", "surrogateescape")[:400])
    finally:
        os._exit(126)


def serve(control):
    # every command's mount namespace is a copy of this one: private, so that nothing mounted in
    # one propagates anywhere
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pending = {}  # pid of a command -> (its status socket, its mount namespace)
    control.send(b"ready")
    while True:
        try:
            ready = select.select([control, wake_r], [], [])[0]
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            while pending:
                try:
                    pid, raw = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                entry = pending.pop(pid, None)
                if entry is not None:
                    sock, ns = entry
                    try:
                        sock.send(b"done %d" % raw)
                    except OSError:
                        pass
                    sock.close()
                    if ns >= 0:
                        os.close(ns)
        if control in ready:
            msg, anc, _flags, _ = control.recvmsg(MAX_REQUEST, socket.CMSG_SPACE(4 * MAX_FDS))
            if not msg:
                os._exit(0)  # codebelt closed its end: the session is over
            fds = []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    usable = len(data) - len(data) % 4
                    fds += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
            if not fds:
                continue
            status = socket.socket(fileno=fds[0])
            fds = fds[1:]
            try:
                req = json.loads(msg)
                if len(fds) != len(req["fds"]):
                    raise ValueError("descriptors do not match the request")
            except (ValueError, KeyError, TypeError) as e:
                status.send(b"err " + str(e).encode()[:200])
                status.close()
                for fd in fds:
                    os.close(fd)
                continue
            # the write sandbox asks for an IPC namespace of its own ("ipc": System V and POSIX
            # queues and segments outlive their creator) and, with the network off, a network
            # namespace ("net": a port bound or left in TIME_WAIT is the command's alone)
            pid = clone_into_namespaces((CLONE_NEWIPC if req.get("ipc") else 0) | (CLONE_NEWNET if req.get("net") else 0))
            if pid == 0:
                try:
                    signal.set_wakeup_fd(-1)
                    run_command(req, fds, status)
                except BaseException as e:  # noqa: BLE001
                    _fail(e, status)
            for fd in fds:
                os.close(fd)
            if pid < 0:
                status.send(b"err cannot make the command's namespaces: " + os.strerror(ctypes.get_errno()).encode())
                status.close()
                continue
            try:
                os.setpgid(pid, pid)  # as the child does: its group exists before codebelt hears of it
            except OSError:
                pass  # it already did, or it already ended
            # held until the command is reaped: the last reference to a mount namespace, dropped
            # by an exiting process, makes its exit wait for an RCU grace period (milliseconds on
            # a busy machine); dropped here, after the command's status went out, it costs none
            try:
                ns = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                ns = -1
            pending[pid] = (status, ns)
            pidfd = os.pidfd_open(pid)
            rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, pidfd.to_bytes(4, sys.byteorder))
            # its pid as credentials: the kernel gives it to codebelt in codebelt's pid namespace,
            # even when the command has ended by the time codebelt reads it (a pidfd then says -1)
            creds = (socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", pid, os.getuid(), os.getgid()))
            try:
                try:
                    status.sendmsg([b"pid+cred"], [rights, creds])
                except PermissionError:
                    status.sendmsg([b"pid"], [rights])
            except OSError:
                pass  # codebelt gave up on it; it ends and is reaped like any other
            os.close(pidfd)


if __name__ == "__main__":
    try:
        serve(socket.socket(fileno=int(sys.argv[1])))
    except BaseException as e:  # noqa: BLE001
        sys.stderr.write(f"codebelt resident jail: {e}\n")
        os._exit(1)
