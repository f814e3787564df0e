"""Fixtures for the shell-execution tests: sessions that must not leak a single process.

`shell` builds sessions (sandbox off, permissions out of the way: these tests are about
running commands, not deciding them) and, at teardown, closes them and then scans the process
table: any live (non-zombie) process still carrying one of the sessions' markers, or whose
command line holds one of the tokens a test registered, fails the test.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codebelt.shell.execution.procs import MARKER_VAR


# Where other test runs keep their files: the machine may run several test suites at once (other
# clones, other pytest-xdist runs), with the same commands; set by `_this_run` below.
_OTHER_RUNS: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def _this_run(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()  # pytest-N, or pytest-N/popen-gwK under xdist
    run = base.parent if base.name.startswith("popen-") else base
    _OTHER_RUNS[:] = [str(run.parent) + "/", str(run) + "/"]


def _another_runs(pid: str) -> bool:
    """Whether the process works in another test run's directory: the same token in another
    run's command is not this test's leak."""
    if not _OTHER_RUNS:
        return False
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd") + "/"
    except OSError:
        return False
    return cwd.startswith(_OTHER_RUNS[0]) and not cwd.startswith(_OTHER_RUNS[1])


def live_processes(tokens: list[str], marker_prefixes: list[str]) -> list[str]:
    """'pid cmdline' of live processes matching a marker (environ) or a token (cmdline; but not
    one of another test run on the machine)."""
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            if stat[stat.rfind(b")") + 2 :].split()[0] in (b"Z", b"X"):
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        marked = any(f"{MARKER_VAR}={p}".encode() in environ for p in marker_prefixes)
        if marked or (any(t in cmdline for t in tokens) and not _another_runs(name)):
            found.append(f"{name} {cmdline}")
    return found


def wait_gone(tokens: list[str], marker_prefixes: list[str], within: float = 5.0) -> list[str]:
    """Live matching processes after waiting up to `within` s for them to go (signals are async)."""
    deadline = time.monotonic() + within
    while True:
        left = live_processes(tokens, marker_prefixes)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


class Shell:
    """Session factory + leak registry for one test."""

    def __init__(self, make_session, ws: Path):
        self._make = make_session
        self.ws = ws
        self.sessions = []
        self.tokens: list[str] = []

    def session(self, bash: dict | None = None, **kwargs):
        settings = {"bash": {"killGraceMs": 300, **(bash or {})}}
        settings.update(kwargs.pop("settings", {}))
        kwargs.setdefault("mode", "bypassPermissions")
        kwargs.setdefault("sandbox", "off")
        kwargs.setdefault("approver", lambda request: True)
        s = self._make(settings=settings, **kwargs)
        self.sessions.append(s)
        return s

    def token(self, value: str) -> str:
        """Register a string that must not appear in any live command line after the test."""
        self.tokens.append(value)
        return value

    def markers(self) -> list[str]:
        return [f"{s.id}-" for s in self.sessions]  # markers are <id>-<instance>.<n>


@pytest.fixture
def shell(make_session, ws):
    sh = Shell(make_session, ws)
    yield sh
    for s in sh.sessions:
        s.close()
    left = wait_gone(sh.tokens, sh.markers())
    assert not left, f"processes leaked past session close: {left}"
