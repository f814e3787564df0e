"""What every subcommand shares: building the Session from the common options."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..permissions.approvers import terminal_approver_if_interactive


def make_session(args: argparse.Namespace, *, interactive: bool = True, announce: bool = True,
                 long_lived: bool = False, **kwargs: Any):
    """The Session of the common options. `announce`: say on stderr what of the settings was
    ignored and how to trust the workspace (the MCP server says it in its own log). A session
    that lives for one command (not `long_lived`) begins no checkpoint baseline at its start."""
    from ..session import Session

    if not long_lived:
        settings = dict(kwargs.get("settings") or {})
        settings["checkpoints"] = {**settings.get("checkpoints", {}), "baselineAtStart": False}
        kwargs["settings"] = settings

    if interactive and "approver" not in kwargs:
        kwargs["approver"] = terminal_approver_if_interactive()
    session = Session(
        root=args.root,
        mode=args.mode,
        sandbox=args.sandbox,
        settings_file=args.settings,
        trust_workspace=getattr(args, "trust_workspace", False),
        profile=getattr(args, "profile", None),
        **kwargs,
    )
    if announce:
        for warning in session.settings.warnings:
            sys.stderr.write(f"codebelt: warning: {warning}\n")
    return session
