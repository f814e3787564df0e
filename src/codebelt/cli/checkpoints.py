"""`codebelt checkpoints [--json] [--limit N]`: the workspace's checkpoints, newest last — what
each call changed (every session's: the CLI's calls each run in a process of their own)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print them as JSON")
    parser.add_argument("--limit", type=int, default=50, help="the newest N (default 50)")


def run(args: argparse.Namespace) -> int:
    with make_session(args, interactive=False) as session:
        cps = session.checkpoints(all_sessions=True)[-max(1, args.limit):]
    if args.json:
        json.dump(cps, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not cps:
        print("No checkpoints in this workspace.")
        return 0
    for cp in cps:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(cp["started"]))
        state = " (running)" if cp["open"] else ""
        label = " ".join(cp["label"].split())
        print(f"{cp['id']:>6}  {when}  {cp['kind']:<6} {cp['tool']:<10} {label[:80]}{state}")
        paths = cp["paths"]
        shown = ", ".join(paths[:5]) + (f", … {len(paths) - 5} more" if len(paths) > 5 else "")
        print(f"        {len(paths)} path(s): {shown}" if paths else "        nothing changed")
        if cp["notKept"]:
            print(f"        not kept: {', '.join(cp['notKept'][:5])}")
        for note in cp["notes"]:
            print(f"        {note}")
    return 0
