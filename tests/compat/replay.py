"""Run a compatibility case through codebelt, as Claude Code ran it.

The calls go through a real Session and the Anthropic adapter (`run_tool_uses`), so what is
compared is the `tool_result` block a model would read. The session mirrors how Claude Code was
recorded: bypassPermissions (nothing is asked), no sandbox and no read-only jail (Claude Code ran
unsandboxed), no user settings, the workspace as root and cwd.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from codebelt import Session
from codebelt.adapters import run_tool_uses

from . import harness


def session_for(ws: Path, profile: str = harness.DEFAULT_PROFILE, **settings: Any) -> Session:
    return Session(root=ws, mode="bypassPermissions", sandbox="off", audit=False, load_user_settings=False,
                   settings={"lsp": {"autoDetect": False}, "sandbox": {"jail": False},
                             "compat": {"profile": profile}, **settings})


def run_case(case: harness.Case, release: harness.Release | None = None) -> dict[str, Any]:
    """{"calls": [{tool, input, result}], "files": what changed} — the golden's shape — in a
    session of the release's profile (default: the current release's)."""
    # like the recorder's: a directory of its own in the system temp dir, the workspace inside it
    with tempfile.TemporaryDirectory(prefix="cc-replay-") as tmp:
        ws = Path(tmp) / "ws"
        harness.build_workspace(case.workspace, ws)
        before = harness.snapshot(ws)
        calls = []
        with session_for(ws, release.profile if release is not None else harness.DEFAULT_PROFILE) as session:
            tasks = harness.Placeholders((str(session.results_dir.parent), tmp))
            for i, (tool, data) in enumerate(case.calls):
                sent = harness.substitute(data, str(ws), tasks)
                [block] = run_tool_uses(session, [{"type": "tool_use", "id": f"toolu_{i:04d}", "name": tool, "input": sent}])
                calls.append({"tool": tool, "input": data, **harness.result_of([block], str(ws), tasks)})
        return {"calls": calls, "files": harness.normalise_files(harness.changes(ws, before), str(ws), tasks)}


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """What must match: each call's tool_result and the files the calls changed (the blocks a
    harness adds next to a result — reminders, notifications — are Claude Code's, not a tool's;
    so are the background-shell reminders Claude Code 1.0 wrote at the end of a result)."""
    return {
        "calls": [harness.without_shell_reminders(c.get("result", c.get("missing"))) for c in record["calls"]],
        "files": record.get("files", {}),
    }
