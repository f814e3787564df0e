"""One session's OS sandbox for Bash commands: choose a backend, probe it once, wrap each command.

`Sandbox(config)` is what the runner and the permission layer use:

- `.status -> SandboxStatus`: is a sandbox active, which backend, and why.
- `.wrapper()`: None when commands run unsandboxed (mode `off`, or `auto` with no working
  backend), else a function `(argv, cwd, env) -> (argv', env', preexec_fn)` to spawn with.
  Raises `SandboxUnavailable` when the settings demand a sandbox that does not work here
  (`required`, or a forced `bwrap` / `landlock`).
- `.explain_denial(output_tail, exit_code) -> str | None`: a sentence when a failed command
  looks blocked by the sandbox, naming the setting that would allow it.

Resource limits (limits.py) are applied whenever a sandbox is active, and only then: with the
sandbox off, commands run exactly as the user's shell would run them.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import SandboxUnavailable
from . import bwrap as _bwrap
from . import denial as _denial
from .config import SandboxConfig
from .limits import MemoryCap, ProcessCap, apply_rlimits, rlimits
from .protected import placeholders

__all__ = ["Sandbox", "SandboxStatus", "SandboxUnavailable"]

Wrapper = Callable[[list[str], Path, dict], tuple[list[str], dict, Callable[[], None] | None]]
PROBE_TIMEOUT = 10.0
_ALLOC_FAILED = re.compile(r"Cannot allocate memory|MemoryError|std::bad_alloc|out of memory|memory exhausted", re.I)
TRUE = next((p for p in ("/usr/bin/true", "/bin/true") if os.access(p, os.X_OK)), "true")


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Sandbox:
    """One session's sandbox: the chosen backend, its probe result and its resources.

    Created once per session (a session service); `close()` (at session end)
    kills what is left in the session cgroup, removes it, closes the Landlock ruleset and removes
    the empty protected-path placeholders it created.
    """

    def __init__(self, config: SandboxConfig):
        self.cap: ProcessCap | None = None
        self.memory: MemoryCap | None = None
        self.ruleset = None  # landlock.Ruleset when that backend is chosen
        self.bwrap_path: str | None = None
        self._made: list[Path] = []  # placeholders this session created
        self._lock = threading.Lock()
        self.config = config
        self.status = self._select()

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
        ok, err, code = self._run_probe("bwrap")
        if ok:
            return True, f"bubblewrap ({path}): filesystem read-only outside the writable roots, " + (
                "network allowed" if self.config.network else "network off"
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
        elif abi >= 4:
            net = "TCP connect/bind denied (UDP is not covered)"
        else:
            net = f"network NOT restricted (ABI {abi} < 4 has no network rules)"
        return True, (
            f"Landlock ABI {abi}: writes only inside the writable roots, {net}; protected paths "
            "inside the workspace are not read-only under Landlock"
        )

    def _run_probe(self, backend: str) -> tuple[bool, str, int]:
        cwd = self.config.writable_roots[0] if self.config.writable_roots else Path("/")
        argv, env, preexec = self._wrap(backend, [TRUE], cwd, dict(os.environ), create=False)
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
        return proc.returncode == 0, proc.stderr.decode(errors="replace"), proc.returncode

    # -- wrapping --------------------------------------------------------------------------
    def wrapper(self) -> Wrapper | None:
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
        return lambda argv, cwd, env: self._wrap(backend, list(argv), Path(cwd), dict(env))

    def _wrap(
        self, backend: str, argv: list[str], cwd: Path, env: dict, create: bool = True
    ) -> tuple[list[str], dict, Callable[[], None]]:
        c = self.config
        if c.temp_dir is not None:
            env["TMPDIR"] = str(c.temp_dir)
        cap, memory = self.cap, self.memory
        pairs = rlimits(c.limits, cap.nproc_limit() if cap else None, memory.address_space if memory else None)
        if backend == "bwrap":
            if create:
                self._make_placeholders()
            argv = _bwrap.wrap_argv(self.bwrap_path or "bwrap", c, argv, cwd)
            restrict = None
        else:
            restrict = self.ruleset.restrict_in_child

        def preexec() -> None:  # runs in the child between fork and exec
            apply_rlimits(pairs)
            if cap is not None:
                cap.join_in_child()
            if memory is not None:
                memory.join_in_child()
            if restrict is not None:
                restrict()

        return argv, env, preexec

    def _make_placeholders(self) -> None:
        with self._lock:
            for root in self.config.writable_roots:
                for p in placeholders(root):
                    try:
                        p.mkdir()
                        self._made.append(p)
                    except OSError:
                        pass  # the bind is then skipped (--ro-bind-try); nothing else to do

    def explain_denial(self, output_tail: str, exit_code: int | None) -> str | None:
        """A sentence when a failed command looks blocked by the sandbox, else None."""
        if not self.status.active:
            return None
        return _denial.explain(
            output_tail, exit_code, backend=self.status.backend or "sandbox", network=self.status.network,
            temp_dir=str(self.config.temp_dir) if self.config.temp_dir else None,
        )

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
        if self.cap is not None:
            self.cap.close()
        if self.memory is not None:
            self.memory.close()
        if self.ruleset is not None:
            self.ruleset.close()
        for p in reversed(self._made):
            try:
                p.rmdir()  # only if still empty
            except OSError:
                pass
        self._made.clear()
