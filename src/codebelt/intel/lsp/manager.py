"""One language server per language per workspace: started lazily in the background, restarted
when it crashes or stops answering (a bounded number of times), closed with the session.

`server_for(path)` never waits for a start: it returns the running client, or None with the
reason (starting, not installed, failed) so the caller answers from tree-sitter meanwhile and
says why. `wait_ready(path, timeout)` is for callers that may wait a bounded time.

Confinement: `jail(spec)` gives the wrapper that runs a server in the read-only jail (None from
it: the jail is not available, and the server is not started). `refuse(spec)` says why a server
may not start at all (the session's policy without a jail: not one that runs the workspace's own
programs, none where Read deny rules exist); without either, servers run as they are.
Servers are started from one long-lived thread of the manager's: a jail that dies with its
parent (bwrap --die-with-parent) is tied to the thread that forked it.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .client import LspClient, LspCrashed, LspTimeout
from .servers import ServerSpec, for_extension

MAX_RESTARTS = 3
TIMEOUTS_BEFORE_RESTART = 3  # consecutive unanswered requests mean the server is stuck


@dataclass
class _Slot:
    spec: ServerSpec
    client: LspClient | None = None
    state: str = "idle"  # idle | starting | ready | failed
    reason: str = ""
    restarts: int = 0
    timeouts: int = 0
    ready: threading.Event | None = None
    starting: LspClient | None = None  # the process being initialised (closed if the session ends first)


class LspManager:
    def __init__(self, root: Path, specs: list[ServerSpec], *, request_timeout: float = 5.0,
                 start_timeout: float = 30.0, env: dict[str, str] | None = None,
                 jail: Callable[[ServerSpec], Callable | None] | None = None,
                 refuse: Callable[[ServerSpec], str | None] | None = None):
        self.root = root
        self.specs = specs
        self.request_timeout = request_timeout
        self.start_timeout = start_timeout
        self.env = env
        self.jail = jail
        self.refuse = refuse
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="codebelt-lsp-spawn")

    def spec_for(self, path: Path) -> ServerSpec | None:
        return for_extension(self.specs, path.suffix.lower())

    def language_id(self, path: Path) -> str:
        spec = self.spec_for(path)
        return spec.extensions.get(path.suffix.lower(), "plaintext") if spec else "plaintext"

    # -- starting ----------------------------------------------------------------------------------
    def _slot(self, spec: ServerSpec) -> _Slot:
        with self._lock:
            slot = self._slots.get(spec.name)
            if slot is None:
                slot = self._slots[spec.name] = _Slot(spec)
            if slot.state == "idle" and not self._closed:
                slot.state, slot.ready = "starting", threading.Event()
                threading.Thread(target=self._start, args=(slot,), name=f"lsp-start-{spec.name}", daemon=True).start()
            return slot

    def _start(self, slot: _Slot) -> None:
        env = dict(self.env if self.env is not None else os.environ)
        env.update(slot.spec.env)
        client = None
        try:
            refused = self.refuse(slot.spec) if self.refuse is not None else None
            if refused:
                raise LspCrashed(refused)
            wrap = self.jail(slot.spec) if self.jail is not None else None
            if self.jail is not None and wrap is None:
                raise LspCrashed("not started: the read-only jail it must run in is not available")
            spec = slot.spec
            client = self._spawner.submit(LspClient, spec.name, spec.argv(), self.root, env, spec.settings,
                                          wrap).result()
            with self._lock:
                slot.starting = client
                closed = self._closed
            if closed:
                raise LspCrashed("the session ended")
            client.initialize(self.start_timeout, slot.spec.initialization_options)
        except (LspCrashed, LspTimeout, OSError, RuntimeError) as e:  # RuntimeError: closed meanwhile
            reason = str(e)
            if client is not None:
                client.close(0.5)
                tail = client.stderr_tail(300)
                if tail:
                    reason += f" (stderr: {tail})"
            with self._lock:
                slot.state, slot.reason, slot.client, slot.starting = "failed", reason, None, None
            slot.ready.set()
            return
        with self._lock:
            slot.starting = None
            if self._closed:
                client.close(0.5)
                slot.state, slot.reason = "failed", "the session ended"
            else:
                slot.client, slot.state, slot.reason, slot.timeouts = client, "ready", "", 0
        slot.ready.set()

    # -- asking ------------------------------------------------------------------------------------
    def server_for(self, path: Path) -> tuple[LspClient | None, str]:
        """(client, "") when a server for this file is ready, else (None, why not)."""
        spec = self.spec_for(path)
        if spec is None:
            return None, f"no language server is configured or installed for {path.suffix or 'this kind of'} files"
        slot = self._slot(spec)
        with self._lock:
            client = slot.client
            if slot.state == "ready" and client is not None and client.dead:
                self._restart_locked(slot, f"it stopped ({client.dead})")
                client = None
            if slot.state == "ready" and client is not None:
                return client, ""
            if slot.state == "starting":
                return None, f"the {spec.name} language server is starting"
            return None, f"the {spec.name} language server is not available: {slot.reason}"

    def wait_ready(self, path: Path, timeout: float) -> tuple[LspClient | None, str]:
        spec = self.spec_for(path)
        if spec is None:
            return self.server_for(path)
        slot = self._slot(spec)
        if slot.ready is not None:
            slot.ready.wait(max(0.0, timeout))
        return self.server_for(path)

    def ready_clients(self) -> list[LspClient]:
        """Servers already running (none is started for this)."""
        with self._lock:
            return [s.client for s in self._slots.values()
                    if s.state == "ready" and s.client is not None and not s.client.dead]

    def report(self, client: LspClient, error: Exception | None) -> None:
        """After a request: a run of timeouts or a crash restarts the server (bounded)."""
        with self._lock:
            slot = next((s for s in self._slots.values() if s.client is client), None)
            if slot is None:
                return
            if error is None:
                slot.timeouts = 0
            elif isinstance(error, LspTimeout):
                slot.timeouts += 1
                if slot.timeouts >= TIMEOUTS_BEFORE_RESTART:
                    self._restart_locked(slot, f"it did not answer {slot.timeouts} requests in a row")
            elif isinstance(error, LspCrashed):
                self._restart_locked(slot, str(error))

    def _restart_locked(self, slot: _Slot, why: str) -> None:
        old, slot.client = slot.client, None
        if old is not None:
            threading.Thread(target=old.close, args=(0.5,), daemon=True).start()
        if slot.restarts >= MAX_RESTARTS or self._closed:
            slot.state, slot.reason = "failed", f"{why}; gave up after {slot.restarts} restarts"
            return
        slot.restarts += 1
        slot.state, slot.reason, slot.timeouts = "idle", why, 0

    def status(self) -> dict[str, dict[str, str]]:
        with self._lock:
            return {name: {"state": s.state, "reason": s.reason} for name, s in self._slots.items()}

    def close(self) -> None:
        with self._lock:
            self._closed = True
            clients = [c for s in self._slots.values() for c in (s.client, s.starting) if c is not None]
            for s in self._slots.values():
                s.client = s.starting = None
        for c in clients:
            c.close()
        self._spawner.shutdown(wait=False)  # every server is gone: its parent thread may end
