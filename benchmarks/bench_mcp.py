"""MCP round-trip cost: a small Read over stdio and streamable HTTP vs. in-process Session.call.

    .venv/bin/python benchmarks/bench_mcp.py [--calls 1000] [--clients 16] [--per-client 100]

Latency: `--calls` sequential calls on one connection (median, p99). Throughput: `--clients`
concurrent clients each making `--per-client` calls (stdio: one server process per client, as
real stdio clients have; HTTP: one server, many connections). The floor is the same Read through
`Session.call` in this process (throughput: the same number of threads). Both protocol eras of the
SDK client are measured: the initialize handshake (2025-11-25) and 2026-07-28.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

CODEBELT = str(Path(sys.executable).with_name("codebelt"))
READ = ("Read", {"file_path": "small.py", "limit": 20})


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def make_workspace(base: Path) -> Path:
    root = base / "ws"
    root.mkdir()
    (root / "small.py").write_text("".join(f"line {i}: x = {i} * 2\n" for i in range(40)))
    return root


def env_for(base: Path) -> dict[str, str]:
    return {
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_STATE_HOME": str(base / "state"),
        "CODEBELT_AUDIT_DB": str(base / "audit.db"),
    }


# -- in-process floor ----------------------------------------------------------------------
def floor(root: Path, base: Path, calls: int, clients: int, per_client: int) -> tuple[list[float], float]:
    from codebelt import Session

    with Session(root, audit=base / "floor-audit.db", load_user_settings=False) as s:
        s.call(*READ)
        lat = []
        for _ in range(calls):
            t = time.perf_counter()
            r = s.call(*READ)
            lat.append(time.perf_counter() - t)
            assert not r.is_error, r.text
        barrier = threading.Barrier(clients)

        def worker() -> None:
            barrier.wait()
            for _ in range(per_client):
                s.call(*READ)

        with ThreadPoolExecutor(clients) as pool:
            t = time.perf_counter()
            list(pool.map(lambda _: worker(), range(clients)))
            elapsed = time.perf_counter() - t
    return lat, clients * per_client / elapsed


# -- MCP clients -----------------------------------------------------------------------------
def client_for(transport: str, era: str, root: Path, base: Path, url: str | None):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if transport == "stdio":
        params = StdioServerParameters(
            command=CODEBELT, args=["serve", "--root", str(root), "--sandbox", "off"], env=env_for(base)
        )
        return Client(params, mode=era)
    return Client(url, mode=era)


async def latency(transport: str, era: str, root: Path, base: Path, url: str | None, calls: int) -> list[float]:
    async with client_for(transport, era, root, base, url) as client:
        await client.list_tools()
        await client.call_tool(*READ)
        lat = []
        for _ in range(calls):
            t = time.perf_counter()
            r = await client.call_tool(*READ)
            lat.append(time.perf_counter() - t)
            assert not r.is_error
    return lat


async def throughput(transport: str, era: str, root: Path, base: Path, url: str | None,
                     clients: int, per_client: int) -> float:
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        conns = []
        for _ in range(clients):
            c = await stack.enter_async_context(client_for(transport, era, root, base, url))
            await c.list_tools()
            conns.append(c)

        async def run(c) -> None:
            for _ in range(per_client):
                r = await c.call_tool(*READ)
                assert not r.is_error

        t = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for c in conns:
                tg.start_soon(run, c)
        return clients * per_client / (time.perf_counter() - t)


def start_http(root: Path, base: Path) -> tuple[subprocess.Popen, str]:
    log = base / "http.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [CODEBELT, "serve", "--root", str(root), "--sandbox", "off", "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            env={**os.environ, **env_for(base)}, start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if "listening on " in line:
                return proc, line.split("listening on ", 1)[1].strip()
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"HTTP server did not start: {log.read_text()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--per-client", type=int, default=100)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        base = Path(tmp)
        root = make_workspace(base)
        rows = []
        lat, tput = floor(root, base, args.calls, args.clients, args.per_client)
        rows.append(("in-process Session.call (floor)", lat, tput))
        proc, url = start_http(root, base)
        try:
            for transport in ("stdio", "http"):
                for era, label in (("legacy", "2025-11-25"), ("auto", "2026-07-28")):
                    name = f"MCP {transport} ({label})"
                    print(f"measuring {name} …", file=sys.stderr, flush=True)
                    lat = anyio.run(latency, transport, era, root, base, url, args.calls)
                    tput = anyio.run(throughput, transport, era, root, base, url, args.clients, args.per_client)
                    rows.append((name, lat, tput))
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    floor_med, floor_p99, floor_tput = statistics.median(rows[0][1]), pct(rows[0][1], 99), rows[0][2]
    print(f"\nRead of a 40-line file: {args.calls} sequential calls; throughput with "
          f"{args.clients} concurrent clients x {args.per_client} calls ({os.cpu_count()} CPUs)\n")
    header = f"{'path':34} {'median ms':>10} {'p99 ms':>9} {'x floor':>8} {'calls/s':>9} {'x floor':>8}"
    print(header)
    print("-" * len(header))
    for name, lat, tput in rows:
        med, p99 = statistics.median(lat) * 1000, pct(lat, 99) * 1000
        print(f"{name:34} {med:10.3f} {p99:9.3f} {med / (floor_med * 1000):8.1f} "
              f"{tput:9.0f} {floor_tput / tput:8.1f}")
    print("\n'x floor' = MCP latency / in-process latency, and in-process throughput / MCP throughput.")


if __name__ == "__main__":
    main()
