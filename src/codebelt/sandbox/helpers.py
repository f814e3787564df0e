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
      Landlock, which has no pid namespace, it is made a child subreaper so that whatever it
      orphans stays its descendant and `end_tree` finds it.
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
def _parents() -> dict[int, int]:
    """pid → parent pid of every process (Linux /proc)."""
    out: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        # the command name is in parentheses and may hold anything: the fields follow the last ")"
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out[int(name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, parents before their children."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = list(children.get(pid, ()))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo += children.get(p, ())
    return out


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def end_tree(pid: int, rounds: int = 50) -> None:
    """Kill `pid` and every process below it. Each one is stopped first so that none can start
    another while the tree is collected (stopped processes do not fork); the root goes last,
    because while it lives, as a subreaper or a pid namespace's parent, nothing below it can be
    orphaned away from it."""
    _signal(pid, signal.SIGSTOP)
    seen: set[int] = set()
    for _ in range(rounds):
        new = [p for p in descendants(pid) if p not in seen]
        if not new:
            break
        for p in new:
            _signal(p, signal.SIGSTOP)
        seen.update(new)
    for p in seen:
        _signal(p, signal.SIGKILL)
    _signal(pid, signal.SIGKILL)
    _signal(pid, signal.SIGCONT)  # a stopped process takes SIGKILL anyway; this is for a traced one
    deadline = time.monotonic() + 2.0
    while seen and time.monotonic() < deadline:
        seen = {p for p in seen if os.path.exists(f"/proc/{p}") and not _zombie(p)}
        if seen:
            time.sleep(0.01)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return True
    state = data[data.rfind(b")") + 2:][:1]
    return state in (b"Z", b"X")
