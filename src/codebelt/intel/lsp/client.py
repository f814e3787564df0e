"""One language server process and the JSON-RPC conversation with it.

- The server runs in its own process group (so closing it ends whatever it started) with stdin
  and stdout as the protocol pipe; its stderr is drained into a bounded ring buffer that is only
  shown in failure reasons, never in results.
- A reader thread parses frames (transport.py), answers the server's own requests so it never
  stalls waiting for us (`workspace/configuration`, progress creation, capability
  registration), routes responses to waiting callers, and keeps the latest diagnostics per
  document with the document version they were computed for.
- Writes never block a caller: messages are queued for a writer thread of the client's own (the
  reader thread answers the server's requests through the same queue, so a server that writes
  while we write cannot deadlock the two). A request whose message the server has not read by
  the request's deadline means the server stopped reading its input: it is killed
  (`LspCrashed`) rather than waited for; so is one whose unread input passes MAX_QUEUED bytes.
- `request()` waits at most its timeout; on timeout it sends `$/cancelRequest` and raises
  `LspTimeout`. Garbage on stdout, a closed pipe or an exit marks the client dead (`LspCrashed`).
- Work-done progress the server reports (`$/progress` begin/end, on tokens it created) is kept:
  `loading()` names what is under way, `changed` is notified on every report (the manager
  decides from it when the server is ready).
- `close()`: `shutdown` with a bounded wait, then the server and everything it started are
  killed (`end_tree`: in the read-only jail under bwrap its pid namespace ends with it; under
  Landlock a reaper above it, in a signal-scoped domain, kills everything it started — or, where
  signals cannot be scoped, the server is a child subreaper and its descendants are found).
- `wrap` confines the server (the read-only jail): `(argv, cwd, env) -> (argv, env, preexec[,
  cleanup])`; the cleanup (its scratch directory) runs once the server is gone.
"""

from __future__ import annotations

import collections
import itertools
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import IntelError
from ...humanize import duration
from ...sandbox.helpers import end_tree
from ...shell.execution.procs import signal_members
from . import methods as lsp
from .transport import ProtocolError, encode, read_frame

STDERR_KEEP = 64 * 1024
MAX_QUEUED = 64 * 1024 * 1024  # unread input past this: the server is not reading; it is killed
# Documents held open at once: an open document's text comes from us, so each is re-read
# before a query (query.py); closing the least recently used bounds that work and memory.
MAX_OPEN_DOCUMENTS = 64


class LspError(IntelError):
    """The server answered a request with an error."""


class LspTimeout(IntelError):
    """The server did not answer in time (the request was cancelled)."""


class LspCrashed(IntelError):
    """The server exited, closed its output or broke the protocol."""


@dataclass
class Published:
    """The diagnostics last published for one document."""

    version: int | None
    diagnostics: list[dict]
    seq: int  # arrival order, for servers that publish without a version


@dataclass
class _Pending:
    event: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: dict | None = None
    sent: threading.Event | None = None  # set once the server has the whole request


@dataclass
class _Outgoing:
    data: bytes
    sent: threading.Event = field(default_factory=threading.Event)


class LspClient:
    def __init__(self, name: str, argv: list[str], root: Path, env: dict[str, str] | None = None,
                 settings: dict | None = None, wrap=None):
        self.name = name
        self.argv = argv
        self.root = root
        self.settings = settings or {}
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._doc_lock = threading.Lock()
        self._diag_cond = threading.Condition()
        self.changed = self._diag_cond  # notified on diagnostics, progress, death
        self._outbox: collections.deque[_Outgoing | None] = collections.deque()
        self._outbox_bytes = 0
        self._outbox_cond = threading.Condition()
        self._progress: dict[Any, str] = {}  # token → title, begun and not ended
        self.progress_begun = 0
        self.progress_ended = 0
        self.progress_at = 0.0  # monotonic time of the last progress report
        self.caveat = ""  # said with every answer (a server that never reported it was ready)
        self._close_lock = threading.Lock()
        self._closing = False
        self.diagnostics: dict[str, Published] = {}
        self._seq = itertools.count(1)
        self._stderr: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self.dead: str | None = None  # why the conversation ended
        self.capabilities: dict[str, Any] = {}
        self.versions: dict[str, int] = {}  # documents we opened, by URI, least recently used first
        self.texts: dict[str, str] = {}
        self.paths: dict[str, Path] = {}
        self._cleanup = None
        self.confined = wrap is not None
        preexec = None
        try:
            if wrap is not None:
                argv, env, preexec, *rest = wrap(list(argv), root, dict(env if env is not None else os.environ))
                self._cleanup = rest[0] if rest else None
            self.proc = subprocess.Popen(
                argv, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, close_fds=True, preexec_fn=preexec,
            )
        except (OSError, subprocess.SubprocessError) as e:
            self._run_cleanup()
            raise LspCrashed(f"the {name} language server could not start ({argv[0]}: "
                             f"{getattr(e, 'strerror', None) or e})") from None
        threading.Thread(target=self._read, name=f"lsp-{name}-out", daemon=True).start()
        self._writer = threading.Thread(target=self._write, name=f"lsp-{name}-in", daemon=True)
        self._writer.start()
        self._stderr_thread = threading.Thread(target=self._drain_stderr, name=f"lsp-{name}-err", daemon=True)
        self._stderr_thread.start()

    # -- reading ---------------------------------------------------------------------------------
    def _read(self) -> None:
        reason = "the server closed its output"
        try:
            while True:
                msg = read_frame(self.proc.stdout)
                if msg is None:
                    break
                self._dispatch(msg)
        except ProtocolError as e:
            reason = f"the server broke the protocol ({e})"
        except LspCrashed as e:  # answering a request of the server's found the client ended
            reason = str(e)
        except (OSError, ValueError) as e:
            reason = f"reading from the server failed ({e})"
        self._die(reason)

    def _die(self, reason: str) -> None:
        with self._lock:
            if self.dead is None:
                code = self.proc.poll()
                self.dead = reason + (f"; exit code {code}" if code is not None else "")
            pending = list(self._pending.values())
            self._pending.clear()
        for p in pending:
            p.error = {"message": self.dead}
            p.event.set()
        with self._outbox_cond:
            self._outbox.append(None)  # the writer stops (and closes the server's input)
            self._outbox_cond.notify_all()
        with self._diag_cond:
            self._diag_cond.notify_all()

    def _drain_stderr(self) -> None:
        try:
            for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
                self._stderr.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > STDERR_KEEP and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())
        except (OSError, ValueError):
            pass

    def stderr_tail(self, limit: int = 500) -> str:
        return b"".join(self._stderr)[-limit:].decode("utf-8", "replace").strip()

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "id" in msg and "method" not in msg:  # a response to us
            with self._lock:
                pending = self._pending.pop(msg["id"], None) if isinstance(msg["id"], int) else None
            if pending is not None:
                pending.result, pending.error = msg.get("result"), msg.get("error")
                pending.event.set()
            return
        method = msg.get("method")
        if "id" in msg:  # a request from the server: always answer
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": self._answer(method, msg.get("params"))})
        elif method == lsp.PROGRESS:
            self._on_progress(msg.get("params"))
        elif method == lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            params = msg.get("params") or {}
            uri = params.get("uri")
            if isinstance(uri, str):
                with self._diag_cond:
                    self.diagnostics[uri] = Published(params.get("version"), list(params.get("diagnostics") or []),
                                                      next(self._seq))
                    self._diag_cond.notify_all()

    def _on_progress(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        token, value = params.get("token"), params.get("value")
        if not isinstance(token, (str, int)) or not isinstance(value, dict):
            return
        with self._diag_cond:
            if value.get("kind") == "begin":
                self._progress[token] = str(value.get("title") or "working")[:200]
                self.progress_begun += 1
            elif value.get("kind") == "end" and self._progress.pop(token, None) is not None:
                self.progress_ended += 1
            self.progress_at = time.monotonic()
            self._diag_cond.notify_all()

    def loading(self) -> list[str]:
        """The titles of the work the server reported begun and not yet ended."""
        with self._diag_cond:
            return list(self._progress.values())

    def _answer(self, method: str | None, params: Any) -> Any:
        if method == lsp.WORKSPACE_CONFIGURATION:
            items = (params or {}).get("items") or []
            return [self.settings.get(i.get("section") or "", None) if isinstance(i, dict) else None for i in items]
        if method == lsp.WORKSPACE_WORKSPACE_FOLDERS:
            return [{"uri": self.root.as_uri(), "name": self.root.name}]
        return None  # progress creation, capability (un)registration, showMessageRequest …

    # -- writing ---------------------------------------------------------------------------------
    def _write(self) -> None:
        """The writer thread: the only one that writes to the server. A write may block as long
        as the server does not read; callers never wait on it (they bound their own waits)."""
        fd = self.proc.stdin.fileno()
        try:
            while True:
                with self._outbox_cond:
                    while not self._outbox:
                        self._outbox_cond.wait()
                    item = self._outbox.popleft()
                if item is None:
                    break
                view = memoryview(item.data)
                while view:
                    view = view[os.write(fd, view):]
                with self._outbox_cond:
                    self._outbox_bytes -= len(item.data)
                item.sent.set()
        except OSError as e:
            self._die(f"writing to the server failed ({e.strerror or e})")
        finally:
            try:
                self.proc.stdin.close()  # closed here, by the one thread that writes to it
            except OSError:
                pass

    def _send(self, message: dict[str, Any]) -> _Outgoing:
        item = _Outgoing(encode(message))
        with self._outbox_cond:
            if self.dead is None:
                self._outbox.append(item)
                self._outbox_bytes += len(item.data)
                self._outbox_cond.notify()
            backlog = self._outbox_bytes
        if self.dead is not None:
            raise LspCrashed(self.dead)
        if backlog > MAX_QUEUED:
            self.kill(f"the server stopped reading its input ({backlog >> 20} MB unread)")
            raise LspCrashed(self.dead or "the server is gone")
        return item

    def kill(self, reason: str) -> None:
        """End a server that misbehaves, without waiting for it: the conversation is over now,
        the process tree is ended in the background."""
        self._die(reason)
        if not self._closing:  # (a close under way ends it anyway)
            threading.Thread(target=self.close, args=(0.0,), name=f"lsp-{self.name}-kill", daemon=True).start()

    def notify(self, method: str, params: Any) -> None:
        if self.dead:
            raise LspCrashed(self.dead)
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float) -> Any:
        if self.dead:
            raise LspCrashed(self.dead)
        rid = next(self._ids)
        pending = _Pending()
        with self._lock:
            self._pending[rid] = pending
        try:
            sent = self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).sent
        except LspCrashed:
            with self._lock:
                self._pending.pop(rid, None)
            raise
        if not pending.event.wait(timeout):
            with self._lock:
                self._pending.pop(rid, None)
            if not sent.is_set():  # it has not even read the request: it is not reading at all
                self.kill(f"the server did not read its input for {duration(timeout)} ({method} unsent)")
                raise LspCrashed(self.dead or "the server is gone")
            try:
                self.notify(lsp.CANCEL_REQUEST, {"id": rid})
            except LspCrashed:
                pass
            raise LspTimeout(f"the {self.name} language server did not answer {method} within {duration(timeout)}")
        if pending.error is not None:
            if self.dead:
                raise LspCrashed(self.dead)
            raise LspError(f"{self.name}: {pending.error.get('message', 'error')} ({method})")
        return pending.result

    # -- the session -----------------------------------------------------------------------------
    def initialize(self, timeout: float, options: dict | None = None) -> None:
        caps = {
            "textDocument": {
                "synchronization": {"didSave": False, "dynamicRegistration": False},
                "definition": {"linkSupport": True}, "implementation": {"linkSupport": True},
                "references": {}, "hover": {"contentFormat": ["plaintext", "markdown"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                "callHierarchy": {}, "publishDiagnostics": {"versionSupport": True},
            },
            "workspace": {"symbol": {}, "configuration": True, "workspaceFolders": True},
            "window": {"workDoneProgress": True},
        }
        result = self.request(lsp.INITIALIZE, {
            # a jailed server cannot see or signal this process (another pid namespace, Landlock's
            # signal scope): given our pid it would find us "gone" and exit. It ends when its
            # input closes.
            "processId": None if self.confined else os.getpid(),
            "rootUri": self.root.as_uri(), "rootPath": str(self.root),
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
            "capabilities": caps, "initializationOptions": options or None,
            "clientInfo": {"name": "codebelt"},
        }, timeout)
        self.capabilities = (result or {}).get("capabilities") or {}
        self.notify(lsp.INITIALIZED, {})
        if self.settings:
            self.notify(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, {"settings": self.settings})

    def sync(self, path: Path, text: str, language_id: str) -> int:
        """Open the document, or send its new text when it changed; returns its version."""
        with self._doc_lock:
            return self._sync(path, text, language_id)

    def _sync(self, path: Path, text: str, language_id: str) -> int:
        uri = path.as_uri()
        version = self.versions.pop(uri, None)  # re-inserted last: the dict is in use order
        if version is None:
            version = 1
            self.notify(lsp.TEXT_DOCUMENT_DID_OPEN, {"textDocument": {
                "uri": uri, "languageId": language_id, "version": version, "text": text}})
        elif self.texts.get(uri) != text:
            version += 1
            self.notify(lsp.TEXT_DOCUMENT_DID_CHANGE, {"textDocument": {"uri": uri, "version": version},
                                                       "contentChanges": [{"text": text}]})
        self.versions[uri] = version
        self.texts[uri] = text
        self.paths[uri] = path
        while len(self.versions) > MAX_OPEN_DOCUMENTS:  # the least recently used go back to disk
            self._close_document(next(iter(self.versions)))
        return version

    def open_documents(self) -> list[Path]:
        """The files this client holds open (the server reads their text from us, not disk)."""
        with self._doc_lock:
            return list(self.paths.values())

    def close_document(self, path: Path) -> None:
        with self._doc_lock:
            if path.as_uri() in self.versions:
                self._close_document(path.as_uri())

    def _close_document(self, uri: str) -> None:
        self.versions.pop(uri, None)
        self.texts.pop(uri, None)
        self.paths.pop(uri, None)
        self.notify(lsp.TEXT_DOCUMENT_DID_CLOSE, {"textDocument": {"uri": uri}})

    def published_since(self, uri: str, seq: int) -> Published | None:
        with self._diag_cond:
            p = self.diagnostics.get(uri)
            return p if p is not None and p.seq > seq else None

    def current_seq(self) -> int:
        with self._diag_cond:
            return max((p.seq for p in self.diagnostics.values()), default=0)

    def wait_diagnostics(self, uri: str, version: int, after_seq: int, timeout: float) -> Published | None:
        """The diagnostics for `version` of the document (or, from a server that publishes no
        version, the first published after `after_seq`); None when none came in time."""
        deadline = time.monotonic() + timeout
        with self._diag_cond:
            while True:
                p = self.diagnostics.get(uri)
                if p is not None and p.seq > after_seq and (p.version is None or p.version >= version):
                    return p
                left = deadline - time.monotonic()
                if left <= 0 or self.dead:
                    return None
                self._diag_cond.wait(left)

    def close(self, timeout: float = 2.0) -> None:
        with self._close_lock:
            self._close(timeout)

    def _close(self, timeout: float) -> None:
        self._closing = True
        if self.proc.poll() is None and not self.dead and timeout > 0:
            try:
                self.request(lsp.SHUTDOWN, None, timeout)
            except Exception:  # noqa: BLE001 - closing: whatever it says, it is ended below
                pass
        # Not `exit`, and its input still open: where the server is its own subreaper (Landlock
        # without signal scoping), one that exits on its own (as one does when its input closes)
        # leaves its orphans (a daemon it forked) to init. Killed first with its whole tree while
        # it still lives, nothing it started outlives it. (Only while it is not reaped: a reaped pid may
        # already be another process's.)
        if self.proc.poll() is None:
            end_tree(self.proc.pid)
        self._die("closed")  # nothing more is written; the writer closes the server's input
        try:
            self.proc.wait(max(timeout, 0.5))
        except subprocess.TimeoutExpired:
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.returncode is not None:
                # reaped: its number (the group's) may already lead someone else's new command
                if not signal_members(self.proc.pid, sig):
                    break
            else:
                try:
                    os.killpg(self.proc.pid, sig)  # its own group: whatever it started goes too
                except (ProcessLookupError, PermissionError):
                    break
            try:
                self.proc.wait(1.0)
            except subprocess.TimeoutExpired:
                continue
        self._stderr_thread.join(2.0)  # what it said last, for the failure reason (its tree is gone: EOF comes)
        self._writer.join(1.0)  # its write fails now that the server is gone
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        self._run_cleanup()

    def _run_cleanup(self) -> None:
        cleanup, self._cleanup = self._cleanup, None
        if cleanup is not None:
            try:
                cleanup()
            except OSError:
                pass
