"""Ignore files ripgrep cannot read safely — a FIFO (its open blocks), links to devices and to
rg's own pipes (endless reads), a huge file — end every search in bounded time and memory,
jailed on each backend and unjailed: jailed, a device is not there to read, and a file that made
the search hang or die is masked for a second run and for the rest of the session; unjailed, the
result names it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from codebelt.search import ignore_files


# (name, how the .gitignore is made)
HOSTILE = {
    "fifo": lambda p: os.mkfifo(p),
    "dev-zero": lambda p: os.symlink("/dev/zero", p),
    "dev-urandom": lambda p: os.symlink("/dev/urandom", p),
    "own-stdout": lambda p: os.symlink("/proc/self/fd/1", p),
    "huge": lambda p: p.write_bytes(b"x" * (ignore_files.IGNORE_FILE_MAX + 1)),
}
TIMEOUT_MS = 3_000




def session(make_session, ws: Path, confined: str):
    sandbox = {"jail": False} if confined == "unjailed" else {"mode": confined}
    s = make_session(root=ws, settings={"sandbox": sandbox, "search": {"timeoutMs": TIMEOUT_MS}})
    if confined != "unjailed" and s.sandbox().jail.backend != confined:
        pytest.skip(f"no {confined} jail here: {s.sandbox().jail.reason}")
    return s


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_ignore_file_ends_in_bounded_time(kind, confined, ws, make_session):
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("needle\n")
    (ws / "top.txt").write_text("needle\n")
    HOSTILE[kind](ws / "sub" / ".gitignore")
    s = session(make_session, ws, confined)
    started = time.monotonic()
    r = s.call("Grep", {"pattern": "needle"})
    # at most the timeout twice (once, and again without the file) plus the look for it
    assert time.monotonic() - started < 2 * TIMEOUT_MS / 1000 + 10, r.text
    if confined == "unjailed":
        # nothing can hide the file from an unjailed rg: the answer finds the rest, or names it
        assert "top.txt" in r.text or "sub/.gitignore" in r.text, r.text
        return
    assert "top.txt" in r.text and "sub/a.txt" in r.text, r.text
    again = time.monotonic()
    r = s.call("Glob", {"pattern": "**/*.txt"})  # a later search leaves it out at once
    assert set(r.data["filenames"]) == {"top.txt", "sub/a.txt"}, r.text
    assert time.monotonic() - again < TIMEOUT_MS / 1000, r.text


def test_unsafe_ignore_files_are_found(ws):
    (ws / "d").mkdir()
    os.mkfifo(ws / "d" / ".ignore")
    os.symlink("/dev/zero", ws / ".rgignore")
    (ws / ".gitignore").write_text("build/\n")
    os.symlink("../elsewhere", ws / "d" / ".gitignore")  # dangling: rg reports it and goes on
    (ws / ".git" / "info").mkdir(parents=True)
    os.mkfifo(ws / ".git" / "info" / "exclude")
    found = ignore_files.unsafe_ignore_files(ws)
    assert found == sorted([ws / "d" / ".ignore", ws / ".rgignore", ws / ".git" / "info" / "exclude"])
