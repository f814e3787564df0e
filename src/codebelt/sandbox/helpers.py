"""Programs codebelt starts itself on the model's behalf — ripgrep for Glob and Grep, language
servers for LSP — run in the read-only jail like a command judged read-only: a language server
executes the workspace's own interpreter (`.venv/bin/python`) to learn its search paths, and
reads every file it is pointed at, Read-denied ones included.

`HelperProfile` says what one helper needs beside the workspace: its own installation readable,
whether it uses devices, /proc and a writable scratch (its cache, HOME and TMPDIR, thrown away
with it), and which of the caller's environment variables it sees (an allow-list: a helper
needs no credential). `Sandbox.helper(profile, masked)` gives the wrapper; `end_tree(pid)`
ends a long-lived helper with everything it started, daemons included.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# What a helper may see of the caller's environment: where programs and toolchains are, the
# locale. Nothing else — tokens and keys in the agent's environment stay out.
ENV_KEEP = ("PATH", "LANG", "LANGUAGE", "TZ", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
            "JAVA_HOME", "GOROOT", "GOPATH", "CARGO_HOME", "RUSTUP_HOME", "NODE_PATH")


@dataclass(frozen=True)
class HelperProfile:
    """What a helper needs in the jail besides the workspace (read-only) and the system dirs.

    name: for messages and the scratch directory.
    readable: its own files (the program's installation) when outside the system dirs.
    system: devices, /proc's machine entries and a private scratch (HOME, TMPDIR,
      XDG_CACHE_HOME) that lives as long as the helper — what interpreters and servers use.
      False (ripgrep): none of those, and no file writable at all.
    prefer_landlock: use Landlock before bwrap when both work (a short-lived helper started
      many times a minute: Landlock costs a fraction of a namespace set-up per start).
    long_lived: the helper may start processes that outlive their parent (a server): under
      Landlock, which has no pid namespace, it starts below a reaper (reaper.py) that ends
      exactly everything it started; without Landlock's signal scoping it is made a child
      subreaper instead, so that whatever it orphans stays its descendant and `end_tree` finds it.
    env: extra variables set for it (the user's server settings).
    markers: directories that must exist in the jail's view, empty (a repository's `.git` above
      the workspace, whose existence tells ripgrep to apply .gitignore rules).
    cgroups: join the session's process and memory cgroups. A single short-lived process bounded
      by its own RLIMIT_AS (ripgrep) gains nothing from them, and on cgroup v1 each join is a
      migration that costs milliseconds per start.
    no_processes: it may start threads but no process (seccomp), so that nothing it starts can
      outlive it under Landlock (bwrap's pid namespace ends everything with it anyway).
    """

    name: str
    readable: tuple[Path, ...] = ()
    system: bool = True
    prefer_landlock: bool = False
    long_lived: bool = False
    env: tuple[tuple[str, str], ...] = ()
    markers: tuple[Path, ...] = ()
    cgroups: bool = True
    no_processes: bool = False


def allowed_env(base: "dict[str, str] | os._Environ[str]") -> dict[str, str]:
    """The allow-listed variables of `base`: what any helper may see, jailed or not."""
    return {k: v for k, v in base.items() if k in ENV_KEEP or k.startswith("LC_")}


def helper_env(base: dict[str, str], profile: HelperProfile) -> dict[str, str]:
    """The helper's environment: the allow-listed variables of `base`, the profile's own."""
    env = allowed_env(base)
    env.update(profile.env)
    return env


def install_dirs(program: str | os.PathLike[str], untrusted: "tuple[Path, ...] | list[Path]" = ()) -> list[Path]:
    """The directories a program's installation lives in, to make readable in the jail: the
    directory it is named in and the one it really is in, the installation prefix above a
    `bin` directory (an interpreter's library, a virtual environment's packages), the outermost
    `node_modules` above it (a Node program loads its packages from there), and the same for
    the interpreter a script's first line names. Never the home directory or a tree that holds
    it, nor ~/.local as a whole (it keeps other programs' state and keyrings). A program reached
    through `untrusted` (the directories a command may write) is the repository's: where its link
    leads and what its first line names are not followed (it could name ~/.ssh); what it needs
    inside those directories is visible there anyway."""
    from .jail import resolved_outside

    out: list[Path] = []
    named = Path(os.path.abspath(program))
    out += _with_prefix(named)
    real_s = resolved_outside(str(named), untrusted, directory=False) if untrusted else os.path.realpath(named)
    if real_s is None:
        return [d for d in dict.fromkeys(out) if _not_home_wide(d)]
    real = Path(real_s)
    out += _with_prefix(real)
    parts = real.parts
    if "node_modules" in parts:
        out.append(Path(*parts[: parts.index("node_modules") + 1]))
    try:
        with open(real, "rb") as f:
            first = f.readline(512)
    except OSError:
        first = b""
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words and words[0].startswith("/"):
            interpreter = resolved_outside(words[0], untrusted, directory=False) if untrusted else words[0]
            if interpreter is not None:
                out += _with_prefix(Path(words[0])) + _with_prefix(Path(os.path.realpath(interpreter)))
    return [d for d in dict.fromkeys(out) if _not_home_wide(d)]


def _with_prefix(path: Path) -> list[Path]:
    out = [path.parent]
    prefix = path.parent.parent
    if path.parent.name == "bin" and ((prefix / "pyvenv.cfg").is_file() or (prefix / "lib").is_dir()):
        out.append(prefix)
    return out


def _not_home_wide(d: Path) -> bool:
    home = os.path.realpath(os.path.expanduser("~"))
    real = os.path.realpath(d)
    if real == "/" or home == real or home.startswith(real.rstrip("/") + "/"):
        return False
    return real != os.path.join(home, ".local")


def python_dirs() -> list[Path]:
    """Where codebelt's own Python lives (its prefix and the one it was made from)."""
    return list(_python_dirs())


@cache
def _python_dirs() -> tuple[Path, ...]:
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix)))


# -- ending a helper with everything it started -------------------------------------------------
# Below a reaper (Landlock with signal scoping) the reaper ends it. Else, without a pid namespace
# (Landlock on older kernels), the tree is found in /proc, which is not one snapshot: it is
# read process by process while the tree may change. What makes the answer exact:
# - every process found is stopped, and a listing counts as the last one only once every process
#   known is seen stopped (each thread in state T): SIGSTOP is delivered when the process next
#   leaves the kernel, so one still running may be finishing a fork whose child the listing
#   missed; a stopped process forks nothing, exits by itself never and reaps no child;
# - the root stays alive and stopped until everything below it is dead: as a subreaper (or a pid
#   namespace's first process) it receives whatever is orphaned meanwhile, and the tree is listed
#   again after the kill until nothing below the root lives;
# - every signal goes through a pidfd opened on a process whose start time matches the listing,
#   so a pid reused by an unrelated process after an exit is never signalled.
END_TREE_TIMEOUT = 5.0


def _stat_fields(path: str) -> list[bytes] | None:
    """The fields of a /proc stat file after the command name (state first), or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the command name is in parentheses and may hold anything: the fields follow the last ")"
    return data[data.rfind(b")") + 2:].split()


def _table() -> dict[int, tuple[int, int, bytes]]:
    """pid → (parent pid, start time, state) of every process (Linux /proc). The parent pid is
    the parent's thread group, so the children of every thread of a process are its children."""
    out: dict[int, tuple[int, int, bytes]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            fields = _stat_fields(f"/proc/{name}/stat")
            if fields and len(fields) > 19:
                out[int(name)] = (int(fields[1]), int(fields[19]), fields[0][:1])
    return out


def _below(pid: int, table: dict[int, tuple[int, int, bytes]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo += children.get(p, ())
    return out


def _lives(pid: int, state: bytes) -> bool:
    """Whether a process listed in `state` still runs code: a thread group whose first thread
    exited shows that thread's zombie state while its other threads run on."""
    if state not in (b"Z", b"X"):
        return True
    return any(s not in (b"Z", b"X") for _, s in _thread_states(pid))


def _thread_states(pid: int) -> list[tuple[str, bytes]]:
    """(thread id, state letter) of each thread of `pid` (none once it is gone); X for a thread
    that went while it was read."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out = []
    for tid in tids:
        fields = _stat_fields(f"/proc/{pid}/task/{tid}/stat")
        out.append((tid, fields[0][:1] if fields else b"X"))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    return _below(pid, _table())


class _Process:
    """One process found in the tree, held by a pidfd: its number may be reused once it is
    reaped, the pidfd never refers to another process."""

    def __init__(self, pid: int, start: int | None):
        self.pid = pid
        self.fd: int | None = None
        self.gone = False
        try:
            self.fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.gone = True
            return
        except OSError:
            pass  # no pidfds (a kernel older than 5.3): plain signals, checked by start time
        if start is not None and _start_time(pid) != start:
            self.close()  # the number is another process's now: the one listed is gone
            self.gone = True

    def signal(self, sig: int) -> None:
        if self.gone:
            return
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except OSError:
            pass

    def dead(self) -> bool:
        """Exited (a zombie or reaped): whatever it had below it has been handed on already."""
        if self.gone:
            return True
        if self.fd is not None:  # readable once the whole thread group has exited
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            return bool(poller.poll(0))
        fields = _stat_fields(f"/proc/{self.pid}/stat")
        return not fields or fields[0][:1] in (b"Z", b"X")

    def quiet(self) -> bool:
        """Every thread stopped, or exited, or waiting for a vfork child (which exists already,
        and is listed and stopped itself): nothing this process does can change the tree."""
        if self.dead():
            return True
        for tid, state in _thread_states(self.pid):
            if state in (b"T", b"t", b"Z", b"X"):
                continue
            if state == b"D" and _in_vfork(self.pid, tid):
                continue
            return False
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _start_time(pid: int) -> int | None:
    fields = _stat_fields(f"/proc/{pid}/stat")
    return int(fields[19]) if fields and len(fields) > 19 else None


def _in_vfork(pid: int, tid: str) -> bool:
    try:
        with open(f"/proc/{pid}/task/{tid}/wchan") as f:
            where = f.read()
    except OSError:
        return False
    return where in ("kernel_clone", "wait_for_vfork_done", "do_fork", "_do_fork")


def _wait(procs: "list[_Process]", done, deadline: float) -> None:
    pause = 0.0005
    while time.monotonic() < deadline and not all(done(p) for p in procs):
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def end_tree(pid: int, timeout: float = END_TREE_TIMEOUT) -> None:
    """Kill `pid` and every process below it. The caller has not reaped `pid` (its number is
    still that process's). The root goes last, because while it lives, as a subreaper or a pid
    namespace's first process, nothing below it can be orphaned away from it. Bounded by
    `timeout` (a process stuck in the kernel that never stops): then whatever was found is
    killed anyway.

    A helper started below a reaper (reaper.py: Landlock with signal scoping) is ended by it,
    exactly; the process table below is the way where there is none (older kernels), or if the
    reaper does not finish in time."""
    deadline = time.monotonic() + timeout
    from . import reaper

    if reaper.end(pid, timeout):
        return
    root = _Process(pid, None)
    known: dict[tuple[int, int], _Process] = {}
    try:
        root.signal(signal.SIGSTOP)
        _wait([root], _Process.quiet, deadline)
        _collect(pid, known, deadline)
        # Kill below the root first, the root still stopped: what they orphan as they die goes
        # to the root, and is found by listing again once they are dead.
        while True:
            for p in known.values():
                p.signal(signal.SIGKILL)
            _wait(list(known.values()), _Process.dead, deadline)
            table = _table()
            if not any(_lives(q, table[q][2]) for q in _below(pid, table)):
                break
            if time.monotonic() >= deadline:
                break
            _collect(pid, known, deadline)
    finally:
        root.signal(signal.SIGKILL)
        root.signal(signal.SIGCONT)  # a stopped process takes SIGKILL anyway; this is for a traced one
        root.close()
        for p in known.values():
            p.close()


def _collect(pid: int, known: "dict[tuple[int, int], _Process]", deadline: float) -> None:
    """Stop every process below `pid` into `known`, until a listing made once every process
    known was seen stopped finds none new."""
    while True:
        table = _table()
        new = []
        for q in _below(pid, table):
            key = (q, table[q][1])
            if key not in known and _lives(q, table[q][2]):
                known[key] = proc = _Process(q, key[1])
                proc.signal(signal.SIGSTOP)
                new.append(proc)
        if not new or time.monotonic() >= deadline:
            return
        _wait(list(known.values()), _Process.quiet, deadline)
