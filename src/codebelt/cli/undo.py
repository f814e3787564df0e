"""`codebelt undo [--dry-run] [--force] [--json]`: undo the workspace's last checkpoint (a
rewind's too: that is a redo)."""

from __future__ import annotations

import argparse

from .common import make_session
from .rewind import add_options, show


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_options(parser)


def run(args: argparse.Namespace) -> int:
    with make_session(args, interactive=False) as session:
        report = session.undo(force=args.force, dry_run=args.dry_run, all_sessions=True)
        root = str(session.workspace.root)
    return show(report, args, root)
