"""A scripted model API on 127.0.0.1, shared by the recorders of scripts/claude_code/ and
scripts/codex/: an HTTP server on a free loopback port whose POSTs (JSON bodies, zstd or gzip
encoded when the client compresses them) are answered by a function, in threads; and
`ScriptedAPI`, what both mock APIs do around it (the script of turns, each resolved once, and
the stop when the same step is asked for again and again).

Only the standard library (and the `zstd` command when a client compresses with it) is used,
so the recorders run without the project installed.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Generic, TypeVar

# answer(path, request, headers) -> (status, body, content type)
Answer = Callable[[str, Any, dict[str, str]], tuple[int, bytes, str]]
NOT_FOUND = b'{"type":"error","error":{"type":"not_found_error","message":"mock"}}'
# A step asked for again and again means the conversation is not moving on: end it.
MAX_REPEATS = 4


def decode_body(raw: bytes, encoding: str | None) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "zstd":
        return subprocess.run(["zstd", "-d", "-c", "-q"], input=raw, capture_output=True, check=True).stdout
    return raw


class ScriptedServer:
    """`with ScriptedServer(answer) as server:` … `server.base_url`."""

    def __init__(self, answer: Answer):
        self.answer = answer
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "ScriptedServer":
        answer = self.answer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_HEAD(self) -> None:
                self._send(200, b"")

            def do_GET(self) -> None:
                self._send(404, NOT_FOUND)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    request = json.loads(decode_body(raw, self.headers.get("content-encoding")))
                except (ValueError, subprocess.CalledProcessError, OSError):
                    self._send(400, b"{}")
                    return
                status, body, content_type = answer(self.path.split("?")[0], request, dict(self.headers))
                self._send(status, body, content_type)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    """Server-sent events: `event: NAME` and one `data:` line of JSON each."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


Turn = TypeVar("Turn")


class ScriptedAPI(Generic[Turn]):
    """`with API(steps, resolve) as api:` … `api.base_url`, then `api.recording`. A subclass
    gives its `recording` (with `sent` and `errors`), answers in `_http` and may add a
    `base_path` to the URL. `resolve(step, turn, recording)`, when given, fills a turn's
    placeholders from what earlier steps returned, just before the turn is first sent."""

    base_path = ""

    def __init__(self, steps: list[Turn], resolve: Callable[[int, Turn, Any], Turn] | None, recording: Any):
        self.steps = steps
        self.resolve = resolve
        self.recording = recording
        self._lock = threading.Lock()
        self._asked: dict[int, int] = {}
        self._server: ScriptedServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return self._server.base_url + self.base_path

    def __enter__(self):
        self._server = ScriptedServer(self._http).__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.__exit__(*exc)

    def _http(self, path: str, request: Any, headers: dict[str, str]) -> tuple[int, bytes, str]:
        raise NotImplementedError

    def _looping(self, step: int) -> bool:
        """Count a request for `step` (hold `_lock`): whether it has been asked for too often."""
        self._asked[step] = self._asked.get(step, 0) + 1
        if self._asked[step] == MAX_REPEATS + 1:
            self.recording.errors.append(f"step {step} was asked for {MAX_REPEATS} times: stopping")
        return self._asked[step] > MAX_REPEATS

    def _turn(self, step: int) -> Turn:
        """The turn sent for `step` (hold `_lock`): resolved the first time, the same after."""
        turn = self.recording.sent.get(step)
        if turn is None:
            turn = self.steps[step]
            if self.resolve is not None:
                turn = self.resolve(step, turn, self.recording)
            self.recording.sent[step] = turn
        return turn
