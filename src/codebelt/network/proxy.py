"""The proxy sandboxed commands reach the network through: HTTP CONNECT, plain-HTTP forwarding
and SOCKS5 on one listener per command, run on an asyncio loop in a thread of codebelt's own
process, outside the sandbox.

Per command, `Proxy.attach(...)` makes a socketpair; the sandbox passes one end to the stage
(stage.py), which sends back a TCP listener bound on the sandbox's own loopback. The proxy
accepts on it directly: each connection comes from inside that sandbox, is read as SOCKS5 (first
byte 5) or HTTP, and is decided by the Gate (names only, no TLS interception: a CONNECT tunnel
carries the client's own TLS end to end). When the command ends, `Attachment.close()` closes
the listener and whatever connections are left; `Proxy.close()` stops the loop.

What a program sees when a connection is refused: an HTTP `403` whose reason phrase and body say
which host and which setting (curl, pip and git print the status line), or SOCKS5 reply 2
("connection not allowed by ruleset"); the Bash result then names the host and the setting
(`Attachment.denials`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from .gate import Asker, Gate, Ticket
from .policy import Verdict
from .sniff import Malformed, http_framing, kind_of
from .sniff import check as first_bytes_name

READ_CHUNK = 65_536
MAX_HEADER = 65_536
MAX_PER_COMMAND = 512  # connections one command may hold open to the proxy, decided or not
SOCKS_NOT_ALLOWED, SOCKS_UNREACHABLE, SOCKS_REFUSED, SOCKS_UNSUPPORTED, SOCKS_BAD_ADDRESS = 2, 4, 5, 7, 8
_HOP_HEADERS = ("proxy-connection", "proxy-authorization", "connection", "keep-alive", "host")


class _LimitReached(Exception):
    pass


class _Refused(Exception):
    """The tunnel's contents name another host than the one it was opened for."""


@dataclass(frozen=True)
class Denial:
    host: str
    port: int
    reason: str
    setting: str | None


class Attachment:
    """One command's way out: the socketpair end its sandbox gets, and what happened."""

    def __init__(self, proxy: "Proxy", origin: str, label: str, asker: Asker | None):
        self.proxy = proxy
        self.origin = origin
        self.label = label
        self.asker = asker
        self._parent, self._child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._parent.setblocking(False)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._denials: list[Denial] = []
        self._allowed: list[str] = []
        self._lock = threading.Lock()
        self._closed = False

    @property
    def child_fd(self) -> int:
        """The descriptor to pass to the sandboxed process (pass_fds); -1 once handed over."""
        return self._child.fileno() if self._child is not None else -1

    def handed_over(self) -> None:
        """The child holds its copy now: close ours (else the stage's exit would not be seen)."""
        child, self._child = self._child, None
        if child is not None:
            child.close()

    def denials(self) -> list[Denial]:
        with self._lock:
            return list(self._denials)

    def allowed_hosts(self) -> list[str]:
        with self._lock:
            return list(self._allowed)

    def _note(self, ticket: Ticket) -> None:
        v: Verdict = ticket.verdict
        with self._lock:
            if ticket.allowed:
                if v.host not in self._allowed:
                    self._allowed.append(v.host)
            elif not any(d.host == v.host and d.port == v.port for d in self._denials) and len(self._denials) < 50:
                self._denials.append(Denial(v.host, v.port, v.reason, v.setting))

    def _refused_inside(self, ticket: Ticket, reason: str) -> None:
        v = ticket.verdict
        with self._lock:
            if len(self._denials) < 50:
                self._denials.append(Denial(v.host, v.port, reason, None))

    def close(self) -> None:
        """The command ended: no more connections from its sandbox."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.handed_over()
        self.proxy._detach(self)


class Proxy:
    """One session's proxy: a loop thread, started on first use, and its attachments."""

    def __init__(self, gate: Gate, max_workers: int = 64):
        self.gate = gate
        self._max_workers = max_workers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._deciders: concurrent.futures.ThreadPoolExecutor | None = None
        self._attachments: set[Attachment] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- lifetime ------------------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("the network proxy is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                # deciding may wait for a person (up to the ask timeout): its own threads, so
                # one question never holds up other connections
                self._deciders = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix="codebelt-proxy-decide")
                self._thread = threading.Thread(target=run, name="codebelt-proxy", daemon=True)
                self._thread.start()
                ready.wait(10)
                self._loop = loop
            return self._loop

    def attach(self, origin: str = "Bash", label: str = "", asker: Asker | None = None) -> Attachment:
        loop = self._ensure_loop()
        att = Attachment(self, origin, label, asker)
        with self._lock:
            self._attachments.add(att)
        loop.call_soon_threadsafe(self._watch, att)
        return att

    def _detach(self, att: Attachment) -> None:
        with self._lock:
            self._attachments.discard(att)
            loop = self._loop
        if loop is None or loop.is_closed():
            att._parent.close()
            return
        done = threading.Event()

        def close_on_loop() -> None:
            try:
                try:
                    loop.remove_reader(att._parent.fileno())
                except (ValueError, OSError):
                    pass
                att._parent.close()
                if att._server is not None:
                    att._server.close()
                for w in list(att._writers):
                    w.close()
            finally:
                done.set()

        try:
            loop.call_soon_threadsafe(close_on_loop)
        except RuntimeError:  # the loop stopped meanwhile
            att._parent.close()
            return
        if threading.current_thread() is not self._thread:
            done.wait(5)

    def listening(self) -> int:
        """How many command listeners are open (0 once every command has ended)."""
        with self._lock:
            return sum(1 for a in self._attachments if a._server is not None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            attachments = list(self._attachments)
            loop, thread = self._loop, self._thread
        for att in attachments:
            att.close()
        if loop is not None and thread is not None:
            async def stop() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            try:
                asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
            except Exception:  # noqa: BLE001 - stopping as far as possible
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()
        if self._deciders is not None:
            self._deciders.shutdown(wait=False, cancel_futures=True)

    # -- receiving the listener --------------------------------------------------------------------------
    def _watch(self, att: Attachment) -> None:
        if att._closed:
            return
        assert self._loop is not None
        self._loop.add_reader(att._parent.fileno(), self._receive, att)

    def _receive(self, att: Attachment) -> None:
        loop = self._loop
        assert loop is not None
        fds: list[int] = []
        try:
            _msg, ancdata, _flags, _addr = att._parent.recvmsg(16, socket.CMSG_SPACE(4 * 4))
            for level, kind, data in ancdata:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += list(struct.unpack(f"{len(data) // 4}i", data[: len(data) - len(data) % 4]))
        except BlockingIOError:
            return
        except OSError:
            pass
        loop.remove_reader(att._parent.fileno())
        for extra in fds[1:]:
            os.close(extra)
        if not fds:
            return  # the stage ended without a listener (it said why on the command's stderr)
        try:
            listener = socket.socket(fileno=fds[0])
        except OSError:  # not a socket at all
            os.close(fds[0])
            return
        try:
            usable = (listener.type == socket.SOCK_STREAM and listener.family in (socket.AF_INET, socket.AF_INET6)
                      and listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1)
        except OSError:
            usable = False
        if att._closed or not usable:
            listener.close()
            return
        loop.create_task(self._serve_listener(att, listener))

    async def _serve_listener(self, att: Attachment, listener: socket.socket) -> None:
        handler = functools.partial(self._handle, att)
        server = await asyncio.start_server(handler, sock=listener, limit=MAX_HEADER)
        if att._closed:
            server.close()
            return
        att._server = server

    # -- one connection --------------------------------------------------------------------------------
    async def _handle(self, att: Attachment, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(att._writers) >= MAX_PER_COMMAND:  # before any decision: idle connections cost descriptors too
            writer.close()
            return
        att._writers.add(writer)
        try:
            limits = self.gate.policy.limits
            try:
                first = await asyncio.wait_for(reader.readexactly(1), limits.header_timeout_seconds)
            except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                return
            if first == b"\x05":
                await self._socks5(att, reader, writer)
            else:
                await self._http(att, first, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError,
                ValueError):
            pass
        finally:
            att._writers.discard(writer)
            writer.close()

    async def _decide(self, att: Attachment, host: str, port: int, protocol: str) -> Ticket:
        loop = asyncio.get_running_loop()
        decide = functools.partial(self.gate.open, host, port, origin=att.origin, label=att.label,
                                   protocol=protocol, asker=att.asker)
        ticket = await loop.run_in_executor(self._deciders, decide)
        att._note(ticket)
        return ticket

    async def _connect(self, ticket: Ticket) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | str:
        """A connection to one of the ticket's (checked) addresses, or why none could be made."""
        errors = []
        timeout = self.gate.policy.limits.connect_timeout_seconds
        for address in ticket.addresses:
            try:
                pair = await asyncio.wait_for(asyncio.open_connection(str(address), ticket.verdict.port), timeout)
            except (OSError, asyncio.TimeoutError) as e:
                errors.append(f"{address}: {e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__}")
                continue
            ticket.connected(str(address))
            return pair
        return "; ".join(errors) or "no address"

    async def _pipe(self, ticket: Ticket, client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter], att: Attachment | None = None,
                    tunnel: bool = False, up_limit: int | None = None) -> None:
        """Copy both ways until both ends are done. A tunnel's first client bytes must name the
        host it was opened for (sniff.py) before any of them is sent on."""
        async def send(dst: asyncio.StreamWriter, data: bytes, up: bool) -> None:
            if not ticket.add(up=len(data) if up else 0, down=0 if up else len(data)):
                raise _LimitReached()
            dst.write(data)
            await dst.drain()

        async def first_flight(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> bytes | None:
            """The client's first bytes, sent on once they name the tunnel's host; a plain HTTP
            start is returned unsent instead, for `http_requests` to frame."""
            seen = b""
            while True:
                data = await src.read(READ_CHUNK)
                if not data:
                    break
                seen += data
                done, why = first_bytes_name(seen, ticket.verdict.host)
                if why is not None:
                    raise _Refused(why)
                if done:
                    break
            if seen and kind_of(seen) == "http":
                return seen
            if seen:
                await send(dst, seen, True)
            return None

        async def http_requests(src: asyncio.StreamReader, dst: asyncio.StreamWriter, buffer: bytes) -> None:
            """Plain HTTP through a tunnel, one request at a time, each one's Host checked: a
            keep-alive connection to an allowed name must not carry a request for another site
            on the same server. A request switching protocols (Upgrade, CONNECT) ends the framing.
            A later request refused ends what the client sends, not the connection: the server
            gets end-of-file and finishes its answers to the requests before it."""
            first = True
            while buffer:
                lead = len(buffer) - len(buffer.lstrip(b"\r\n"))
                if lead:  # empty lines between requests, which servers skip: passed on as they are
                    await send(dst, buffer[:lead], True)
                    buffer = buffer[lead:] or await src.read(READ_CHUNK)
                    continue
                while b"\r\n\r\n" not in buffer:
                    if len(buffer) >= READ_CHUNK:
                        raise _Refused("an HTTP request head longer than 64 kB")
                    data = await src.read(READ_CHUNK)
                    if not data:
                        raise _Refused("the connection ended inside an HTTP request head")
                    buffer += data
                why = ("after an HTTP request, something other than an HTTP request" if kind_of(buffer) != "http"
                       else first_bytes_name(buffer, ticket.verdict.host)[1])
                if why is not None:
                    if first:
                        raise _Refused(why)
                    refused_later.append(why)
                    return
                first = False
                end = buffer.index(b"\r\n\r\n") + 4
                try:
                    body, switching = http_framing(buffer[:end])
                except Malformed as e:
                    raise _Refused(str(e)) from None
                now, buffer = buffer[:end + body], buffer[end + body:]
                await send(dst, now, True)
                body -= len(now) - end
                while body > 0:
                    data = await src.read(min(READ_CHUNK, body))
                    if not data:
                        return
                    body -= len(data)
                    await send(dst, data, True)
                if switching:  # the rest is the new protocol's (or the server declined and closes)
                    if buffer:
                        await send(dst, buffer, True)
                    await copy(src, dst, True, framed=True)
                    return
                if not buffer:
                    buffer = await src.read(READ_CHUNK)

        async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool, framed: bool = False) -> None:
            if up and tunnel and not ticket.verdict.address and not framed:
                http_start = await first_flight(src, dst)
                if http_start is not None:
                    await http_requests(src, dst, http_start)
                    if dst.can_write_eof():
                        try:
                            dst.write_eof()
                        except OSError:
                            pass
                    return
            left = up_limit if up else None
            while left is None or left > 0:
                data = await src.read(READ_CHUNK if left is None else min(READ_CHUNK, left))
                if not data:
                    break
                if left is not None:
                    left -= len(data)
                await send(dst, data, up)
            if left is None and dst.can_write_eof():  # the sender is done: tell the other end
                try:
                    dst.write_eof()
                except OSError:
                    pass

        error = None
        refused_later: list[str] = []  # a later request of a plain-HTTP tunnel, refused
        try:
            await asyncio.wait_for(asyncio.gather(copy(client[0], upstream[1], True), copy(upstream[0], client[1], False)),
                                   max(0.0, ticket.deadline() - time.monotonic()))
        except _Refused as e:
            refused_later.insert(0, str(e))
        except _LimitReached:
            error = f"stopped: the session passed sandbox.network.maxMB ({self.gate.policy.limits.max_bytes >> 20} MB)"
        except asyncio.TimeoutError:
            error = (f"stopped: open longer than sandbox.network.maxConnectionSeconds "
                     f"({self.gate.policy.limits.max_connection_seconds:g} s)")
        except (ConnectionError, OSError) as e:
            error = f"{type(e).__name__}: {e}"
        finally:
            if refused_later:
                error = f"refused: {refused_later[0]}"
                ticket.record.decision, ticket.record.reason = "denied", refused_later[0]
                if att is not None:
                    att._refused_inside(ticket, refused_later[0])
            upstream[1].close()
            ticket.close(error)

    # -- HTTP -------------------------------------------------------------------------------------------
    async def _http(self, att: Attachment, first: bytes, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        limits = self.gate.policy.limits
        try:
            rest = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), limits.header_timeout_seconds)
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            await _http_error(writer, 400, "Bad Request", "the request to the proxy is not HTTP or its header is too long")
            return
        head = (first + rest).decode("latin-1")
        request_line, *header_lines = head[:-4].split("\r\n")
        if any(ch in line for line in (request_line, *header_lines) for ch in "\r\n\x00") or any(
                line[:1] in (" ", "\t") for line in header_lines):
            # a bare CR or LF (or a folded line) splits headers differently for the server than
            # for us: a second Host header could hide in what we took for one
            await _http_error(writer, 400, "Bad Request", "header lines must end in CRLF, without folding")
            return
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _http_error(writer, 400, "Bad Request", "this is codebelt's network proxy: send CONNECT host:port, "
                              "or a request with an absolute http:// URL")
            return
        method, target, version = parts
        try:
            # a name outside ASCII comes as UTF-8 (as in SOCKS5): read as latin-1 it would be
            # another name, and be shown and asked about in that garbled form
            target = target.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            await _http_error(writer, 400, "Bad Request", "the request target is not UTF-8")
            return
        if method.upper() == "CONNECT":
            host, port = _authority(target)
            if host is None:
                await _http_error(writer, 400, "Bad Request", f"CONNECT needs host:port, got {target[:200]!r}")
                return
            ticket = await self._decide(att, host, port, "connect")
            if not ticket.allowed:
                await _http_denied(writer, ticket.verdict)
                return
            upstream = await self._connect(ticket)
            if isinstance(upstream, str):
                ticket.close(upstream)
                await _http_error(writer, 502, "Bad Gateway", f"codebelt could not connect to {ticket.verdict.host}:"
                                  f"{port}: {upstream}")
                return
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await self._pipe(ticket, (reader, writer), upstream, att, tunnel=True)
            return
        url = urlsplit(target)
        if url.scheme.lower() != "http" or not url.netloc:
            why = ("an https:// URL goes through CONNECT (the proxy never sees inside TLS)" if url.scheme.lower() == "https"
                   else "a proxy request needs an absolute http:// URL")
            await _http_error(writer, 400 if url.scheme.lower() != "https" else 501, "Not Proxied", why)
            return
        try:
            host, port = url.hostname, url.port or 80
        except ValueError:
            host, port = None, 0
        if not host:
            await _http_error(writer, 400, "Bad Request", f"no host in {target[:200]!r}")
            return
        names = [h.split(":", 1)[0].strip().lower() for h in header_lines if h]
        lengths = {h.split(":", 1)[1].strip() for h in header_lines if ":" in h
                   and h.split(":", 1)[0].strip().lower() == "content-length"}
        if "transfer-encoding" in names or len(lengths) > 1 or any(not v.isdigit() for v in lengths):
            await _http_error(writer, 501, "Not Implemented", "plain-HTTP requests through codebelt's proxy carry a "
                              "body only with one Content-Length (no chunked bodies); use https")
            return
        body = int(next(iter(lengths))) if lengths else 0
        ticket = await self._decide(att, host, port, "http")
        if not ticket.allowed:
            await _http_denied(writer, ticket.verdict)
            return
        upstream = await self._connect(ticket)
        if isinstance(upstream, str):
            ticket.close(upstream)
            await _http_error(writer, 502, "Bad Gateway", f"codebelt could not connect to {ticket.verdict.host}:{port}: "
                              f"{upstream}")
            return
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        kept = [h for h in header_lines if h and h.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
        # The Host header names the host decided on, in its canonical spelling (a server hosting
        # many names routes by it), and one request per upstream connection: a reused client
        # connection cannot reach another host.
        name = f"[{ticket.verdict.host}]" if ":" in ticket.verdict.host else ticket.verdict.host
        authority = name if url.port is None else f"{name}:{url.port}"
        request = (f"{method} {path} {version}\r\n".encode("utf-8")  # the client's own bytes, read as UTF-8
                   + "\r\n".join([f"Host: {authority}", *kept, "Connection: close", "", ""]).encode("latin-1"))
        upstream[1].write(request)
        ticket.add(up=len(request))
        # exactly this request's body goes on, nothing after it: a second request pipelined behind
        # it could name another host to a server that hosts many
        await self._pipe(ticket, (reader, writer), upstream, att, up_limit=body)

    # -- SOCKS5 -----------------------------------------------------------------------------------------
    @staticmethod
    async def _socks5_request(reader: asyncio.StreamReader,
                              writer: asyncio.StreamWriter) -> tuple[int, int, str, int] | None:
        """(version, command, host, port) of a SOCKS5 request, after the method negotiation;
        None when it was answered already (no acceptable method, an unknown address type)."""
        (count,) = await reader.readexactly(1)
        methods = await reader.readexactly(count)
        if 0 not in methods:
            writer.write(b"\x05\xff")  # no acceptable method: codebelt asks for no password
            await writer.drain()
            return None
        writer.write(b"\x05\x00")
        await writer.drain()
        version, command, _reserved, kind = await reader.readexactly(4)
        if kind == 1:
            host = socket.inet_ntop(socket.AF_INET, await reader.readexactly(4))
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, await reader.readexactly(16))
        elif kind == 3:
            (length,) = await reader.readexactly(1)
            raw = await reader.readexactly(length)
            try:
                host = raw.decode("utf-8")
            except UnicodeDecodeError:
                host = ""
        else:
            await _socks_reply(writer, SOCKS_BAD_ADDRESS)
            return None
        (port,) = struct.unpack(">H", await reader.readexactly(2))
        return version, command, host, port

    async def _socks5(self, att: Attachment, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # the whole request within the header time, as an HTTP request's head: a client that
        # stops half-way holds no connection open past it
        request = await asyncio.wait_for(self._socks5_request(reader, writer),
                                         self.gate.policy.limits.header_timeout_seconds)
        if request is None:
            return
        version, command, host, port = request
        if version != 5 or command != 1:
            # BIND and UDP ASSOCIATE would open a way in, or datagrams out: only CONNECT is relayed
            self.gate.refuse(host, port, origin=att.origin, label=att.label, protocol="socks5",
                             reason="SOCKS5 BIND and UDP ASSOCIATE are not relayed (only CONNECT; no UDP leaves the sandbox)")
            await _socks_reply(writer, SOCKS_UNSUPPORTED)
            return
        ticket = await self._decide(att, host or "\x00", port, "socks5")
        if not ticket.allowed:
            await _socks_reply(writer, SOCKS_NOT_ALLOWED)
            return
        upstream = await self._connect(ticket)
        if isinstance(upstream, str):
            ticket.close(upstream)
            await _socks_reply(writer, SOCKS_REFUSED if "refused" in upstream.lower() else SOCKS_UNREACHABLE)
            return
        await _socks_reply(writer, 0)
        await self._pipe(ticket, (reader, writer), upstream, att, tunnel=True)


def _authority(target: str) -> tuple[str | None, int]:
    """host and port of a CONNECT target (`host:port`, `[v6]:port`)."""
    host, sep, port_text = target.rpartition(":")
    if not sep or not port_text.isdigit() or not host:
        return None, 0
    port = int(port_text)
    if not 0 < port < 65536:
        return None, 0
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        return None, 0
    return host, port


async def _http_error(writer: asyncio.StreamWriter, status: int, phrase: str, message: str) -> None:
    body = (message + "\n").encode("utf-8", "replace")
    head = (f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    try:
        writer.write(head.encode("latin-1") + body)
        await writer.drain()
    except (ConnectionError, OSError):
        pass


async def _http_denied(writer: asyncio.StreamWriter, verdict: Verdict) -> None:
    """403 whose reason phrase carries the host and the setting: many programs print only the
    status line of a refused CONNECT (`Tunnel connection failed: 403 …`)."""
    short = f"Forbidden by codebelt: {verdict.host}:{verdict.port} " + (
        f"not allowed ({verdict.setting})" if verdict.setting else "not allowed")
    phrase = "".join(ch if 0x20 <= ord(ch) < 0x7F else "?" for ch in short)[:200]
    message = (f"codebelt's sandbox refused a connection to {verdict.host}:{verdict.port}: {verdict.reason}.")
    await _http_error(writer, 403, phrase, message)


async def _socks_reply(writer: asyncio.StreamWriter, code: int) -> None:
    try:
        writer.write(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))
        await writer.drain()
    except (ConnectionError, OSError):
        pass
