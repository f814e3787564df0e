"""The resident helper of `codebelt call`: a process that imported codebelt once and forks a child
for each call, so a call does not pay for starting Python, pydantic and the settings and tool
models again (~150 ms of CPU; a fork of a process that did costs a few).

Each call still runs as `codebelt call` runs in a process of its own: the forked child takes the
caller's arguments, environment, working directory, umask, resource limits and standard streams
(their descriptors are passed over the socket), reads the settings afresh and runs the command
line's own code; nothing of one call is kept for the next (what a CLI session keeps, it keeps on
disk as always). The caller forwards SIGINT, SIGTERM and SIGHUP to the child, and the child is
told (SIGTERM) when the caller goes away. `CODEBELT_HELPER=0` turns it off.

Who may use it: only a process of the same user that nothing confines. The helper and the caller
each check the other with what the kernel says of the peer of a Unix socket (SO_PEERCRED, and
SO_PEERPIDFD so the process looked at is the one that connected, Linux 6.5 or later): the same
uid, `no_new_privs` unset, and the same seccomp state, capability sets, namespaces, root
directory, control groups and security-module label as the helper. Every confinement codebelt
applies to a command — bubblewrap, Landlock, the seccomp socket filter — sets `no_new_privs` or
new namespaces, so a command of the model's, sandboxed or jailed, is refused (and its `codebelt
call` simply runs in its own process); so is a process with fewer capabilities, in a chroot or
under other resource limits. Not visible to the check: a Landlock domain that a process holding
CAP_SYS_ADMIN applied without setting `no_new_privs` (codebelt never does). The socket is 0600
in a 0700 directory of the user's own; a helper whose own process has `no_new_privs` set does
not start.

Lifetime: started in the background by the first call that finds none (that call runs in its own
process), one per Python environment and locale (`key()`); it ends after IDLE_S without calls
(`CODEBELT_HELPER_IDLE_S`), when its socket is removed (`stop()`), or at the first call after one
of codebelt's loaded files or a directory of the module search path changed (that call runs in its
own process).
"""

from __future__ import annotations

import errno
import _socket  # the C module under `socket`: the caller starts without `socket`'s enums (~6 ms)
import marshal
import os
import struct
import sys

IDLE_S = 600.0
SO_PEERPIDFD = 77  # Linux 6.5: a pidfd of the process that connected
NAMESPACES = ("user", "mnt", "pid", "net", "ipc", "uts", "cgroup", "time")
CAPABILITIES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
MAX_REQUEST = 64 << 20


# -- both sides ------------------------------------------------------------------------------------
def enabled() -> bool:
    if os.environ.get("CODEBELT_HELPER", "1").lower() in ("0", "off", "no", "false"):
        return False
    # A process started with options that change how Python runs is not what the helper is.
    return not (sys._xoptions or sys.flags.dev_mode or sys.flags.optimize or sys.flags.isolated
                or sys.flags.ignore_environment or sys.flags.no_site)


def runtime_dir() -> str | None:
    """A directory only this user can enter: $XDG_RUNTIME_DIR/codebelt, else /tmp/codebelt-UID.
    None when it is not ours alone (then no helper)."""
    uid = os.getuid()
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and _private_dir(base, uid):
        path = os.path.join(base, "codebelt")
    else:
        path = os.path.join("/tmp", f"codebelt-{uid}")
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return path if _private_dir(path, uid) else None


def _private_dir(path: str, uid: int) -> bool:
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o077 == 0


def key() -> str:
    """What a helper must share with its callers to run their calls as they would: the
    interpreter, the module search path, the encodings and locale it started with, the user."""
    return repr((sys.executable, sys.version, sys.path, sys.getfilesystemencoding(), sys.flags.utf8_mode,
                 [os.environ.get(v) for v in ("LC_ALL", "LC_CTYPE", "LANG")], os.getuid()))


def socket_path(directory: str) -> str:
    """Where the helper of this caller's key listens (the helper also compares the whole key)."""
    import zlib

    text = key().encode()
    return os.path.join(directory, f"call-{zlib.crc32(text):08x}{zlib.adler32(text):08x}.sock")


def _status(pid: int | str) -> dict[str, str]:
    out = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
        for line in f:
            name, _, value = line.partition(":")
            out[name] = value.strip()
    return out


def _confinement(pid: int | str) -> tuple:
    """What confines a process, as far as the kernel shows it: no_new_privs, seccomp mode and
    filters, capability sets, namespaces, root directory (chroot), control groups (resource
    limits) and security-module label. A caller differing in any is not served: its call would
    run with what the helper has, not what it has."""
    s = _status(pid)
    root = os.stat(f"/proc/{pid}/root")
    with open(f"/proc/{pid}/cgroup", "rb") as f:
        cgroups = f.read()
    return (s.get("NoNewPrivs"), s.get("Seccomp"), s.get("Seccomp_filters"),
            tuple(s.get(c) for c in CAPABILITIES),
            tuple(os.readlink(f"/proc/{pid}/ns/{ns}") for ns in NAMESPACES),
            (root.st_dev, root.st_ino), cgroups, _label(pid))


def _label(pid: int | str) -> bytes:
    """The security module's label (AppArmor, SELinux); empty where no such module runs."""
    try:
        with open(f"/proc/{pid}/attr/current", "rb") as f:
            return f.read()
    except OSError as e:
        if e.errno == errno.EINVAL or isinstance(e, FileNotFoundError):  # no module keeps labels
            return b""
        raise


def unconfined_self() -> bool:
    try:
        return _status("self").get("NoNewPrivs") == "0"
    except OSError:
        return False


def peer_allowed(sock: _socket.socket) -> bool:
    """Whether the process at the other end of `sock` is this user's and confined no more than
    this one (see the module's docstring)."""
    try:
        pid, uid, _ = struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED,
                                                          struct.calcsize("3i")))
        pidfd = sock.getsockopt(_socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:  # before Linux 6.5 the pid cannot be tied to the connection: no helper
        return False
    try:
        if uid != os.getuid() or pid <= 0:
            return False
        ours, theirs = _confinement("self"), _confinement(pid)
        if theirs[0] != "0" or theirs != ours:
            return False
        # What was read is the peer's: a pid is not reused while its process lives, and the
        # pidfd still names this pid only if the process that connected is alive.
        return _pidfd_pid(pidfd) == pid
    except (OSError, ValueError):
        return False
    finally:
        os.close(pidfd)


def _pidfd_pid(pidfd: int) -> int:
    with open(f"/proc/self/fdinfo/{pidfd}", encoding="ascii") as f:
        for line in f:
            if line.startswith("Pid:"):
                return int(line.split()[1])
    return -1


# -- the caller's side -----------------------------------------------------------------------------
def call(argv: list[str]) -> int | None:
    """Run `codebelt ARGV` in the helper: its exit status, or None when the helper cannot take it
    (none yet — one is started —, refused, stale, off): then the caller runs it itself."""
    if not enabled():
        return None
    directory = runtime_dir()
    if directory is None or not unconfined_self():
        return None
    path = socket_path(directory)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            _start(path)
            return None
        except OSError:
            return None
        if not peer_allowed(sock):
            return None
        try:
            return _converse(sock, argv, path)
        except (OSError, ValueError):
            return None
    finally:
        sock.close()


def _converse(sock: _socket.socket, argv: list[str], path: str) -> int | None:
    import resource

    streams = []
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        os.fstat(fd)  # a closed standard stream: OSError, and the call runs here
        stream = getattr(sys, name)
        streams.append([getattr(stream, "encoding", None), getattr(stream, "errors", None),
                        bool(getattr(stream, "line_buffering", False)), bool(getattr(stream, "write_through", False))])
    umask = os.umask(0o022)
    os.umask(umask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")}
    # marshal: no import to pay, and caller and helper run the same Python (it is in the key)
    request = marshal.dumps({"key": key(), "argv": argv, "env": dict(os.environ), "umask": umask, "limits": limits,
                             "streams": streams, "groups": sorted(os.getgroups()), "gid": os.getgid()})
    cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        sent = sock.sendmsg([struct.pack("!Q", len(request)), request],
                            [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("4i", 0, 1, 2, cwd))])
    finally:
        os.close(cwd)
    if sent < 8 + len(request):
        sock.sendall(memoryview(struct.pack("!Q", len(request)) + request)[sent:])
    first, pidfd = _receive_pidfd(sock)
    if first != b"P":
        if first == b"S":  # stale: it is leaving; the next call starts a fresh one
            _start(path)
        return None
    try:
        _forward_signals(pidfd)
        answer = b""
        while chunk := sock.recv(64):
            answer += chunk
            if answer.endswith(b"\n"):
                break
        if answer.startswith(b"X "):
            return int(answer[2:])
        sys.stderr.write("codebelt: the call's process ended without an exit status\n")
        return 1
    finally:
        os.close(pidfd)


def _received_fds(ancillary: list) -> list[int]:
    fds: list[int] = []
    size = struct.calcsize("i")
    for level, kind, payload in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            n = len(payload) // size
            fds += struct.unpack(f"{n}i", payload[: n * size])
    return fds


def _receive_pidfd(sock: _socket.socket) -> tuple[bytes, int]:
    """The helper's first answer: b"P" with the child's pidfd, b"R" (refused) or b"S" (stale)."""
    data, ancillary, _, _ = sock.recvmsg(1, _socket.CMSG_SPACE(struct.calcsize("i")))
    fds = _received_fds(ancillary)
    if data == b"P" and len(fds) == 1:
        return data, fds[0]
    for fd in fds:
        os.close(fd)
    return data or b"R", -1


def _forward_signals(pidfd: int) -> None:
    import _signal  # `signal` builds its enums on import; the caller needs three numbers

    def forward(signum: int, frame: object) -> None:
        try:
            _signal.pidfd_send_signal(pidfd, signum)
        except OSError:
            pass

    for name in SIGNALS:
        _signal.signal(getattr(_signal, name), forward)


def _start(path: str) -> None:
    """Start a helper in the background (it gives up at once if another is starting)."""
    import subprocess

    code = ("import ast, sys; sys.path[:] = ast.literal_eval(sys.argv[2]); "
            "from codebelt.cli.helper import serve; serve(sys.argv[1])")
    try:  # the caller's module search path and environment: the same key; cwd /: no directory held
        subprocess.Popen([sys.executable, "-c", code, path, repr(sys.path)], cwd="/",
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError:
        pass


# -- the helper's side -----------------------------------------------------------------------------
def serve(path: str) -> None:
    import fcntl
    import socket
    import gc
    import select
    import signal
    import threading
    import time

    if not unconfined_self() or os.path.dirname(path) != runtime_dir() or path != socket_path(os.path.dirname(path)):
        return
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper serves this path, or is starting
    _preload()
    if threading.active_count() != 1:
        return  # a fork of a process with threads could inherit a lock held forever
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(old)
    server.listen(64)
    inode = os.stat(path).st_ino
    loaded = _fingerprint()
    own_key = key()
    _log("start")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    gc.freeze()  # the imported objects stay out of the collector: children share their pages
    idle = float(os.environ.get("CODEBELT_HELPER_IDLE_S") or IDLE_S)
    last = time.monotonic()
    kept = Kept()
    channels: dict[socket.socket, None] = {}  # each running call's line back to this process
    try:
        while time.monotonic() - last < idle:
            ready = select.select([server, *channels], [], [], min(1.0, idle))[0]
            for channel in ready:
                if channel is not server:
                    if not kept.hear(channel):
                        channels.pop(channel, None)
                        channel.close()
            if server not in ready:
                if not ready and not _still_ours(path, inode):
                    return  # the socket was removed (that is how to stop a helper) or replaced
                continue
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            last = time.monotonic()
            if _fingerprint() != loaded:
                _log("stale")
                _say(conn, b"S")
                conn.close()
                return
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            if os.fork() == 0:
                try:
                    server.close()
                    os.close(lock)
                    ours.close()
                    for other in channels:
                        other.close()
                    _child(conn, own_key, theirs, kept)
                finally:
                    os._exit(70)
            conn.close()
            theirs.close()
            channels[ours] = None
    finally:
        if _still_ours(path, inode):
            os.unlink(path)
        server.close()
        kept.close()
        _log("exit")


def _still_ours(path: str, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def stop(directory: str | None = None) -> None:
    """Make the helpers of this user end (within a second): their sockets are removed."""
    directory = directory or runtime_dir()
    if directory is None:
        return
    for name in os.listdir(directory):
        if name.startswith("call-") and name.endswith(".sock"):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _log(event: str, detail: str = "") -> None:
    """One line per event to $CODEBELT_HELPER_LOG, when set (for tests, benchmarks and people
    looking): the event, the process id, then any detail."""
    path = os.environ.get("CODEBELT_HELPER_LOG")
    if path:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, f"{event} {os.getpid()}{' ' + detail if detail else ''}\n".encode())
            finally:
                os.close(fd)
        except OSError:
            pass


def _say(conn: _socket.socket, what: bytes) -> None:
    try:
        conn.sendall(what)
    except OSError:
        pass


def _preload() -> None:
    """What a call imports, imported once (tool modules build their models at import), with the
    pydantic models a process of its own builds only when it needs them: the settings schema
    (settings the plain check leaves to it) and the models of declared inputs."""
    from . import call, common, session_state  # noqa: F401
    from .. import audit, checkpointing, session  # noqa: F401
    from ..settings import loader, narrowing, plain, schema  # noqa: F401
    from ..tool import DeclaredModel
    from ..tools import registry

    from ..checkpoints import keeping, manager, tracker  # noqa: F401 - a writing call's checkpoint

    tracker.preload()  # libc found once here, not by each call (ctypes.util runs ldconfig)
    plain.usable()
    for tool in registry():
        for model in (tool.Input, tool.Output):
            if isinstance(model, type) and issubclass(model, DeclaredModel):
                model.model()


def _fingerprint() -> list[tuple[str, int, int]]:
    """codebelt's loaded files with their size and modification time, and the directories of the
    module search path (installing, removing or upgrading a package changes theirs)."""
    paths = [getattr(m, "__file__", None) for name, m in list(sys.modules.items()) if name.split(".")[0] == "codebelt"]
    out = []
    for path in [p for p in paths if p] + [p for p in sys.path if p]:
        try:
            st = os.stat(path)
        except OSError:
            out.append((path, -1, -1))
            continue
        out.append((path, st.st_size, st.st_mtime_ns))
    return sorted(out)


def _child(conn: _socket.socket, own_key: str, channel: _socket.socket, kept: Kept) -> None:
    """One call, in a fork of the helper: checked, set up as the caller's process, run."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    if not peer_allowed(conn):
        _log("refused peer")
        _say(conn, b"R")
        return
    head, ancillary, _, _ = conn.recvmsg(8, _socket.CMSG_SPACE(4 * struct.calcsize("i")))
    fds = _received_fds(ancillary)
    if len(head) != 8 or len(fds) != 4 or struct.unpack("!Q", head)[0] > MAX_REQUEST:
        _log("refused request")
        _say(conn, b"R")
        return
    size = struct.unpack("!Q", head)[0]
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(1 << 20, size - len(data)))
        if not chunk:
            return
        data += chunk
    request = marshal.loads(data)  # from a process of this user that nothing confines (checked above)
    if request["key"] != own_key:
        _log("refused key")
        _say(conn, b"R")
        return
    if request["gid"] != os.getgid() or request["groups"] != sorted(os.getgroups()):
        _log("refused groups")
        _say(conn, b"R")
        return
    if not _limit(request["limits"]):
        _log("refused limits")
        _say(conn, b"R")
        return
    pidfd = os.pidfd_open(os.getpid())
    conn.sendmsg([b"P"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("i", pidfd))])
    os.close(pidfd)
    os.setsid()
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    os.fchdir(fds[3])
    for fd in fds:
        os.close(fd)
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    _streams(request["streams"])
    _log("served")
    if os.environ.get("CODEBELT_HELPER_WATCHES", "1").lower() not in ("0", "off", "no", "false"):
        from ..checkpoints import keeping

        keeping.install(CallKeeper(channel, kept))
    code = _run(conn, request["argv"])
    if os.environ.get("CODEBELT_HELPER_LOG"):
        import resource

        # this child's CPU time since the fork, and its commands': what the call cost the machine
        cpu = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                    resource.getrusage(resource.RUSAGE_CHILDREN)))
        _log("done", f"{code} {cpu * 1000:.1f}")
    conn.sendall(b"X %d\n" % code)
    os._exit(code)


def _limit(limits: dict[str, list[int]]) -> bool:
    """The caller's resource limits, where this process may take them (never higher than its own
    hard limits: then the call runs in the caller's process)."""
    import resource

    for name, (soft, hard) in limits.items():
        which = getattr(resource, name, None)
        if which is None:
            continue
        _, our_hard = resource.getrlimit(which)
        if our_hard != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > our_hard):
            return False
        try:
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            return False
    return True


def _streams(specs: list[list]) -> None:
    """sys.stdin/stdout/stderr over the caller's descriptors, as its interpreter had them."""
    for fd, name, (encoding, errors, line_buffering, write_through) in zip((0, 1, 2), ("stdin", "stdout", "stderr"),
                                                                          specs):
        stream = open(fd, "r" if fd == 0 else "w", encoding=encoding, errors=errors, closefd=False,
                      buffering=-1)
        if fd:
            stream.reconfigure(line_buffering=line_buffering, write_through=write_through)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _run(conn: _socket.socket, argv: list[str]) -> int:
    import atexit
    import signal
    import tempfile
    import threading

    tempfile.tempdir = None  # from the caller's TMPDIR, not the helper's
    sys.argv = ["codebelt", *argv]

    def caller_gone() -> None:
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)  # the CLI turns it into a clean stop

    threading.Thread(target=caller_gone, daemon=True).start()
    from . import main

    try:
        code = int(main(argv, use_helper=False) or 0)
    except SystemExit as e:  # argparse's usage errors and --help
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # as the interpreter would: the traceback on the caller's stderr
        import traceback

        traceback.print_exc()
        code = 1
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    return code


# -- checkpoints' watches kept between calls -------------------------------------------------------
KEPT_STATES = 8  # workspaces whose tracker state is kept, least recently used dropped first
KEPT_ENTRIES = 500_000  # entries kept in all (about 300 bytes each in this process)
KEPT_WAIT_S = 5.0  # a call waits this long for this process's answer, then walks afresh
MAX_KEPT_MESSAGE = 512 << 20


class Kept:
    """The tracker states of recent calls (see `checkpoints.keeping`), in the helper: each
    workspace's inotify descriptor, watches and entries, lent to one call at a time.

    A call is a fork of the helper, so it already holds every state as it was when it was
    forked; it asks (`take`, naming the state's version) and is told whether that copy is the
    current one and nobody else has it. It hands the state back at its end: the entries that
    changed (`give`, applied here to the same version), or a state of its own — a descriptor
    passed over the socket — when it walked afresh. A call that ends without handing back what
    it took (killed, crashed) takes the state with it: the descriptor's queue was read by a
    process that is gone, so the state is dropped and the next call walks afresh."""

    def __init__(self) -> None:
        from collections import OrderedDict

        self.states: OrderedDict[str, list] = OrderedDict()  # key → [KeptState, version, holder or None]
        self.version = 0

    # in the helper ------------------------------------------------------------------------------
    def hear(self, channel: _socket.socket) -> bool:
        """One message from a call; False when the call is gone (what it held is dropped)."""
        try:
            message, fd = _read_message(channel)
        except (OSError, ValueError, EOFError):
            self._gone(channel)
            return False
        try:
            op, key = message["op"], message["key"]
            if op == "take":
                rec = self.states.get(key)
                ok = rec is not None and rec[1] == message["version"] and rec[2] is None
                if ok:
                    rec[2] = channel
                channel.sendall(b"Y" if ok else b"N")
            elif op == "drop":
                if self._held(key, channel):
                    self._drop(key, "the call could not use it")
            elif op == "give":
                self._given(key, channel, message["state"], fd)
                fd = -1
        except Exception as e:  # noqa: BLE001 - a message this process cannot use costs that state, never the helper
            _log("kept", f"bad message: {type(e).__name__}")
            self._gone(channel)
            return False
        finally:
            if fd >= 0:
                os.close(fd)
        return True

    def _gone(self, channel: _socket.socket) -> None:
        for key in [k for k, rec in self.states.items() if rec[2] is channel]:
            self._drop(key, "its call ended without handing it back")

    def _held(self, key: str, channel: _socket.socket) -> bool:
        rec = self.states.get(key)
        return rec is not None and rec[2] is channel

    def _given(self, key: str, channel: _socket.socket, wire: dict, fd: int) -> None:
        from ..checkpoints import keeping

        rec = self.states.get(key)
        if wire["full"]:
            if rec is not None and rec[2] not in (None, channel):
                os.close(fd)  # another call holds this workspace's state: it hands it back
                return
            state = keeping.from_wire(wire, fd)
            if rec is not None:
                self._drop(key, "replaced")
        else:
            if fd >= 0:
                os.close(fd)
            if rec is None or rec[2] is not channel:
                return
            state = keeping.from_wire(wire, rec[0].journal.fd, into=rec[0])
            del self.states[key]
        self.version += 1
        self.states[key] = [state, self.version, None]
        self._bound()

    def _bound(self) -> None:
        total = sum(rec[0].size() for rec in self.states.values())
        for key in list(self.states):
            if len(self.states) <= KEPT_STATES and total <= KEPT_ENTRIES:
                break
            rec = self.states[key]
            if rec[2] is None:
                total -= rec[0].size()
                self._drop(key, "least recently used")

    def _drop(self, key: str, why: str) -> None:
        rec = self.states.pop(key, None)
        if rec is not None:
            os.close(rec[0].journal.fd)
            _log("kept", f"dropped: {why}")

    def close(self) -> None:
        for key in list(self.states):
            self._drop(key, "the helper ends")


class CallKeeper:
    """The keeper of one call (a fork of the helper): takes its workspace's state from the
    copy it was forked with, when the helper says that copy is current and free."""

    def __init__(self, channel: _socket.socket, kept: Kept) -> None:
        self.channel, self.kept = channel, kept
        self.taken: dict[str, object] = {}

    def take(self, key: str):
        rec = self.kept.states.get(key)
        if rec is None:
            _log("watches", "fresh: none kept")
            return None
        try:
            self.channel.settimeout(KEPT_WAIT_S)
            _send_message(self.channel, {"op": "take", "key": key, "version": rec[1]})
            answer = self.channel.recv(1)
        except OSError:
            answer = b""
        if answer != b"Y":
            _log("watches", "fresh: in use or changed")
            return None
        self.taken[key] = rec[0]
        _log("watches", "kept")
        return rec[0]

    def give(self, key: str, state) -> None:
        from ..checkpoints import keeping

        base = self.taken.pop(key, None)
        try:
            if state is None or state.size() > KEPT_ENTRIES:
                if base is not None:
                    _send_message(self.channel, {"op": "drop", "key": key})
                _log("watches", "given: none")
                return
            wire = keeping.to_wire(state, base.entries if base is not None else None)  # type: ignore[attr-defined]
            _send_message(self.channel, {"op": "give", "key": key, "state": wire},
                          fd=state.journal.fd if base is None else None)
            _log("watches", f"given: {'part' if base is not None else 'full'} overflows={state.overflows}")
        except (OSError, ValueError):
            pass  # the helper is gone: the next call walks afresh


def _send_message(sock: _socket.socket, message: dict, fd: int | None = None) -> None:
    data = marshal.dumps(message)
    head = struct.pack("!Q", len(data))
    if fd is None:
        sock.sendall(head + data)
        return
    sent = sock.sendmsg([head, data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("i", fd))])
    if sent < len(head) + len(data):
        sock.sendall(memoryview(head + data)[sent:])


def _read_message(sock: _socket.socket) -> tuple[dict, int]:
    """One message from a call, and the descriptor sent with it (-1: none)."""
    sock.settimeout(KEPT_WAIT_S)
    head, ancillary, _, _ = sock.recvmsg(8, _socket.CMSG_SPACE(struct.calcsize("i")), _socket.MSG_CMSG_CLOEXEC)
    fds = _received_fds(ancillary)
    try:
        if not head:
            raise EOFError()
        while len(head) < 8:
            more = sock.recv(8 - len(head))
            if not more:
                raise EOFError()
            head += more
        size = struct.unpack("!Q", head)[0]
        if size > MAX_KEPT_MESSAGE or len(fds) > 1:
            raise ValueError("message too large")
        data = bytearray()
        while len(data) < size:
            chunk = sock.recv(min(1 << 20, size - len(data)))
            if not chunk:
                raise EOFError()
            data += chunk
        message = marshal.loads(data)  # from a fork of this process (see `Kept`)
        if not isinstance(message, dict):
            raise ValueError("not a message")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return message, fds[0] if fds else -1


if __name__ == "__main__":
    serve(sys.argv[1])
