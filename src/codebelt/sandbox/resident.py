"""The resident jail: one process per session inside a bwrap jail that starts each jailed command.

Why: building a bwrap jail per command (namespaces, some thirty mounts, a network namespace, then
an interpreter for the Landlock layer) costs tens of milliseconds; a clone from a process that is
already inside one costs about one, and even that is paid before the command is asked for. Built
once: the namespaces (network, IPC, UTS, cgroup), the read-only view and the seccomp filter
(inherited from the bwrap it runs in). Every command still gets of its own:

- a pid namespace whose pid 1 is a small init of its own (the zygote below that read its request): the
  command is an ordinary process in it (`kill -9 $$` and a SIGTERM without a trap end it), it sees
  no other process (its own /proc), and when it ends its init kills and reaps everything the
  command left, then reports its status and exits;
- a mount namespace copied from the resident's (private: nothing mounted in one is seen
  elsewhere), with a fresh tmpfs as its scratch directory and the masks it was given (the
  session's Read deny paths, and /etc's secrets that appeared since the resident started) as they
  are when the request arrives;
- its own process group (with its init), no capability, no_new_privs, and a Landlock layer that
  refuses every write but to its scratch and /dev/null, /dev/zero, /dev/full (and its own stdout
  and stderr when they are files): no FIFO, socket or /proc/sys file is writable.

Ahead of time: the resident keeps one zygote ready, cloned into its new namespaces with what
does not depend on the request already done (scratch tmpfs mounted, /proc mounted, bounding set
dropped, no_new_privs, the Landlock ruleset built for the scratch), blocked reading the control
socket. The zygote that reads a request tells the resident (which clones the next), applies the
request's masks, drops its last capabilities, restricts itself with the Landlock layer and
starts the command (vfork + exec), then stays as its pid 1: it reaps, and once the command has
ended and nothing else is left, reports the command's wait status. What a zygote will run is run
once on data of its own before the request (`warm_up`), so that the request finds the pages it
touches already copied. It is not dumpable, so the command (same uid, same Landlock domain, no
capability) cannot ptrace it or read its descriptors.

Channel: requests come on one end of a SOCK_SEQPACKET socket pair whose other end only codebelt
holds; no path, no name, and no command keeps it (each closes every descriptor but its own 0, 1,
2 and the ones it was given). A request is a dict (argv, env, cwd, tmpfs, masks, the write
sandbox's mount steps and namespaces, the Landlock layer's ABI and writable paths, the descriptor
number each attached descriptor gets) in `marshal`'s format — codebelt runs this file with its
own interpreter and alone writes to the channel; a third of JSON's cost each way — with
descriptors attached: first a status socket for that
command — its init sends "pid+cred" with a pidfd of itself and its pid as credentials as soon as
it has read the request, "status RAW" with the command's wait status when it is reaped, and
closes it by exiting — then the descriptors to install. When codebelt closes its end the
zygote reading it and the resident exit, and bwrap's pid namespace ends whatever is left.

Runs as `python -I -S -c <write_layer.py + this source> [PREPARE] CONTROL_FD` with codebelt's
interpreter, standard library only (codebelt's package need not be visible in the jail);
PREPARE is JSON ({"tmpfs", "abi", "writable", "ipc", "net"}: what requests will ask for, done
ahead of time; a request asking for another scratch or layer is set up entirely when it arrives,
one asking for a namespace not prepared gets it by unshare; "native": a descriptor of codebelt's
compiled request path, `_zygote`, loaded by that descriptor — a zygote's request is then served
by `_zygote.serve`, `init`'s steps in C, and only a request it does not take comes back to
`init` here). `WriteLayer` comes from write_layer.py, shared with the one-shot stage.
"""

import ctypes
import fcntl
import json
import marshal
import mmap
import os
import select
import signal
import socket
import stat
import struct
import subprocess
import sys
import time

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_SET_DUMPABLE = 38, 24, 47, 4
PR_CAP_AMBIENT_CLEAR_ALL = 4
MNT_DETACH = 2
MAX_REQUEST = 4 << 20
MAX_FDS = 8
NEXT_ZYGOTE_DELAY = 0.1  # seconds a taken zygote's command may run before the next is made anyway
# /proc entries that a fresh procfs would make writable again (bwrap binds them read-only too)
PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus")

SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine, 56)

libc = ctypes.CDLL(None, use_errno=True)
pylibc = ctypes.PyDLL(None, use_errno=True)
pylibc.syscall.restype = ctypes.c_long
libc.syscall.restype = ctypes.c_long
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
# what an init ignores (Python's default; exec keeps SIG_IGN: its command's start restores them)
IGNORED_BY_INIT = (signal.SIGPIPE, signal.SIGXFSZ)


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


def mask(path, where=None):
    """Cover `path` in this mount namespace: a file with an empty one, a directory with an empty
    read-only tmpfs. A link is resolved at its target, which is masked (or not visible) itself.
    `where`: (st_dev, st_ino) of the directory codebelt found `path` in. A command running
    meanwhile may rename a directory above it back and forth (it cannot move the file itself: a
    mount point in its own view), so the cover must land in that very directory: checked through
    its descriptor before and after the mount (by path), else the command is refused."""
    parent, name = os.path.split(path)
    try:
        dfd = os.open(parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if where:
            raise OSError(f"{path} was moved while the command started") from None
        return  # not in the jail's view
    try:
        held = os.fstat(dfd)
        if where and [held.st_dev, held.st_ino] != list(where):
            raise OSError(f"{path} was moved while the command started")
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return  # gone from its directory: nothing there to cover
        if stat.S_ISLNK(st.st_mode):
            return
        try:
            if stat.S_ISDIR(st.st_mode):
                mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555")
            else:
                bind_readonly("/dev/null", path)
        except FileNotFoundError:
            if where:  # its name leads nowhere now: the directory moved after the check
                raise OSError(f"{path} was moved while the command started") from None
            raise
        now = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
            raise OSError(f"{path} was moved while the command started")  # the cover landed elsewhere
    finally:
        os.close(dfd)


def apply_mount(op):
    """One step of a write sandbox command's view, in the order codebelt gave them (bwrap's
    order: the protected paths, then the masks, then what is shown over a mask):
    ["pin", dir] binds a directory onto itself (--bind-try: it can then not be renamed or
    replaced); ["ro", path] re-binds a path read-only (--ro-bind-try); ["mask", path] covers it
    (["mask", dev, ino, path]: in the directory of that identity, `mask`);
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
            mask(path, op[1:-1])
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


def namespace_flags(spec):
    """The namespaces besides pid and mount that a request (or what was prepared) asks for: the
    write sandbox's "ipc" (System V and POSIX queues and segments outlive their creator) and,
    with the network off, "net" (a port bound or left in TIME_WAIT is the command's alone)."""
    return (CLONE_NEWIPC if spec.get("ipc") else 0) | (CLONE_NEWNET if spec.get("net") else 0)


def drop_bounding_set():
    """No capability for anything executed from here on, uid 0 included (the bounding and ambient
    sets); what this process holds itself stays until `drop_capabilities`."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability this kernel knows
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT)")


def drop_capabilities():
    """The effective, permitted and inheritable sets emptied."""
    header, data = CapHeader(0x20080522, 0), (CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")


def mount_tmpfs(paths):
    for path in paths:
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700" if path != "/dev/shm" else "mode=1777")


def mount_proc():
    """A procfs of this pid namespace, its machine-wide writable entries read-only (as bwrap)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for name in PROC_READONLY:
        if os.path.exists(f"/proc/{name}"):
            bind_readonly(f"/proc/{name}", f"/proc/{name}")


def close_all_but(keep):
    start = 3
    for n in sorted(keep):
        if n >= start:
            os.closerange(start, n)
            start = n + 1
    os.closerange(start, 1 << 20)




def clone_into_namespaces(flags=0):
    """fork() into a new pid and mount namespace: the child is pid 1 of its namespace and a
    child of the resident. A raw clone (os.fork cannot take flags; unshare(CLONE_NEWPID) works
    once per process). Called with the interpreter's lock held (PyDLL) in a single-threaded
    process, so the child goes on like a forked one."""
    return pylibc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_ulong(CLONE_NEWPID | CLONE_NEWNS | flags | signal.SIGCHLD),
                          ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_void_p(0), ctypes.c_ulong(0))


def receive(sock):
    """One message and the descriptors attached to it (b"" when the other end closed). Read into
    an anonymous mapping, whose pages cost only where the message is written: recvmsg's own
    buffer of MAX_REQUEST bytes costs ~0.1 ms a call, a bytearray's zeroing more."""
    buffer = mmap.mmap(-1, MAX_REQUEST)
    while True:
        try:
            size, anc, _flags, _ = sock.recvmsg_into([buffer], socket.CMSG_SPACE(4 * MAX_FDS))
            break
        except InterruptedError:
            continue
    msg = buffer[:size]
    buffer.close()
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds += [int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, usable, 4)]
    return msg, fds


def get_ready(prepare):
    """What a command's set-up needs before its request: its scratch tmpfs, its /proc, no
    capability for anything it executes, no_new_privs, not dumpable, the write layer's ruleset."""
    mount_tmpfs(prepare.get("tmpfs", ()))
    if prepare.get("net"):
        loopback_up()
    mount_proc()
    drop_bounding_set()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")  # as bwrap does
    # the command runs with this process's uid, Landlock domain and (no) capabilities: without
    # this it could ptrace its init and use the status socket or the namespace's privileges
    _check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    layer = WriteLayer(prepare["abi"], prepare["writable"]) if prepare.get("abi") else None
    warm_up(layer, prepare)
    return layer


def warm_up(layer, prepare):
    """Run what a request will run, on data of its own, before the request. This process is a
    fresh fork: the first touch of each page the interpreter writes (a reference count, an
    allocation) copies it, and a command's set-up touches hundreds (~0.3 ms); touched now, they
    are its own when the request comes. The spawn fails at exec (no such file) and is reaped."""
    sample = marshal.dumps({"argv": ["/bin/sh", "-c", ":"], "env": {"PATH": "/usr/bin", "HOME": "/tmp"}, "cwd": "/",
                            "tmpfs": ["/tmp"], "masks": ["/etc/shadow"], "abi": 4, "writable": ["/tmp"], "fds": [1, 2]})
    parsed = marshal.loads(sample)
    if NATIVE is not None:  # the compiled path's parse, on a sample shaped as this zygote's requests
        NATIVE.warm_up(marshal.dumps({**parsed, **{k: prepare[k] for k in ("tmpfs", "abi", "writable") if k in prepare}}),
                       2, prepare)
    null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    copy = fcntl.fcntl(null, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(null, copy)
    for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET):
        socket.socket(fileno=end.detach()).close()
    os.fstat(copy)
    os.close(copy)
    CapHeader(0x20080522, 0), (CapData * 2)()
    if layer is not None:
        layer.Beneath(0, null)
    try:
        subprocess.Popen([""], executable="", env={"PATH": "/usr/bin"}, close_fds=True, stdin=null, stdout=null,
                         stderr=null)
    except OSError:
        pass
    os.close(null)


def zygote(control, note, prepare):
    """The clone: get ready, read one request, start its command and be its init. Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for sig in signal.valid_signals():
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                try:
                    # SIG_DFL: an init receives no signal it has no handler for (codebelt's
                    # SIGTERM to the group reaches the command, not its init)
                    signal.signal(sig, signal.SIG_IGN if sig in IGNORED_BY_INIT else signal.SIG_DFL)
                except (OSError, ValueError):
                    pass
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        close_all_but({control.fileno(), note})
        # its own process group, which codebelt signals; the session is the resident's, which has
        # no terminal (bwrap --new-session), and a new one would cost a scheduler autogroup
        os.setpgid(0, 0)
    except BaseException:  # noqa: BLE001
        os._exit(1)
    layer, why = None, None
    try:
        layer = get_ready(prepare)
    except BaseException as e:  # noqa: BLE001 - said to the request it would have served
        why = e
    if NATIVE is not None and why is None:
        # the compiled request path (_zygote.c): returns only a request it leaves to this one
        msg, fds = NATIVE.serve(control.detach(), note, layer.fd if layer is not None else -1, prepare)
    else:
        msg, fds = receive(control)
    if not msg:
        os.write(note, b"e")  # codebelt closed its end: the session is over
        os._exit(0)
    control.close()
    if not fds:
        _taken(note)
        os._exit(0)
    status = socket.socket(fileno=fds[0])
    fds = fds[1:]
    try:
        req = marshal.loads(msg)
        if len(fds) != len(req["fds"]):
            raise ValueError("descriptors do not match the request")
    except (ValueError, EOFError, KeyError, TypeError) as e:
        _taken(note)
        _say(status, b"err " + str(e).encode()[:200])
        os._exit(0)
    _UNANNOUNCED[:] = [status, note]
    init(req, fds, status, prepare, layer, why)


# [status socket, note pipe] of a request whose init has not yet said that it took it
_UNANNOUNCED = []


def _taken(note):
    os.write(note, b"t")  # the resident readies the next zygote
    os.close(note)


def _announce():
    """Tell the resident that this zygote is taken and codebelt its pidfd and pid — once the
    command runs (or has failed to start), not as the request arrives: both wake a process, and
    on the way to the command the woken one took a CPU from it. Until then codebelt waits for
    this message; if it gave up meanwhile, exiting ends the command with the namespace."""
    if not _UNANNOUNCED:
        return
    status, note = _UNANNOUNCED
    del _UNANNOUNCED[:]
    _taken(note)
    pidfd = os.pidfd_open(os.getpid())
    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, pidfd.to_bytes(4, sys.byteorder))
    # its pid as credentials: the kernel gives it to codebelt in codebelt's pid namespace, even
    # when the command has ended by the time codebelt reads it (a pidfd then says -1)
    creds = (socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", os.getpid(), os.getuid(), os.getgid()))
    try:
        try:
            status.sendmsg([b"pid+cred"], [rights, creds])
        except PermissionError:
            status.sendmsg([b"pid"], [rights])
    except OSError:
        os._exit(0)  # codebelt gave up on it
    os.close(pidfd)


def init(req, fds, status, prepare, layer, why):
    """Set up the command's view and rights, spawn it, reap until it ends, report its status."""
    targets = req["fds"]
    above = max([2, *targets]) + 1
    # every descriptor kept above the targets first: no dup2 below clobbers one
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for fd in fds]
    status = socket.socket(fileno=fcntl.fcntl(status.detach(), fcntl.F_DUPFD_CLOEXEC, above))
    _UNANNOUNCED[:] = [status, fcntl.fcntl(_UNANNOUNCED[1], fcntl.F_DUPFD_CLOEXEC, above)]
    if layer is not None:
        layer.fd = fcntl.fcntl(layer.fd, fcntl.F_DUPFD_CLOEXEC, above)
    null = os.open("/dev/null", os.O_RDWR)
    for target, fd in [(0, null), *((n, null) for n in (1, 2) if n not in targets), *zip(targets, high)]:
        os.dup2(fd, target)  # from here on, what goes wrong is said on the command's stderr
    close_all_but({0, *targets, status.fileno(), _UNANNOUNCED[1], *([layer.fd] if layer is not None else ())})
    try:
        if why is not None:
            raise why
        same = bool(prepare) and all(req[k] == prepare.get(k) for k in ("tmpfs", "abi", "writable"))
        if not same:  # asked for another scratch or layer than prepared: all of it now
            if layer is not None:
                layer.close()
                layer = None
            for path in reversed(prepare.get("tmpfs", ())):
                _check(libc.umount2(path.encode("utf-8", "surrogateescape"), MNT_DETACH), f"umount {path}")
            mount_tmpfs(req["tmpfs"])
        extra = namespace_flags(req) & ~namespace_flags(prepare)
        if namespace_flags(prepare) & ~namespace_flags(req):
            raise OSError("the resident was prepared with namespaces this command does not ask for")
        if extra:
            _check(libc.unshare(extra), "unshare")
            if extra & CLONE_NEWNET:
                loopback_up()
        for m in req["masks"]:
            mask(*m) if isinstance(m, list) else mask(m)
        for op in [*([kind, path] for path, kind in req.get("binds", ())), *req.get("mounts", ())]:
            apply_mount(op)
        os.chdir(req["cwd"])
        drop_capabilities()
        if req["abi"]:
            if layer is None:
                layer = WriteLayer(req["abi"], req["writable"])
            layer.add_outputs()
            layer.restrict()
    except BaseException as e:  # noqa: BLE001 - whatever failed, the command must not start
        _fail(e, status)
    argv = req["argv"]
    try:
        # vfork + exec, restoring what Python ignores (SIGPIPE, SIGXFSZ); not os.posix_spawn,
        # whose child leaves glibc's internal signals (32, 33) ignored across the exec
        # kept referenced: a Popen collected while its child runs reaps it when it can
        command = subprocess.Popen(argv, executable=argv[0], env=req["env"], close_fds=True,
                                   pass_fds=[n for n in targets if n > 2])
    except OSError as e:  # as a shell says it
        os.write(2, f"{argv[0]}: {e.strerror}\n".encode("utf-8", "surrogateescape"))
        _report(status, 127 << 8)
    _announce()
    null = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(null, n)  # the command's output is the command's: its init keeps no copy
    close_all_but({status.fileno()})
    while True:
        try:
            pid, raw = os.waitpid(-1, 0)  # orphans come to pid 1: reaped on the way
        except ChildProcessError:
            _report(status, 127 << 8)
        if pid == command.pid:
            break
    end_the_rest()
    _report(status, raw)


def end_the_rest():
    """Kill whatever the command left in its namespace and reap it all, so that when codebelt
    hears the status nothing of the command runs anywhere (codebelt goes on then, not when this
    init has exited: a Python process's exit costs ~0.3 ms). Exact: kill(-1) from pid 1 reaches
    every process of the namespace (nested ones included) and a fork racing it fails; every
    process of the namespace is a descendant of this init, so each orphan comes to it and no
    child left means no process left."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass  # nothing left
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _say(status, msg):
    try:
        status.send(msg)
    except OSError:
        pass


def _report(status, raw):
    _announce()
    # codebelt, woken by the status, is put on this CPU (a socket's wake-up expects the sender to
    # sleep next), where this init's exit (~0.3 ms of a Python process's teardown) would keep it
    # waiting: at SCHED_IDLE the init yields to it at once and ends when a CPU has nothing else
    # to do (the resident makes the next zygote meanwhile: at most NEXT_ZYGOTE_DELAY after the
    # take, or at once for a request that waits)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        pass
    _say(status, b"status %d" % raw)
    # and yield to it: the wake-up does not always mark this process for preemption, and the
    # exit (a fork of the resident's address space torn down) ran ~0.7 ms before codebelt did
    os.sched_yield()
    os._exit(0)


def _fail(e, status):
    """Say why on the command's stderr (and to codebelt) and end, as a command that exits 126."""
    text = f"codebelt jail: the command could not be started in the jail ({e}); it did not run"
    try:
        os.write(2, (text + "\n").encode("utf-8", "surrogateescape"))
    finally:
        _report(status, 126 << 8)


def serve(control, prepare):
    # every command's mount namespace is a copy of this one: private, so that nothing mounted in
    # one propagates anywhere
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # its children are reaped by the kernel as they exit: a command's init is gone, its group
    # empty, by the time its pidfd tells codebelt that it ended
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    note_r, note_w = os.pipe2(os.O_CLOEXEC)  # zygote -> resident: "t" taken, "e" the channel closed
    held = {}  # pidfd of a zygote or init -> its mount namespace
    ready, lost = -1, 0  # the pidfd of the zygote waiting for a request; zygotes in a row that ended untaken
    # the next zygote is made once the last taken one's command has ended, a request waits, or
    # NEXT_ZYGOTE_DELAY has passed: made at once, its ~1.5 ms of work would take a CPU from the
    # command being set up and from codebelt waiting for it
    taken, due = -1, 0.0
    control.send(b"ready native" if NATIVE is not None else b"ready" if NATIVE_FAILED is None else
                 b"ready python: " + NATIVE_FAILED.encode("utf-8", "replace")[:400])
    while True:
        if ready < 0 and (taken < 0 or time.monotonic() >= due):
            taken = -1
            if lost >= 3:
                raise OSError("its command starters keep ending before they are used")
            pid = clone_into_namespaces(namespace_flags(prepare))
            if pid == 0:
                try:
                    zygote(control, note_w, prepare)
                finally:
                    os._exit(1)
            if pid < 0:
                raise OSError(ctypes.get_errno(), "cannot make a command's namespaces")
            try:
                ready = os.pidfd_open(pid)
            except ProcessLookupError:
                lost += 1
                continue
            # held until it has ended: the last reference to a mount namespace, dropped by an
            # exiting process, makes its exit wait for an RCU grace period (milliseconds on a
            # busy machine); dropped here, once its command's status went out, it costs none
            try:
                held[ready] = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                held[ready] = -1
        deferred = ready < 0  # a request arriving now finds no zygote: the control socket says so
        try:
            readable = select.select([note_r, *held, *([control] if deferred else [])], [], [],
                                     max(0.0, due - time.monotonic()) if deferred else None)[0]
        except InterruptedError:
            continue
        if control in readable:
            taken = -1
        if note_r in readable:
            for note in os.read(note_r, 64):
                if note == ord("e"):
                    os._exit(0)
                if ready >= 0:
                    taken, due = ready, time.monotonic() + NEXT_ZYGOTE_DELAY
                ready, lost = -1, 0
        for pidfd in readable:
            if pidfd in held:  # ended
                ns = held.pop(pidfd)
                if ns >= 0:
                    os.close(ns)
                os.close(pidfd)
                if pidfd == ready:
                    ready, lost = -1, lost + 1
                if pidfd == taken:
                    taken = -1


# the compiled request path, when codebelt handed its extension over (native.py says why by descriptor)
NATIVE, NATIVE_FAILED = None, None


def load_native(fd):
    """The extension module in the file open at `fd`, loaded by that descriptor: no path inside
    the jail is looked up, so nothing a command or the checkout could place there is loaded."""
    import importlib.machinery
    import importlib.util

    path = f"/proc/self/fd/{fd}"
    try:
        loader = importlib.machinery.ExtensionFileLoader("_zygote", path)
        spec = importlib.util.spec_from_file_location("_zygote", path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        return module
    finally:
        os.close(fd)


if __name__ == "__main__":
    try:
        prepare = json.loads(sys.argv[1]) if len(sys.argv) > 2 else {}
        if isinstance(prepare.get("native"), int):
            try:
                NATIVE = load_native(prepare["native"])
            except Exception as e:  # noqa: BLE001 - said to codebelt; the Python path serves
                NATIVE_FAILED = f"{type(e).__name__}: {e}"
        serve(socket.socket(fileno=int(sys.argv[-1])), prepare)
    except BaseException as e:  # noqa: BLE001
        sys.stderr.write(f"codebelt resident jail: {e}\n")
        os._exit(1)
