"""`codebelt audit [--tail N] [--tool T] [--session ID] [--errors] [--network] [--json] [--db PATH]`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import audit


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tail", type=int, default=20, help="last N calls (0 = all)")
    parser.add_argument("--tool", default=None)
    parser.add_argument("--session", default=None, help="only this session id")
    parser.add_argument("--errors", action="store_true", help="only calls that returned an error")
    parser.add_argument("--network", action="store_true",
                        help="network connections (the sandbox's proxy and WebFetch) instead of calls")
    parser.add_argument("--json", action="store_true", help="export as JSON lines")
    parser.add_argument("--db", default=None, help="audit database (default: the user's state dir)")


def run(args: argparse.Namespace) -> int:
    path = Path(args.db) if args.db else audit.default_path()
    if args.network:
        return _connections(path, args)
    rows = audit.query(path, tail=args.tail or None, tool=args.tool, session_id=args.session, errors_only=args.errors)
    for row in rows:
        if args.json:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["ts"]))
        status = "ERROR" if row["is_error"] else "ok"
        decision = f"{row['decision']}({row['decided_by']})" if row["decision"] else "-"
        if row.get("confinement") and row["confinement"] != "none":
            decision += f"/{row['confinement']}"  # where what the call started ran
        inp = row["input"] if len(row["input"]) <= 100 else row["input"][:100] + "…"
        checkpoint = f"  checkpoint {row['checkpoint']}" if row.get("checkpoint") is not None else ""
        sys.stdout.write(
            f"{when} {row['session_id']} {row['tool']:<10} {decision:<22} {status:<5} "
            f"{row['duration_ms']:>9.1f}ms {row['result_chars']:>7}ch  {inp}{checkpoint}\n"
        )
    return 0


def _connections(path: Path, args: argparse.Namespace) -> int:
    for row in audit.connections(path, session_id=args.session, tail=args.tail or None):
        if args.errors and row["decision"] != "denied" and not row["error"]:
            continue
        if args.json:
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["ts"]))
        host = f"[{row['host']}]" if ":" in row["host"] else row["host"]
        asked = " asked" if row["asked"] else ""
        why = row["error"] or row["reason"] or ""
        sys.stdout.write(
            f"{when} {row['session_id']} {row['origin']:<8} {row['decision']:<7}{asked:<6} {host}:{row['port']:<6} "
            f"{row['protocol'] or '-':<7} up {row['bytes_up']:>9} down {row['bytes_down']:>10} "
            f"{row['duration_ms']:>9.1f}ms  {why[:120]}\n"
        )
    return 0
