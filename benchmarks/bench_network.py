"""The cost of network by domain: a small download through codebelt's proxy versus direct, in the
same run, interleaved round by round.

Variants, each spawning `curl` the way the Bash runner does (argv, own session, the sandbox's
wrapper, its environment):
  direct        no sandbox, curl straight to the server
  bwrap-open    bwrap with `sandbox.network: true` (the host's network, no proxy)
  bwrap-domain  bwrap with `sandbox.network: {allowedDomains: [...]}`: the stage inside hands
                its listener to the proxy, curl goes through HTTPS_PROXY (CONNECT), the gate
                decides, looks the name up (a table here) and records the connection
The server is a local HTTPS server on 127.0.0.1 named `allowed.test` (curl --resolve for the
direct variants, the proxy's table for the proxied one), so the numbers are the proxy's own
cost, not the internet's. `--payload none` runs /bin/true instead: what the stage alone adds to
every command. `--registry` downloads a small wheel from the real package index instead (few
rounds; needs the index reachable).

    .venv/bin/python benchmarks/bench_network.py [--rounds 40] [--payload 100k|10m|none] [--registry]
"""

from __future__ import annotations

import argparse
import http.server
import ipaddress
import os
import shutil
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import exact
from codebelt.network import Network, NetworkPolicy, Resolver
from codebelt.sandbox import Sandbox, SandboxConfig

WHEEL = "https://files.pythonhosted.org/packages/d9/5a/e7c31adbe875f2abbb91bd84cf2dc52d792b5a01506781dbcf25c91daf11/six-1.16.0-py2.py3-none-any.whl"


def make_cert(d: Path) -> tuple[Path, Path]:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", d / "k.pem", "-out",
                    d / "c.pem", "-days", "1", "-subj", "/CN=allowed.test", "-addext",
                    "subjectAltName=DNS:allowed.test"], check=True, capture_output=True)
    return d / "c.pem", d / "k.pem"


def serve(cert: Path, key: Path, payload: bytes) -> tuple[int, http.server.ThreadingHTTPServer]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv.server_address[1], srv


def run(wrap, attach, argv: list[str], cwd: Path) -> float:
    """One spawn, timed from building the wrapper to the command's exit."""
    t0 = time.perf_counter()
    env, preexec, cleanup, fds = dict(os.environ), None, None, ()
    for name in [k for k in env if "proxy" in k.lower()]:
        env.pop(name)
    attachment = attach() if attach is not None else None
    if wrap is not None:
        wrapped = (wrap(attachment) if attachment is not None else wrap(None))(argv, cwd, env)
        argv, env, preexec = wrapped[:3]
        cleanup = wrapped[3] if len(wrapped) > 3 else None
        fds = tuple(wrapped[4]) if len(wrapped) > 4 else ()
    proc = exact.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                     pass_fds=fds, timeout=120)
    if cleanup is not None:
        cleanup()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[-1][:80]}… failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--payload", choices=["100k", "10m", "none"], default="100k")
    ap.add_argument("--registry", action="store_true", help="a 11 kB wheel from the real package index")
    args = ap.parse_args()
    if shutil.which("curl") is None or shutil.which("openssl") is None:
        raise SystemExit("needs curl and openssl")
    with tempfile.TemporaryDirectory(prefix="bench-network-") as d:
        base = Path(d)
        ws, tmp = base / "ws", base / "tmp"
        ws.mkdir()
        tmp.mkdir()
        cert, key = make_cert(base)
        size = {"100k": 100_000, "10m": 10_000_000, "none": 1}[args.payload]
        port, srv = serve(cert, key, os.urandom(size))
        if args.registry:
            url, host, resolve, rounds = WHEEL, "files.pythonhosted.org", [], min(args.rounds, 10)
            curl = ["curl", "-sS", "--fail", "-o", "/dev/null", "--max-time", "60", url]
            allowed = [host]
            table = None
        else:
            url, rounds = f"https://allowed.test:{port}/file", args.rounds
            resolve = ["--resolve", f"allowed.test:{port}:127.0.0.1"]
            curl = ["curl", "-sS", "--fail", "-o", "/dev/null", "--max-time", "60", "--cacert", str(cert), url]
            allowed = ["allowed.test"]
            table = {"allowed.test": [ipaddress.ip_address("127.0.0.1")]}
        argv_direct = curl[:1] + resolve + curl[1:]
        if args.payload == "none":
            argv_direct = argv_proxy = ["/bin/true"]
        else:
            argv_proxy = curl
        open_sb = Sandbox(SandboxConfig((ws,), tmp, mode="bwrap", network=True, name="codebelt-bench"))
        domain_sb = Sandbox(SandboxConfig((ws,), tmp, mode="bwrap", domains=True, name="codebelt-bench"))
        if not (open_sb.status.active and domain_sb.filters_domains):
            raise SystemExit(f"bwrap is not usable here: {domain_sb.status.reason}")
        network = Network(NetworkPolicy.from_lists(allowed), Resolver(table) if table else None)
        variants = {
            "direct": (None, None, argv_direct),
            "bwrap-open": (lambda _a: open_sb.wrapper(), None, argv_direct),
            "bwrap-domain": (lambda a: domain_sb.wrapper(network=a),
                             lambda: network.attach("Bash", "bench", None), argv_proxy),
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        try:
            for name, (wrap, attach, argv) in variants.items():  # warm-up
                for _ in range(2 if args.registry else 5):
                    run(wrap, attach, argv, ws)
            for _ in range(rounds):
                for name, (wrap, attach, argv) in variants.items():
                    times[name].append(run(wrap, attach, argv, ws))
        finally:
            network.close()
            open_sb.close()
            domain_sb.close()
            srv.shutdown()
        what = "a 11 kB wheel from the package index" if args.registry else (
            "/bin/true (no download)" if args.payload == "none" else f"{args.payload} over HTTPS from 127.0.0.1")
        print(f"\n{what}, {rounds} rounds (median, p90, added over direct):")
        direct = statistics.median(times["direct"])
        for name, values in times.items():
            values.sort()
            med = statistics.median(values)
            p90 = values[int(len(values) * 0.9) - 1]
            print(f"  {name:<13} {med:8.1f} ms  p90 {p90:8.1f} ms  +{med - direct:7.1f} ms  ({med / direct:.2f}x)")
        proxied = statistics.median(times["bwrap-domain"]) - statistics.median(times["bwrap-open"])
        print(f"  the proxy's own cost (bwrap-domain - bwrap-open): {proxied:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
