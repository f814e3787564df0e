"""The terminal approver: what it shows and how it reads the answer."""

from __future__ import annotations

import io

import pytest

from codebelt.permissions.approvers import ApprovalRequest, TerminalApprover
from codebelt.permissions.decision import Decision


@pytest.mark.parametrize("answer,approved", [("y\n", True), ("YES\n", True), ("n\n", False), ("\n", False), ("", False), ("maybe\n", False)])
def test_terminal_approver_answers(answer, approved):
    out = io.StringIO()
    approver = TerminalApprover(io.StringIO(answer), out)
    req = ApprovalRequest("Bash", {"command": "git push origin main"}, Decision.ask("ask: `git push` is not read-only", "mode"),
                          detail="git push origin main")
    assert approver(req) is approved
    shown = out.getvalue()
    assert "codebelt wants to run Bash:\n│ git push origin main\n" in shown and "not read-only" in shown and "[y/N]" in shown


def test_summary_cuts_long_inputs():
    req = ApprovalRequest("Write", {"file_path": "a.txt", "content": "x" * 10_000}, Decision.ask("why", "mode"), detail="a.txt")
    assert req.summary() == "Write: a.txt"
    long = ApprovalRequest("Bash", {"command": "echo " + "y" * 1_000}, Decision.ask("why", "mode"), detail="echo " + "y" * 1_000)
    assert len(long.summary()) < 450 and long.summary().endswith("…")
