"""A session's command output on disk has one cap for all its commands (bash.maxSessionOutputBytes),
besides the per-command one (bash.maxOutputBytes): many `yes` in the background cannot fill the
disk, and the result says which cap stopped a command."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

MB = 1 << 20


def _spooled(s) -> int:
    return sum(p.stat().st_size for p in (s.results_dir / "shell").glob("cmd-*.log"))


@pytest.mark.timeout(120)
def test_background_commands_stop_at_the_session_cap(shell):
    # 2 MB: a background task's pseudo-terminal passes about 1 MB/s, so a larger cap only waits longer
    s = shell.session(bash={"maxOutputBytes": 0, "maxSessionOutputBytes": 2 * MB})
    ids = [s.call("Bash", {"command": shell.token(f"yes quota-{i}"), "run_in_background": True}).data["backgroundTaskId"]
           for i in range(4)]
    deadline = time.monotonic() + 60
    results = {}
    while len(results) < len(ids):
        assert time.monotonic() < deadline, "the background commands were never stopped"
        for tid in ids:
            r = s.call("BashOutput", {"bash_id": tid, "filter": "^$"})
            if r.data["status"] != "running":
                results[tid] = r
        time.sleep(0.1)
    for r in results.values():
        assert r.data["status"] == "killed"
        assert "bash.maxSessionOutputBytes" in r.text and "per-command" not in r.text
    # Bounded: what they wrote past the cap is what a watcher tick lets through, not the disk.
    assert _spooled(s) < 2 * MB + 4 * 512 * MB


@pytest.mark.timeout(120)
def test_a_foreground_command_says_which_cap_stopped_it(shell):
    s = shell.session(bash={"maxOutputBytes": 0, "maxSessionOutputBytes": 5 * MB})
    r = s.call("Bash", {"command": "yes foreground"})
    assert "exceeded the session's limit (setting bash.maxSessionOutputBytes)" in r.text
    s2 = shell.session(bash={"maxOutputBytes": 5 * MB, "maxSessionOutputBytes": 0})
    r = s2.call("Bash", {"command": "yes foreground"})
    assert "per-command output limit (setting bash.maxOutputBytes)" in r.text


@pytest.mark.timeout(120)
def test_outputs_shown_inline_are_not_counted(shell):
    # Each output is shown whole and its file deleted: eight commands of 20 KB stay under a
    # 100 KB cap (each runs past a watcher tick, so an uncounted release would stop the later ones).
    s = shell.session(bash={"maxSessionOutputBytes": 100_000})
    for _ in range(8):
        r = s.call("Bash", {"command": "head -c 20000 /dev/zero | tr '\\0' x; sleep 0.3; echo"})
        assert not r.is_error and "maxSessionOutputBytes" not in r.text


def test_a_workspace_may_lower_the_cap_but_not_raise_it(make_session, ws):
    (ws / ".codebelt").mkdir()
    settings = ws / ".codebelt" / "settings.json"
    settings.write_text(json.dumps({"bash": {"maxSessionOutputBytes": 1 * MB}}))
    assert make_session().settings.bash.max_session_output_bytes == 1 * MB
    for raised in (0, 1 << 40):  # 0 is "no limit": higher than any
        settings.write_text(json.dumps({"bash": {"maxSessionOutputBytes": raised}}))
        assert make_session().settings.bash.max_session_output_bytes == 8 << 30
    assert make_session(settings={"bash": {"maxSessionOutputBytes": 0}}).settings.bash.max_session_output_bytes == 0
