"""`codebelt rewind ID [--dry-run] [--force] [--json]`: the workspace as it was before
checkpoint ID — it and every later checkpoint undone, newest first. A path changed since by
someone else is left as it is (and listed) unless --force; --dry-run shows the diff and changes
nothing. The rewind is itself a checkpoint: `codebelt undo` redoes."""

from __future__ import annotations

import argparse
import json
import sys

from . import UsageError
from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", type=int, help="the checkpoint (see `codebelt checkpoints`)")
    add_options(parser)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="show what would change, as a diff; change nothing")
    parser.add_argument("--force", action="store_true", help="also overwrite paths changed since by someone else")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from ..errors import ToolError

    with make_session(args, interactive=False) as session:
        try:
            report = session.rewind(args.id, force=args.force, dry_run=args.dry_run, all_sessions=True)
        except ToolError as e:
            raise UsageError(e.message) from None
        root = session.workspace.root
    return show(report, args, str(root))


def show(report, args: argparse.Namespace, root: str) -> int:
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        rel = (lambda p: p[len(root) + 1:] if p.startswith(root + "/") else p)
        sys.stdout.write(report.text(rel) + "\n")
    return 1 if report.conflicts else 0
