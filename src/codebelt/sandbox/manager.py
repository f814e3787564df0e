"""One session's OS sandbox for Bash commands: choose a backend, probe it once, wrap each command.

`Sandbox(config)` is what the runner and the permission layer use:

- `.status -> SandboxStatus`: is a sandbox active, which backend, and why.
- `.wrapper()`: None when commands run unsandboxed (mode `off`, or `auto` with no working
  backend), else a function `(argv, cwd, env) -> (argv', env', preexec_fn)` to spawn with.
  Raises `SandboxUnavailable` when the settings demand a sandbox that does not work here
  (`required`, or a forced `bwrap` / `landlock`).
- `.jail_wrapper(masked)`: the read-only jail (jail.py) for commands that run without asking
  because they were judged read-only, or None when no backend can build one here; `.jail` says
  which backend builds it, or why none does.
- `.explain_denial(output_tail, exit_code) -> str | None`: a sentence when a failed command
  looks blocked by the sandbox, naming the setting that would allow it.

Resource limits (limits.py) are applied whenever a sandbox is active, and only then: with the
sandbox off, commands run exactly as the user's shell would run them.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import SandboxUnavailable
from . import bwrap as _bwrap
from . import denial as _denial
from . import jail as _jail
from . import protected
from . import native as _native
from . import seccomp as _seccomp
from .config import SandboxConfig
from .cover_checks import cover_specs, moved_since_walk, placed, refused, stage_argv, sweep, watched
from .credentials import MAX_GITCONFIG, credential_paths, filtered_gitconfig, gitconfig_paths
from .helpers import HelperProfile, helper_env, python_dirs
from .limits import MemoryCap, ProcessCap, apply_rlimits, rlimits
from .protected import placeholders
from .stage_python import base_interpreter, exposed
from .watched import WatchedLookups

if TYPE_CHECKING:
    from ..network.proxy import Attachment

__all__ = ["Sandbox", "SandboxStatus", "SandboxUnavailable"]

Wrapper = Callable[[list[str], Path, dict], tuple[list[str], dict, Callable[[], None] | None]]
PROBE_TIMEOUT = 10.0
_ALLOC_FAILED = re.compile(r"Cannot allocate memory|MemoryError|std::bad_alloc|out of memory|memory exhausted", re.I)
TRUE = next((p for p in ("/usr/bin/true", "/bin/true") if os.access(p, os.X_OK)), "true")
# The interpreter of the stage and the residents inside bwrap (stage.py, resident.py): the one
# codebelt's environment was made from, by its real path — not a copy in a virtual environment a
# command may write (stage_python.py).
STAGE_PYTHON = base_interpreter()
MAX_RULESETS = 16  # Landlock rulesets kept per session (one per set of masks and readable paths)
MAX_RETIRED = 64  # replaced rulesets kept open for spawns that may still be using them
MAX_RESIDENT_STARTS = 8  # resident jails started per session (again after a root was replaced); then one-shot
PR_SET_CHILD_SUBREAPER = 36


class Wrapped(Sequence):
    """(argv, env, preexec) as every wrapper returns it, and `launch`: None, or a function
    `launch({fd in the command: fd here})` starting the command in the session's resident jail,
    returning a Popen-like process (or None when the resident cannot take it). The items may
    be built when first read (`build`): with a resident, most commands never need the one-shot
    argv, whose paths cost ~0.2 ms to work out."""

    def __init__(self, items=None, launch=None, build: "Callable[[], tuple] | None" = None):
        self._items = tuple(items) if items is not None else None
        self._build = build
        self.launch = launch

    def _all(self) -> tuple:
        if self._items is None:
            self._items = tuple(self._build())
            self._build = None
        return self._items

    def __getitem__(self, index):
        return self._all()[index]

    def __len__(self) -> int:
        return 3 if self._items is None else len(self._items)  # known without building them


@cache
def _stage_source(layer: bool = True) -> str:
    """stage.py's source, with the Landlock write layer's in front (`layer`) or alone (it then
    only checks the masks: the write sandbox, a jail without Landlock)."""
    from .write_layer import with_write_layer

    if layer:
        return with_write_layer("stage.py")
    return (Path(__file__).parent / "stage.py").read_text(encoding="utf-8")


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _identity(path: "Path | str", follow: bool) -> tuple | None:
    """What tells a file's version apart without reading it: its identity, mode, size and times."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file (not a link) holding exactly `data`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(data) + 1) == data
    except OSError:
        return False
    finally:
        os.close(fd)


@dataclass(frozen=True)
class SandboxStatus:
    active: bool
    backend: str | None  # "bwrap" | "landlock" | None
    mode: str  # the sandbox.mode setting
    reason: str  # why this backend, or why none
    network: bool  # whether sandboxed commands may use the network
    protected_paths: bool = False  # protected paths inside the workspace are read-only
    process_limit: str = ""  # how the process cap is enforced (or why it is not)
    memory_limit: str = ""  # how the memory cap is enforced (or why it is not)
    jail: str | None = None  # backend of the read-only jail, None when there is none
    jail_reason: str = ""  # what the jail enforces, or why there is none


@dataclass(frozen=True)
class JailStatus:
    backend: str | None  # "bwrap" | "landlock" | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Sandbox:
    """One session's sandbox: the chosen backend, its probe result and its resources.

    Created once per session (a session service); `close()` (at session end)
    kills what is left in the session cgroup, removes it, closes the Landlock ruleset and removes
    the empty protected-path placeholders it created.
    """

    closes_last = True  # a session closes it after what runs inside it (commands, helpers)
    # sandboxed (bwrap) commands start in the session's resident write sandbox, once it has
    # started in the background ("now": started by the first command, which waits for it); False:
    # one bwrap each (what the PTY path and the fallback spawn anyway)
    resident_sandbox: "bool | str" = True

    def __init__(self, config: SandboxConfig):
        self.cap: ProcessCap | None = None
        self.memory: MemoryCap | None = None
        self.ruleset = None  # landlock.Ruleset when that backend is chosen
        self.bwrap_path: str | None = None
        self._made: list[Path] = []  # placeholders this session created
        self._lock = threading.Lock()
        self._probe_lock = threading.Lock()  # the probe wraps through methods that take _lock
        self.config = config
        self._rulesets: dict[tuple, tuple[tuple, Any]] = {}  # the jail's Landlock rulesets (least recent first)
        self._retired: list[Any] = []  # rulesets replaced while a spawn may still use them: closed at the end
        self._landlock_abi = 0  # usable for the jail (0: not, or sandbox.mode is bwrap)
        self._stage_abi = 0  # the Landlock layer inside a bwrap jail (0: none)
        self._landlock_helpers: bool | None = None  # whether helpers that prefer Landlock get it
        self._jail_root: Path | None = None  # scratch directories of Landlock-jailed commands
        self._jail_root_made = False
        self._filters: dict[tuple[frozenset[int], bool, bool], _seccomp.SocketFilter] = {}
        self._resident_lock = threading.Lock()
        self._resident = None  # residency.ResidentJail: where jailed Bash commands start (resident.py)
        self._resident_starts = 0
        self._resident_old: list[Any] = []  # replaced ones, ended at close (their commands may run)
        self._resident_failed = ""  # why the resident jail does not work here ("" until it failed)
        self._sandbox_resident = None  # resident_sandbox.ResidentSandbox: where sandboxed commands start
        self._split_in_roots: list[Path] = []  # writable directories the last masked Landlock rules split
        self._private: Path | None = None  # filtered copies of the user's git configuration
        # (what each copy was made from: the original's identity and times, the copy's) -> copies
        self._gitconfig_made: "tuple[tuple, list[tuple[Path, Path]]] | None" = None
        self._merged_binds: "tuple[Any, Any, list[tuple[Path, str]]] | None" = None
        self._lookups = WatchedLookups()  # PATH directories and credential files, kept while unchanged
        self._placed: list[tuple] = []  # covers of recent one-shot sandboxes (cover_checks.sweep)
        status = self._select()
        self.jail = self._select_jail(status)
        self._jail_caps()
        self.status = SandboxStatus(**{**asdict(status), "jail": self.jail.backend, "jail_reason": self.jail.reason})

    # -- selection -------------------------------------------------------------------------
    def _select(self) -> SandboxStatus:
        c = self.config
        if c.mode == "off":
            return SandboxStatus(False, None, "off", "sandbox.mode is off: Bash commands run "
                                 "without an OS sandbox", c.network)
        self.cap = ProcessCap(c.limits, c.name)
        self.memory = MemoryCap(c.limits, c.name)
        tried: list[str] = []
        order = {"bwrap": ["bwrap"], "landlock": ["landlock"]}.get(c.mode, ["bwrap", "landlock"])
        for backend in order:
            ok, why = self._probe_bwrap() if backend == "bwrap" else self._probe_landlock()
            if ok:
                if tried:
                    why = f"{why}; {'; '.join(tried)}"
                return SandboxStatus(
                    True, backend, c.mode, why, c.network,
                    protected_paths=backend == "bwrap", process_limit=self.cap.reason,
                    memory_limit=self.memory.reason,
                )
            tried.append(f"{backend}: {why}")
        self.cap.close()
        self.cap = None
        self.memory.close()
        self.memory = None
        if c.mode == "auto":
            reason = "no sandbox works here, Bash commands run unsandboxed (" + "; ".join(tried) + ")"
        else:
            reason = f"sandbox.mode is {c.mode} but no sandbox works here (" + "; ".join(tried) + ")"
        return SandboxStatus(False, None, c.mode, reason, c.network)

    def _probe_bwrap(self) -> tuple[bool, str]:
        path = _bwrap.find_bwrap()
        if path is None:
            return False, "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        self.bwrap_path = path
        why = self._stage_exposed()
        if why:
            return False, why
        ok, err, code = self._run_probe("bwrap")
        if ok:
            return True, f"bubblewrap ({path}): filesystem read-only outside the writable roots, " + (
                "network allowed" if self.config.network else
                "network only to the allowed domains, through codebelt's proxy" if self.config.domains else
                "network off"
            )
        return False, _bwrap.explain_failure(err, code)

    def _probe_landlock(self) -> tuple[bool, str]:
        from . import landlock

        abi, why = landlock.abi_version()
        if abi <= 0:
            return False, why
        try:
            self.ruleset = landlock.Ruleset(list(self.config.writable), self.config.network, abi)
        except OSError as e:
            return False, f"cannot build a Landlock ruleset: {e}"
        ok, err, code = self._run_probe("landlock")
        if not ok:
            self.ruleset.close()
            self.ruleset = None
            return False, f"Landlock failed to run `true` ({err.strip() or f'exit code {code}'})"
        if self.config.network:
            net = "network allowed"
        elif self.config.domains:
            net = ("network off: domain filtering (sandbox.network's domain lists) needs bubblewrap's network "
                   "namespace, which Landlock does not have")
        elif _seccomp.supported()[0]:
            net = "network off (seccomp: no socket but netlink" + (
                ", Unix sockets allowed)" if self.config.allow_unix_sockets else ")")
        elif abi >= 4:
            net = "TCP connect/bind denied (UDP is not covered: no seccomp filter for this machine)"
        else:
            net = f"network NOT restricted (ABI {abi} < 4 has no network rules)"
        return True, (
            f"Landlock ABI {abi}: writes only inside the writable roots, {net}; protected paths "
            "inside the workspace are not read-only under Landlock"
        )

    def _run_probe(self, backend: str) -> tuple[bool, str, int]:
        if backend.startswith("jail-"):
            return self._probe_with(lambda argv, cwd, env: self._wrap_jail(backend, argv, cwd, env, []))
        return self._probe_with(lambda argv, cwd, env: self._wrap(backend, argv, cwd, env, create=False))

    def _stage_exposed(self) -> str | None:
        """Why bwrap must not be used: the Python that runs inside it before its checks (the
        stage, the residents) could be changed by a sandboxed command."""
        why = exposed(STAGE_PYTHON, self.config.writable)
        return (f"codebelt's Python runs inside bwrap before the masks are checked, and {why}: run codebelt "
                "on a Python installed outside the workspace") if why else None

    # -- wrapping --------------------------------------------------------------------------
    @property
    def filters_domains(self) -> bool:
        """Whether commands reach the allowed names through the proxy (`sandbox.network` is an
        object and bwrap holds each command to its empty network namespace)."""
        return self.config.domains and self.status.active and self.status.backend == "bwrap"

    def wrapper(self, masked: "Callable[[], list[Path]] | None" = None, unasked: bool = False,
                network: "Attachment | None" = None) -> Wrapper | None:
        """The write sandbox's wrapper. `masked`: asked as each command starts, the paths it
        may not read (the session's Read deny rules): the person approved a command, not the
        reading of what the settings deny. `unasked`: for a command no person approved (auto-
        allowed because the sandbox contains it): the user's credential files are masked too,
        and git's global configuration is shown filtered (`credentials.py`). `network`: this
        command's way out through the proxy (network/proxy.py), used under bwrap only; the
        wrapper's cleanup closes it when the command has ended."""
        if self.config.mode == "off":
            return None
        if not self.status.active:
            if self.config.mode == "auto":
                return None
            raise SandboxUnavailable(
                f"Bash commands are refused: {self.status.reason}. Install bubblewrap or enable "
                "Landlock, or change the sandbox.mode setting (auto runs commands unsandboxed "
                "when no sandbox works)."
            )
        backend = self.status.backend
        if network is not None and backend != "bwrap":
            network.close()
            network = None

        def masks() -> list[Path]:
            out = list(masked()) if masked is not None else []
            return out + self._credentials() if unasked else out

        return lambda argv, cwd, env: self._wrap(backend, list(argv), Path(cwd), dict(env), masked=masks(),
                                                 unasked=unasked, network=network)

    def _wrap(
        self, backend: str, argv: list[str], cwd: Path, env: dict, create: bool = True,
        masked: "list[Path] | None" = None, unasked: bool = False, network: "Attachment | None" = None,
    ) -> tuple:
        c = self.config
        if c.temp_dir is not None:
            env["TMPDIR"] = str(c.temp_dir)
        if network is not None:
            from ..network.environment import proxy_environment, stage_command

            env, names = proxy_environment(env)
            argv = stage_command(network.child_fd, names, argv)
        cap, memory = self.cap, self.memory
        nproc = cap.nproc_limit() if cap else None
        pairs = rlimits(c.limits, nproc, memory.address_space if memory else None)
        sockets = self._socket_filter(backend)
        install = sockets.install_in_child if sockets else None
        launch = None
        if backend == "bwrap":
            if create:
                self._make_placeholders()
            binds = self._protected_binds() if create else []
            overlays = self._gitconfig_copies() if unasked else []
            planned = self._mask_plan(masked or ())
            if overlays and masked:
                # a Read deny rule on a directory above git's configuration (`Read(~/.config/**)`)
                # hides it, filtered copy included (and a bind into the empty cover would fail)
                hidden = [p for p, is_dir in planned if is_dir]
                overlays = [(src, dest) for src, dest in overlays if not _jail._covered(dest, hidden)]
            # the proxy's channel and a process cap counted at each spawn stay one-shot
            # (resident_sandbox.py says why), and a program named without its path (bwrap looks
            # it up in PATH, the resident does not)
            if create and network is None and nproc is None and self.resident_sandbox and argv[0].startswith("/"):
                launch = self._sandbox_launch(pairs, install, argv, cwd, env, binds, masked or [], overlays, planned)
            # bwrap mounts the masks by path: those a command could move are checked inside,
            # before the command (stage.py), against their directories as they are now
            seen = watched(masked or (), c.writable, self._mask_targets(masked or ()))
            command = argv

            def one_shot_argv() -> list[str]:
                # built when first read: not for a command the resident sandbox takes
                args = _bwrap.sandbox_args(c, cwd, protect=create, masked=masked or (), overlays=overlays,
                                           binds=binds)
                specs = cover_specs(args, c.writable, seen)
                inner = stage_argv(STAGE_PYTHON, _stage_source(layer=False), 0, [], specs, command) if specs else command
                if specs:
                    covers_placed = placed(args, c.writable)
                    with self._lock:
                        self._placed = sweep(self._placed) + covers_placed
                return [self.bwrap_path or "bwrap", *args, "--", *inner]

            restrict = None
        elif masked:
            # Landlock's rules are opened by path: a directory swapped since the walk refuses
            moved = moved_since_walk(masked, c.writable)
            restrict = self._masked_write_ruleset(masked).restrict_in_child
            moved = moved or moved_since_walk(masked, c.writable)
            argv = refused(moved) if moved else argv
        else:
            self._split_in_roots = []
            restrict = self.ruleset.restrict_in_child
        preexec = self._preexec(pairs, restrict, install)
        if backend == "bwrap":
            if network is not None:  # (…, cleanup, descriptors the child inherits)
                return one_shot_argv(), env, preexec, network.close, (network.child_fd,)
            return Wrapped(launch=launch, build=lambda: (one_shot_argv(), env, preexec))
        return Wrapped((argv, env, preexec), launch)  # (a network by domain is bwrap's alone: `wrapper`)

    def _sandbox_launch(self, pairs, install, argv: list[str], cwd: Path, env: dict,
                        binds: list[tuple[Path, str]], masked: list[Path],
                        overlays: list[tuple[Path, Path]],
                        planned: "list[tuple[Path, bool]] | None" = None) -> "Callable[[dict[int, int]], Any] | None":
        """`launch(fds)` starting this command in the session's resident write sandbox
        (resident_sandbox.py) with the protected paths, masks and overlays of this moment; None
        when there is none here (the one-shot argv is spawned then)."""
        from . import resident_sandbox as _rs
        from .residency import ResidentJail, resident_source

        def start():
            argv = _rs.start_argv(self.bwrap_path or "bwrap", self.config, STAGE_PYTHON, resident_source())
            resident = ResidentJail(argv, {"PATH": os.defpath, "LANG": "C.UTF-8"},
                                    self._preexec(pairs, None, install), Path("/"), _rs.prepared(self.config.network),
                                    native=_native.open_extension(self.config.writable))
            # `true` through a command's whole set-up: where a step of it is refused here (a pty
            # instance, a second /proc), every command would fail; the one-shot argv runs them
            with tempfile.TemporaryFile() as err:
                try:
                    probe = resident.launch(_rs.command_request([TRUE], {}, Path("/"), [], [], [], self.config.network),
                                            {1: err.fileno(), 2: err.fileno()})
                    if probe.wait(PROBE_TIMEOUT) != 0:
                        err.seek(0)
                        raise OSError(f"`true` failed in it ({err.read(300).decode(errors='replace').strip()})")
                except BaseException:
                    resident.close()
                    raise
            return resident

        with self._resident_lock:
            if self._sandbox_resident is None:
                self._sandbox_resident = _rs.ResidentSandbox(start, self.config.writable,
                                                             wait=self.resident_sandbox == "now")
            slot = self._sandbox_resident
        return slot.launcher(_rs.command_request(argv, env, cwd, binds, masked, overlays, self.config.network,
                                                 self.config.writable, planned))

    def _preexec(self, pairs, restrict, install_filter, subreaper: bool = False,
                 cgroups: bool = True, reaper=None) -> Callable[[], None]:
        cap, memory = (self.cap, self.memory) if cgroups else (None, None)
        libc = None
        if subreaper:
            from .landlock import _syscall

            libc = _syscall()
        split = reaper.split_in_child if reaper is not None else None

        def preexec() -> None:  # runs in the child between fork and exec
            if split is not None:
                split()  # this process becomes the helper's reaper (reaper.py); its child goes on
            apply_rlimits(pairs)
            if cap is not None:
                cap.join_in_child()
            if memory is not None:
                memory.join_in_child()
            if libc is not None and libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                # kept across exec: what the helper orphans stays its descendant, so ending it
                # can end all of it (there is no pid namespace under Landlock)
                raise OSError("prctl(PR_SET_CHILD_SUBREAPER) failed")
            if restrict is not None:
                restrict()
            if install_filter is not None:
                install_filter()

        return preexec

    def _socket_filter(self, backend: str | None, jailed: bool = False,
                       no_processes: bool = False) -> "_seccomp.SocketFilter | None":
        """Which socket families a command may create. Network on: any (no filter). Off: netlink
        only — plus TCP/UDP under bwrap, whose network namespace has nothing but its own loopback
        (a test server on 127.0.0.1 keeps working; bwrap itself needs one to bring that loopback
        up), and Unix sockets only with `sandbox.allowUnixSockets` (a path socket reaches the
        host's docker.sock or ssh-agent through the filesystem, which no namespace separates).
        The jail: the same, never Unix sockets."""
        if self.config.network and not jailed:
            return None
        if not _seccomp.supported()[0]:
            return None
        families = {_seccomp.AF_NETLINK}
        if backend in ("bwrap", "jail-bwrap"):
            families |= {_seccomp.AF_INET, _seccomp.AF_INET6}
        if self.config.allow_unix_sockets and not jailed:
            families.add(_seccomp.AF_UNIX)
        key = (frozenset(families), jailed, no_processes)
        with self._lock:
            if key not in self._filters:
                self._filters[key] = _seccomp.SocketFilter(*key)
            return self._filters[key]

    # -- the read-only jail ----------------------------------------------------------------
    def _select_jail(self, status: SandboxStatus) -> JailStatus:
        if not self.config.jail:
            return JailStatus(None, "sandbox.jail is off: commands judged read-only run unjailed, and only "
                              "programs whose arguments are all modelled run without asking")
        ok_filter, why_filter = _seccomp.supported()
        if not ok_filter:
            return JailStatus(None, f"no read-only jail: {why_filter}")
        from . import landlock

        abi, why = landlock.abi_version()
        self._landlock_abi = abi if self.config.mode != "bwrap" else 0
        tried: list[str] = []
        # a backend chosen by name is the jail's backend too
        exposed_why = self._stage_exposed()
        if self.config.mode != "landlock" and (self.bwrap_path or _bwrap.find_bwrap()) and exposed_why:
            tried.append(f"bwrap: {exposed_why}")
        elif self.config.mode != "landlock" and (self.bwrap_path or _bwrap.find_bwrap()):
            self.bwrap_path = self.bwrap_path or _bwrap.find_bwrap()
            fifo = "FIFOs in the workspace refused by a Landlock layer inside"
            self._stage_abi = abi if abi > 0 else 0
            ok, err, code = self._run_probe("jail-bwrap")
            if not ok and self._stage_abi:
                self._stage_abi = 0
                fifo = (f"FIFOs in the workspace NOT covered (a Landlock layer inside bwrap failed: "
                        f"{err.strip()[-200:] or f'exit code {code}'})")
                ok, err, code = self._run_probe("jail-bwrap")
            elif not self._stage_abi:
                fifo = f"FIFOs in the workspace NOT covered ({why}: a read-only mount does not refuse them)"
            if ok:
                return JailStatus("bwrap", "bubblewrap: only the workspace, the additional directories and "
                                  "system directories visible, all read-only; no network (an empty network "
                                  f"namespace, no Unix sockets); {fifo}")
            tried.append(f"bwrap: {_bwrap.explain_failure(err, code)}")
        if self.config.mode == "bwrap":
            tried.append("landlock: sandbox.mode is bwrap")
        elif abi > 0:
            try:
                ok, err, code = self._run_probe("jail-landlock")
                if ok:
                    return JailStatus("landlock", f"Landlock ABI {abi} + seccomp: reads only in the workspace, "
                                      "the additional directories and system directories; no writes; no sockets")
                tried.append(f"landlock: `true` failed ({err.strip() or f'exit code {code}'})")
            except OSError as e:
                tried.append(f"landlock: {e}")
        else:
            tried.append(f"landlock: {why}")
        return JailStatus(None, "no read-only jail works here (" + "; ".join(tried) + ")")

    def _jail_caps(self) -> None:
        """The jail is used whatever sandbox.mode says: its commands and helpers count against
        the session's process and memory caps even when the write sandbox is off or found
        nothing working (else they would run with no limit at all)."""
        if self.jail.backend is not None and self.cap is None:
            self.cap = ProcessCap(self.config.limits, self.config.name)
            self.memory = MemoryCap(self.config.limits, self.config.name)

    def _scratch_root(self) -> Path:
        if self._jail_root is None:
            base = self.config.temp_dir
            if base is not None:
                root = base / "jail"
                root.mkdir(mode=0o700, exist_ok=True)
            else:
                root = Path(tempfile.mkdtemp(prefix="codebelt-jail-"))
                self._jail_root_made = True
            self._jail_root = root
        return self._jail_root

    def _readable_extra(self, env: dict) -> list[Path]:
        """The PATH directories a jailed program may read: none reached through a directory a
        command may write (jail.path_dirs); kept while no directory they were resolved through
        changed (watched.py)."""
        path_var, home = env.get("PATH", os.environ.get("PATH")), env.get("HOME", os.environ.get("HOME"))
        writable = tuple(self.config.writable)
        return list(self._lookups.get(("path", path_var, home, writable),
                                      lambda consult: _jail.path_dirs(path_var, home, writable, consult)))

    def _kept_about(self, key: tuple, paths: "Sequence[Path | str]", answer: "Callable[[], Any]") -> Any:
        """`answer()`, which looks only at `paths` (following their links), kept like the PATH
        directories: until a directory one of them resolves through changes."""
        def lookup(consult):
            for p in paths:
                _jail.resolved_outside(str(p), (), directory=False, consult=consult)
            return answer()

        return self._lookups.get(key, lookup)

    def _secrets(self) -> list[str]:
        """The paths of /etc's secrets (jail.SECRETS) that exist now."""
        return self._kept_about(("secrets",), _jail.SECRETS,
                                lambda: [secret for secret in _jail.SECRETS if os.path.lexists(secret)])

    def _mask_targets(self, masked: "list[Path] | tuple[Path, ...]") -> list[Path]:
        """jail.mask_targets (a realpath of each masked path)."""
        return self._kept_about(("mask targets", tuple(masked)), masked, lambda: _jail.mask_targets(masked))

    def _mask_plan(self, masked: "list[Path] | tuple[Path, ...]") -> list[tuple[Path, bool]]:
        """jail.mask_plan (what to cover, file or directory), kept like the targets: whether a
        path is there, a link or a directory changes only with an entry of its directory."""
        return self._kept_about(("mask plan", tuple(masked)), masked, lambda: _jail.mask_plan(masked))

    def _protected_binds(self) -> list[tuple[Path, str]]:
        """bwrap.protected_binds, kept like the PATH directories: until a directory one of them
        was looked up in changes, or the walk finds other nested ones."""
        c = self.config
        found = tuple(tuple(protected.nested(root)) for root in c.writable_roots)

        def lookup(consult) -> list[tuple[Path, str]]:
            return [pk for root, nested in zip(c.writable_roots, found)
                    for pk in protected.protected_paths(root, c.writable, consult, list(nested), runtime=False)]

        def runtime(consult) -> list[tuple[Path, str]]:
            return [pk for root in c.writable_roots for pk in protected.runtime_protected(root, c.writable, consult)]

        # kept apart: codebelt's runtime paths depend on directories outside the workspace (the
        # home directory on the way to a user's environment) that change apart from it
        workspace = self._lookups.get(("protected", c.writable_roots, c.writable, found), lookup)
        own = self._lookups.get(("runtime", c.writable_roots, c.writable, tuple(sys.path), sys.prefix), runtime)
        merged = self._merged_binds
        if merged is None or merged[0] is not workspace or merged[1] is not own:  # kept answers: the same objects
            merged = self._merged_binds = (workspace, own, protected.in_mount_order([*workspace, *own]))
        return list(merged[2])

    def _credentials(self) -> list[Path]:
        """The user's credential files (credentials.py), kept like the PATH directories."""
        key = ("credentials", os.environ.get("HOME"), os.environ.get("XDG_CONFIG_HOME"))
        return list(self._lookups.get(key, credential_paths))

    def jail_wrapper(self, masked: "list[Path] | tuple[Path, ...]" = ()) -> Wrapper | None:
        """The read-only jail's wrapper (None: no jail here). `masked`: paths to hide (the
        session's Read deny rules)."""
        backend = self.jail.backend
        if backend is None:
            return None
        masked = list(masked)
        # the user's credential files too: nothing in the jail needs them (its HOME is a scratch)
        return lambda argv, cwd, env: self._wrap_jail(backend, list(argv), Path(cwd), dict(env),
                                                      [*masked, *self._credentials()], resident=True)

    def helper(self, profile: HelperProfile, masked: "list[Path] | tuple[Path, ...]" = ()) -> Wrapper | None:
        """The wrapper that runs a helper program (helpers.py) in the read-only jail, with its
        environment reduced to the profile's; None when no jail works here."""
        backend = self._helper_backend(profile)
        if backend is None:
            return None
        masked = list(masked)
        return lambda argv, cwd, env: self._wrap_jail(backend, list(argv), Path(cwd), helper_env(env, profile),
                                                      [*masked, *self._credentials()], profile)

    def _helper_backend(self, profile: HelperProfile) -> str | None:
        backend = self.jail.backend
        if backend == "bwrap" and profile.prefer_landlock and self._landlock_abi > 0:
            with self._probe_lock:
                if self._landlock_helpers is None:
                    self._landlock_helpers = False  # probed once; a failure keeps bwrap
                    probe = HelperProfile("probe", system=False)
                    wrap = lambda argv, cwd, env: self._wrap_jail("landlock", argv, cwd, env, [], probe)  # noqa: E731
                    self._landlock_helpers = self._probe_with(wrap)[0]
            if self._landlock_helpers:
                return "landlock"
        return backend

    def _wrap_jail(self, backend: str, argv: list[str], cwd: Path, env: dict, masked: list[Path],
                   profile: HelperProfile | None = None, resident: bool = False) -> tuple:
        """A jailed command (`profile` None) or helper: (argv, env, preexec[, cleanup]). With
        `resident`, the tuple's `launch` may be a function `launch(fds)` that starts the command
        in the session's resident jail instead (resident.py) — the tuple itself still describes a
        one-shot jail for callers that spawn it themselves."""
        c = self.config
        system = profile is None or profile.system
        readable = list(profile.readable) if profile is not None else []
        if system:
            readable += self._readable_extra(env)
        script_dir = False
        if profile is None:
            # a long command is read by bash from a script file in the spool directory: the
            # last argument, after the shell and its options (`bash FILE`, `bash -l FILE`)
            if len(argv) > 1 and argv[-2] != "-c" and argv[-1].startswith("/") and os.path.isfile(argv[-1]):
                readable.append(Path(argv[-1]).parent)
                script_dir = True
        # bwrap must fork its sandbox: its pid namespace ends whatever the helper starts instead
        no_processes = profile is not None and profile.no_processes and backend not in ("bwrap", "jail-bwrap")
        cgroups = profile is None or profile.cgroups

        def limits_and_filter() -> tuple:
            """The process's limits and its socket filter's installer: for what codebelt spawns
            (a one-shot jail, the resident), not for a command the resident takes."""
            cap, memory = self.cap, self.memory
            pairs = rlimits(c.limits, cap.nproc_limit() if cap else None, memory.address_space if memory else None)
            sockets = self._socket_filter(backend, jailed=True, no_processes=no_processes)
            return pairs, (sockets.install_in_child if sockets else None)

        if backend in ("bwrap", "jail-bwrap"):
            scratch = _jail.scratch_in_jail([*c.writable_roots, *readable])
            if system:
                env.update(TMPDIR=scratch, HOME=scratch)
                if profile is not None:
                    env["XDG_CACHE_HOME"] = f"{scratch}/.cache"
            layer = bool(self._stage_abi and system)
            # the argv below is built when first read, a while after the paths were given: the
            # directories holding them now are what the covers are checked against
            seen = watched(masked, c.writable_roots, self._mask_targets(masked))
            if layer:
                readable += python_dirs()
            launch = None
            # not a command with its script's directory to show: the resident's view is fixed at
            # its start, and would keep that directory for every later command
            if resident and profile is None and self._stage_abi and not script_dir:
                launch = self._resident_launch(readable, scratch, limits_and_filter, argv, cwd, env, masked)

            def one_shot() -> tuple:
                markers = profile.markers if profile is not None else ()
                args = _jail.bwrap_args(list(c.writable_roots), readable, masked, scratch, cwd, system=system,
                                        markers=markers)
                # bwrap mounts the masks by path: those a command could move are checked inside,
                # before the command (stage.py), by the stage that adds the layer or by one of
                # its own (codebelt's Python then made visible: the arguments built again)
                specs = cover_specs(args, c.writable_roots, seen)
                if specs and not layer:
                    args = _jail.bwrap_args(list(c.writable_roots), [*readable, *python_dirs()], masked, scratch,
                                            cwd, system=system, markers=markers)
                    specs = cover_specs(args, c.writable_roots, seen)
                inner = argv
                if layer:
                    inner = stage_argv(STAGE_PYTHON, _stage_source(), self._stage_abi,
                                       [scratch, *_jail.STAGE_DEVICES], specs, argv)
                elif specs:
                    inner = stage_argv(STAGE_PYTHON, _stage_source(layer=False), 0, [], specs, argv)
                pairs, install = limits_and_filter()
                return ([self.bwrap_path or "bwrap", *args, "--", *inner], env,
                        self._preexec(pairs, None, install, cgroups=cgroups))

            return Wrapped(launch=launch, build=one_shot)
        pairs, install = limits_and_filter()
        # Landlock's rules are opened by path: a directory swapped since the walk refuses
        moved = moved_since_walk(masked, c.writable_roots)
        ruleset = self._landlock_ruleset(readable, masked, system)
        moved = moved or moved_since_walk(masked, c.writable_roots)
        argv = refused(moved) if moved else argv
        subreaper = profile is not None and profile.long_lived
        if not system:
            return argv, env, self._preexec(pairs, ruleset.restrict_in_child, install, cgroups=cgroups)
        scratch = Path(tempfile.mkdtemp(prefix="run-", dir=self._scratch_root()))
        env.update(TMPDIR=str(scratch), HOME=str(scratch))
        if profile is not None:
            env["XDG_CACHE_HOME"] = str(scratch / ".cache")
        # a long-lived helper's tree ends exactly with a reaper above it where signals can be
        # scoped (reaper.py); else the helper is made a subreaper and its tree found in /proc
        reaper = None
        if subreaper:
            from . import reaper as _reaper

            reaper = _reaper.Reaper(STAGE_PYTHON) if _reaper.available() else None
        preexec = self._preexec(pairs, ruleset.restrict_in_child, install, subreaper=subreaper and reaper is None,
                                cgroups=cgroups, reaper=reaper)

        def cleanup() -> None:
            shutil.rmtree(scratch, ignore_errors=True)
            if reaper is not None:
                reaper.close()

        return argv, env, preexec, cleanup

    # -- the resident jail -----------------------------------------------------------------
    def _resident_launch(self, readable: list[Path], scratch: str, limits_and_filter: "Callable[[], tuple]",
                         argv: list[str], cwd: Path, env: dict,
                         masked: list[Path]) -> "Callable[[dict[int, int]], Any] | None":
        """`launch(fds)` starting this command in the session's resident jail, or None when it
        cannot take it (built for other readable directories, or it does not work here): the
        one-shot jail is used then. `limits_and_filter()`: what a resident started now gets."""
        from .residency import ResidentUnavailable

        view, stamps = (tuple(readable), scratch), self._stamps()
        with self._resident_lock:
            resident = self._resident
            if resident is not None and resident.view != view:
                return None  # another view (a long command's script directory): a one-shot jail
            if resident is not None and (resident.stamps != stamps or not resident.alive):
                self._resident_old.append(resident)
                self._resident = resident = None
            if resident is None:
                if self._resident_failed or self._resident_starts >= MAX_RESIDENT_STARTS:
                    return None
                self._resident_starts += 1
                try:
                    resident = self._start_resident(readable, scratch, *limits_and_filter())
                except (OSError, ResidentUnavailable, subprocess.SubprocessError) as e:
                    self._resident_failed = str(e)
                    return None
                resident.view, resident.stamps = view, stamps
                self._resident = resident
        targets = self._mask_targets(masked)
        where = watched(masked, self.config.writable, targets)  # the walk's identities, where it found the path
        request = {
            "argv": argv, "env": env, "cwd": str(cwd), "tmpfs": [scratch], "abi": self._stage_abi,
            "writable": [scratch, *_jail.STAGE_DEVICES],  # as prepared (_start_resident)
            # as they are now: the masked paths (a link's target), and a secret that appeared
            # since the resident started
            "masks": [*(s for s in self._secrets() if s not in resident.masked_at_start),
                      *([str(m), where.get(str(m)) or _jail.cover_where(m, self.config.writable)] for m in targets)],
        }

        return resident.launcher(request)

    def _stamps(self) -> tuple:
        """What the resident's view depends on besides the paths: the roots it bound, by inode
        (a root removed and made again would be the old, deleted one in its view). Kept like the
        PATH directories: a root removed or replaced is an event in its parent."""
        roots = self.config.writable_roots

        def stamps() -> tuple:
            out = []
            for root in roots:
                try:
                    st = os.stat(root)
                    out.append((st.st_dev, st.st_ino))
                except OSError:
                    out.append(None)
            return tuple(out)

        return self._kept_about(("stamps", roots), roots, stamps)

    def _start_resident(self, readable: list[Path], scratch: str, pairs, install):
        from .residency import ResidentJail, resident_source

        c = self.config
        args = _jail.bwrap_args(list(c.writable_roots), readable, [], scratch, Path("/"))
        # it makes each command's mount and pid namespaces: it keeps the capability to, and each
        # command drops every capability before it runs (resident.py)
        at = args.index("--cap-drop")
        args[at:at + 2] = ["--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
        argv = [self.bwrap_path or "bwrap", *args, "--remount-ro", "/", "--",
                STAGE_PYTHON, "-I", "-S", "-c", resident_source()]
        env = {"PATH": os.defpath, "LANG": "C.UTF-8"}
        masked_at_start = frozenset(s for s in _jail.SECRETS if os.path.lexists(s))  # masked by bwrap_args
        prepare = {"tmpfs": [scratch], "abi": self._stage_abi, "writable": [scratch, *_jail.STAGE_DEVICES]}
        resident = ResidentJail(argv, env, self._preexec(pairs, None, install), Path("/"), prepare,
                                native=_native.open_extension(c.writable))
        resident.masked_at_start = masked_at_start
        # probed once with `true` through all of a command's set-up: where something of it is
        # refused here (a second /proc in a user namespace, a security module), every command
        # would fail; the one-shot jail runs them instead
        with tempfile.TemporaryFile() as err:
            try:
                probe = resident.launch({"argv": [TRUE], "env": {}, "cwd": "/", "tmpfs": [scratch], "masks": [],
                                         "abi": self._stage_abi, "writable": [scratch, *_jail.STAGE_DEVICES]},
                                        {1: err.fileno(), 2: err.fileno()})
                code = probe.wait(PROBE_TIMEOUT)
                if code != 0:
                    err.seek(0)
                    raise OSError(f"`true` failed in it (status {code}: {err.read(300).decode(errors='replace').strip()})")
            except BaseException:
                resident.close()
                raise
        return resident

    def _landlock_ruleset(self, readable: list[Path], masked: list[Path], system: bool):
        """The Landlock jail's ruleset for these readable paths and masks, built once and kept
        while the directories split around the masks stay as they were (a file created in one
        of them after the build would be missing from it)."""
        from . import landlock

        key = (system, tuple(readable), tuple(masked))
        with self._lock:
            hit = self._rulesets.get(key)
            if hit is not None and all(_mtime(d) == m for d, m in hit[0]):
                self._rulesets[key] = self._rulesets.pop(key)  # most recently used last
                return hit[1]
        grants, split = _jail.landlock_readable(list(self.config.writable_roots), readable, masked, system=system)
        stamps = tuple((d, _mtime(d)) for d in split)
        abi = self._landlock_abi or landlock.abi_version()[0]
        ruleset = landlock.Ruleset([self._scratch_root()] if system else [], False, abi, readable=grants,
                                   devices=system)
        with self._lock:
            old = self._rulesets.pop(key, None)
            self._rulesets[key] = (stamps, ruleset)
            while len(self._rulesets) > MAX_RULESETS:
                old_key = next(iter(self._rulesets))
                self._retired.append(self._rulesets.pop(old_key)[1])
            if old is not None:
                self._retired.append(old[1])
        return ruleset

    def _gitconfig_copies(self) -> list[tuple[Path, Path]]:
        """(filtered copy, original) of the user's git configuration files, written now (they
        may change during a session) in a directory of codebelt's own that no command can write
        (the session's TMPDIR would do, but a command could then rewrite the copy for the next).
        A copy that already holds the filtered text is kept: compared byte for byte, so one
        changed by anything else is written again, as it was before. That comparison, and the
        reading and filtering, are skipped while each original and each copy has the identity,
        size and times it had when the copies were last made (a change of content moves the
        ctime, which no program can set back; a same-size change within the clock tick of the
        last look is told apart where the kernel gives a looked-at ctime fine grain, 6.13 on,
        and else waits for the next change — the copy is filtered either way)."""
        originals = tuple((p, _identity(p, follow=True)) for p in gitconfig_paths())
        made = self._gitconfig_made
        if made is not None and made[0][0] == originals and made[0][1] == tuple(
                _identity(copy, follow=False) for copy, _ in made[1]):
            return list(made[1])
        out = self._write_gitconfig_copies()
        self._gitconfig_made = ((originals, tuple(_identity(copy, follow=False) for copy, _ in out)), out)
        return list(out)

    def _write_gitconfig_copies(self) -> list[tuple[Path, Path]]:
        out: list[tuple[Path, Path]] = []
        for original in gitconfig_paths():
            try:  # a regular file only (a FIFO would block), read bounded
                fd = os.open(original, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        continue
                    text = os.read(fd, MAX_GITCONFIG).decode("utf-8", "replace")
                finally:
                    os.close(fd)
            except OSError:
                continue
            with self._lock:
                if self._private is None:
                    self._private = Path(tempfile.mkdtemp(prefix="codebelt-private-"))
                copy = self._private / f"gitconfig-{len(out)}"
            data = filtered_gitconfig(text).encode()
            if not _holds(copy, data):  # written when it changed: a rename over it costs a flush (~1 ms on ext4)
                tmp = copy.with_suffix(".new")
                tmp.write_bytes(data)
                os.replace(tmp, copy)
            # shown where the file is: a bind follows a link only inside codebelt's own view (the
            # one-shot bwrap could not create a link's absolute target in its new root, and failed)
            out.append((copy, Path(os.path.realpath(original))))
        return out

    def _masked_write_ruleset(self, masked: list[Path]):
        """The Landlock write sandbox's ruleset when some paths may not be read: reading handled
        and granted around them. Kept, like the jail's, while the split directories are as they
        were (an entry created in one after the build is not in its rules: it cannot be read
        until the next command)."""
        from . import landlock

        key = ("write", tuple(masked))
        with self._lock:
            hit = self._rulesets.get(key)
            if hit is not None and all(_mtime(d) == m for d, m in hit[0]):
                self._rulesets[key] = self._rulesets.pop(key)
                return hit[1]
        grants, split = _jail.write_sandbox_reads(masked)
        self._split_in_roots = [d for d in split if any(d == w or w in d.parents for w in self.config.writable)]
        stamps = tuple((d, _mtime(d)) for d in split)
        ruleset = landlock.Ruleset(list(self.config.writable), self.config.network, self.ruleset.abi,
                                   masked_reads=grants)
        with self._lock:
            old = self._rulesets.pop(key, None)
            self._rulesets[key] = (stamps, ruleset)
            while len(self._rulesets) > MAX_RULESETS:
                self._retired.append(self._rulesets.pop(next(iter(self._rulesets)))[1])
            if old is not None:
                self._retired.append(old[1])
            # every command that adds a file to a split directory retires one: a long session
            # must not keep them all open (one retired this many rebuilds ago is in no spawn)
            stale = self._retired[:-MAX_RETIRED] if len(self._retired) > MAX_RETIRED else []
            del self._retired[:len(stale)]
        for r in stale:
            r.close()
        return ruleset

    def _probe_with(self, wrap: Wrapper) -> tuple[bool, str, int]:
        cwd = self.config.writable_roots[0] if self.config.writable_roots else Path("/")
        argv, env, preexec, *cleanup = wrap([TRUE], cwd, dict(os.environ))
        try:
            proc = subprocess.run(
                argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=PROBE_TIMEOUT,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return False, f"`true` did not finish within {PROBE_TIMEOUT:.0f} s", -1
        except (OSError, subprocess.SubprocessError) as e:
            return False, f"{type(e).__name__}: {e}", -1
        finally:
            for done in cleanup:
                done()
        return proc.returncode == 0, proc.stderr.decode(errors="replace"), proc.returncode

    def _make_placeholders(self) -> None:
        roots = self.config.writable_roots
        missing = self._lookups.get(("placeholders", roots),
                                    lambda consult: [p for root in roots for p in placeholders(root, consult)])
        if not missing:
            return
        with self._lock:
            for p in missing:
                try:
                    p.mkdir()
                    self._made.append(p)
                except OSError:
                    pass  # the bind is then skipped (--ro-bind-try); nothing else to do

    def explain_denial(self, output_tail: str, exit_code: int | None) -> str | None:
        """A sentence when a failed command looks blocked by the sandbox, else None."""
        if not self.status.active:
            return None
        said = _denial.explain(
            output_tail, exit_code, backend=self.status.backend or "sandbox", network=self.status.network,
            temp_dir=str(self.config.temp_dir) if self.config.temp_dir else None,
            domains=self.config.domains,
        )
        split = self._split_in_roots
        if said and split and self.status.backend == "landlock" and _denial.FILESYSTEM.search(output_tail[-8000:]):
            names = ", ".join(str(d) for d in split[:3]) + (" …" if len(split) > 3 else "")
            said += (f" Under Landlock, a file or directory the command created directly in {names} (which "
                     "holds a path a Read deny rule covers) cannot be read until the next command: read it in "
                     "a second command, or work in a subdirectory.")
        return said

    def oom_kills(self) -> int:
        """Processes killed so far for passing the memory cap (compare before and after a run)."""
        return self.memory.oom_kills() if self.memory is not None else 0

    def memory_note(self, oom_before: int, exit_code: int | None, output_tail: str) -> str | None:
        """A sentence when a command most likely died of the memory cap, naming the setting."""
        memory = self.memory
        if memory is None or memory.mb <= 0:
            return None
        setting = f"sandbox.limits.memoryMB (now {memory.mb} MB)"
        if memory.cgroup is not None:
            if exit_code == 128 + 9 and self.oom_kills() > oom_before:
                return (f"The command ran out of memory: it was killed at the sandbox's memory limit. "
                        f"Use less memory, or raise the setting {setting}.")
            return None
        if exit_code not in (0, None) and _ALLOC_FAILED.search(output_tail[-4000:]):
            return (f"The command probably ran out of memory: allocations fail past the sandbox's "
                    f"per-process limit. Use less memory, or raise the setting {setting}.")
        return None

    def kill_all(self) -> bool:
        """Kill every process left in the session's process cgroup (True when none is left)."""
        return self.cap.kill_all() if self.cap and self.cap.cgroup else True

    def close(self) -> None:
        with self._resident_lock:
            residents = [r for r in (self._resident, *self._resident_old) if r is not None]
            self._resident, self._resident_old = None, []
            sandbox_resident, self._sandbox_resident = self._sandbox_resident, None
        for r in residents:
            r.close()
        if sandbox_resident is not None:
            sandbox_resident.close()
        if self.cap is not None:
            self.cap.close()
        if self.memory is not None:
            self.memory.close()
        if self.ruleset is not None:
            self.ruleset.close()
        with self._lock:
            rulesets = [r for _, r in self._rulesets.values()] + self._retired
            self._rulesets.clear()
            self._retired.clear()
        for r in rulesets:
            r.close()
        if self._jail_root is not None:
            shutil.rmtree(self._jail_root, ignore_errors=True)
            self._jail_root = None
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None
        self._lookups.close()
        with self._lock:
            placed_covers, self._placed = self._placed, []
        sweep([(*entry[:3], float("-inf")) for entry in placed_covers])
        for p in reversed(self._made):
            try:
                p.rmdir()  # only if still empty
            except OSError:
                pass
        self._made.clear()
