"""One language server per language per workspace: started in the background (by `prewarm` at
session start for the languages the workspace holds, else on first use), restarted when it
crashes or stops answering (a bounded number of times), closed with the session.

`server_for(path)` never waits: it returns the client of a ready server, or None with the reason
(starting, loading the project, not installed, failed) so the caller answers from tree-sitter
meanwhile and says why. `wait_ready(path, timeout)` is for callers that may wait a bounded time.

Ready means the server's answers are whole, which a server that answers at all does not say by
itself (typescript-language-server answers from the open files alone for seconds while it loads
the project). After `initialize`, one document of its language is opened and asked for its
symbols, then the server's `ready_when` rule (servers.py) decides, from its own reports:
- "answered": the first answer is enough (basedpyright computes what a request needs on demand;
  its first answer waits for its configuration and search paths);
- "loaded": the work-done progress it began ($/progress begin … end, typescript-language-server's
  "Initializing JS/TS language features") has ended, or it published the document's diagnostics
  with no progress under way (a project small enough to need no report);
- "quiet" (any other server): answered, and no progress of its own under way for QUIET_S.
A server still loading after `load_timeout` is used anyway, its answers noted as possibly
incomplete.

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
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...humanize import duration
from . import methods as lsp
from .client import LspClient, LspCrashed, LspError, LspTimeout
from .documents import Unreadable, read_document
from .servers import ServerSpec, for_extension

MAX_RESTARTS = 3
TIMEOUTS_BEFORE_RESTART = 3  # consecutive unanswered requests mean the server is stuck
QUIET_S = 1.0
# prewarm's look for files of each server's languages: bounded, names only, no link followed
SCAN_MAX_ENTRIES = 20_000
SCAN_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages", "dist", "build", "target"})


@dataclass
class _Slot:
    spec: ServerSpec
    client: LspClient | None = None
    state: str = "idle"  # idle | starting | loading | ready | failed
    reason: str = ""
    restarts: int = 0
    timeouts: int = 0
    ready: threading.Event | None = None
    starting: LspClient | None = None  # the process being initialised (closed if the session ends first)
    first: Path | None = None  # the document opened to learn when the server is ready


class LspManager:
    def __init__(self, root: Path, specs: list[ServerSpec], *, request_timeout: float = 5.0,
                 start_timeout: float = 30.0, load_timeout: float = 120.0, env: dict[str, str] | None = None,
                 jail: Callable[[ServerSpec], Callable | None] | None = None,
                 refuse: Callable[[ServerSpec], str | None] | None = None,
                 include: Callable[[Path], bool] | None = None):
        self.root = root
        self.specs = specs
        self.request_timeout = request_timeout
        self.start_timeout = start_timeout
        self.load_timeout = load_timeout
        self.include = include  # files a server may be sent (not Read-denied)
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
    def _slot(self, spec: ServerSpec, path: Path | None = None) -> _Slot:
        with self._lock:
            slot = self._slots.get(spec.name)
            if slot is None:
                slot = self._slots[spec.name] = _Slot(spec)
            if slot.first is None and path is not None and (self.include is None or self.include(path)):
                slot.first = path
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
            with self._lock:
                if slot.state == "starting":
                    slot.state = "loading"
            client.caveat = self._until_ready(slot, client)
        except (LspCrashed, LspTimeout, LspError, OSError, RuntimeError) as e:  # RuntimeError: closed meanwhile
            reason = str(e)
            if client is not None:
                client.close(0.0 if client.dead else 0.5)
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

    def _until_ready(self, slot: _Slot, client: LspClient) -> str:
        """Wait (in the starting thread) until the server's own reports say its answers are
        whole (the module's rules); returns a caveat for its answers when it never said so."""
        deadline = time.monotonic() + self.load_timeout
        path = slot.first
        if path is None:
            return ""  # nothing of its language to open: ready once initialised
        try:
            client.sync(path, read_document(path), self.language_id(path))
        except Unreadable:
            return ""
        if client.capabilities.get("documentSymbolProvider"):
            try:
                client.request(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, {"textDocument": {"uri": path.as_uri()}},
                               self.load_timeout)
            except LspError:
                pass  # an error is an answer
            except LspTimeout:
                raise LspTimeout(f"the {client.name} language server did not answer its first request within "
                                 f"{duration(self.load_timeout)}") from None
        rule = slot.spec.ready_when
        if rule == "answered":
            return ""
        uri = path.as_uri()
        answered_at = time.monotonic()
        with client.changed:
            while True:
                if client.dead:
                    raise LspCrashed(client.dead)
                if self._closed:
                    raise LspCrashed("the session ended")
                busy = client.loading()
                now = time.monotonic()
                if not busy:
                    if rule == "loaded" and (client.progress_ended or uri in client.diagnostics):
                        return ""
                    if rule != "loaded" and now - max(answered_at, client.progress_at) >= QUIET_S:
                        return ""
                left = deadline - now
                if left <= 0:
                    what = ", ".join(busy) or "loading the project"
                    return (f"the {client.name} language server had not finished {what!r} after "
                            f"{duration(self.load_timeout)}; its answer may be incomplete")
                client.changed.wait(min(left, QUIET_S) if rule != "loaded" else left)

    def prewarm(self, max_entries: int = SCAN_MAX_ENTRIES) -> list[str]:
        """Start, in the background, the server of every language the workspace has files of
        (found by a bounded walk that follows no link and reads only names); returns their names.
        Only the servers this manager was given can start: the workspace chooses none."""
        wanted = {ext: spec for spec in reversed(self.specs) for ext in spec.extensions}
        found: dict[str, Path] = {}
        seen = 0
        queue = [self.root]
        while queue and seen < max_entries and len(found) < len({s.name for s in wanted.values()}):
            directory = queue.pop(0)
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                seen += 1
                if entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SCAN_SKIP_DIRS:
                            queue.append(Path(entry.path))
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                spec = wanted.get(os.path.splitext(entry.name)[1].lower())
                path = Path(entry.path)
                if spec is not None and spec.name not in found and (self.include is None or self.include(path)):
                    found[spec.name] = path
        for name, path in found.items():
            self._slot(next(s for s in self.specs if s.name == name), path)
        return list(found)

    # -- asking ------------------------------------------------------------------------------------
    def server_for(self, path: Path) -> tuple[LspClient | None, str]:
        """(client, "") when a server for this file is ready, else (None, why not)."""
        spec = self.spec_for(path)
        if spec is None:
            return None, f"no language server is configured or installed for {path.suffix or 'this kind of'} files"
        slot = self._slot(spec, path)
        with self._lock:
            client = slot.client
            if slot.state == "ready" and client is not None and client.dead:
                self._restart_locked(slot, f"it stopped ({client.dead})")
                client = None
            if slot.state == "ready" and client is not None:
                return client, ""
            if slot.state == "starting":
                return None, f"the {spec.name} language server is starting"
            if slot.state == "loading":
                busy = slot.starting.loading() if slot.starting is not None else []
                return None, (f"the {spec.name} language server is loading the project"
                              + (f" ({'; '.join(busy)})" if busy else ""))
            return None, f"the {spec.name} language server is not available: {slot.reason}"

    def wait_ready(self, path: Path, timeout: float) -> tuple[LspClient | None, str]:
        spec = self.spec_for(path)
        if spec is None:
            return self.server_for(path)
        slot = self._slot(spec, path)
        if slot.ready is not None:
            slot.ready.wait(max(0.0, timeout))
        return self.server_for(path)

    def not_ready(self) -> str | None:
        """Why servers that were started are not answering yet (starting, loading), or None."""
        with self._lock:
            names = [n for n, s in self._slots.items() if s.state in ("starting", "loading")]
        if not names:
            return None
        return f"the {', '.join(names)} language server{'s are' if len(names) > 1 else ' is'} still starting"

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
            ready = [s.client for s in self._slots.values() if s.client is not None]
            starting = [s.starting for s in self._slots.values() if s.starting is not None]
            for s in self._slots.values():
                s.client = s.starting = None
        for c in starting:
            c.close(0.0)  # not asked to shut down: one still starting may not be reading yet
        for c in ready:
            c.close()
        self._spawner.shutdown(wait=False)  # every server is gone: its parent thread may end
