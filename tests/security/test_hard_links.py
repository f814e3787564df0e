"""A hard link to a Read-denied file is the file: `ln .env x` must not open a second door. A file
whose (st_dev, st_ino) is a denied file's is denied to the file tools (at the decision and again
at the open), hidden from Grep and Glob, denied to the command classifier's path checks, and
masked in the read-only jail. Verified by effect: the secret never comes back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.test_jail import jailed

SECRET = "TOKEN=hl-4d2c9"
DENY = {"permissions": {"deny": ["Read(./.env)", "Read(./secrets/**)"]}}
PATCH = "*** Begin Patch\n{}\n*** End Patch"


@pytest.fixture
def linked(ws: Path) -> Path:
    (ws / ".env").write_text(SECRET + "\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key").write_text(SECRET + "\n")
    (ws / "docs").mkdir()
    os.link(ws / ".env", ws / "x")
    os.link(ws / ".env", ws / "docs" / "notes.txt")
    os.link(ws / "secrets" / "key", ws / "docs" / "key.txt")
    (ws / "plain.txt").write_text("plain\n")
    return ws


ALIASES = ["x", "docs/notes.txt", "docs/key.txt"]

CALLS = [
    ("Read", lambda p: {"file_path": p}),
    ("Write", lambda p: {"file_path": p, "content": "overwritten\n"}),
    ("Edit", lambda p: {"file_path": p, "old_string": "TOKEN", "new_string": "T"}),
    ("MultiEdit", lambda p: {"file_path": p, "edits": [{"old_string": "TOKEN", "new_string": "T"}]}),
    ("ApplyPatch", lambda p: {"input": PATCH.format(f"*** Update File: {p}\n@@\n-{SECRET}\n+leaked")}),
    ("ApplyPatch", lambda p: {"input": PATCH.format(f"*** Update File: {p}\n*** Move to: moved.txt\n@@\n-{SECRET}\n+{SECRET}")}),
]


@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize("tool,make", CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)])
def test_file_tools_refuse_other_names_of_a_denied_file(linked, make_session, alias, tool, make):
    s = make_session(mode="acceptEdits", settings=DENY)
    r = s.call(tool, make(alias))
    assert r.is_error and "hard link" in r.text, r.text
    assert SECRET not in r.text
    assert (linked / ".env").read_text() == SECRET + "\n"
    assert (linked / "secrets" / "key").read_text() == SECRET + "\n"
    assert not (linked / "moved.txt").exists()


def test_search_hides_other_names_of_a_denied_file(linked, make_session):
    s = make_session(settings=DENY)
    for mode in ("content", "files_with_matches", "count"):
        r = s.call("Grep", {"pattern": "TOKEN", "output_mode": mode})
        assert SECRET not in r.text and "notes.txt" not in r.text and "key.txt" not in r.text, r.text
    r = s.call("Glob", {"pattern": "**/*.txt"})
    assert "plain.txt" in r.text and "notes.txt" not in r.text and "key.txt" not in r.text, r.text


@pytest.mark.parametrize("command", ["cat x", "head -1 docs/notes.txt", "cat docs/*", "tail -n +1 ./?",
                                     "ls | xargs cat", "ls docs | sed 's|^|docs/|' | xargs cat"])
def test_commands_never_show_the_secret(linked, make_session, command):
    """Named paths are denied by the classifier's path checks (the inode is a denied file's)."""
    s = make_session(settings=DENY)
    r = s.call("Bash", {"command": command})
    assert SECRET not in r.text, r.text
    if "xargs" not in command:
        assert "hard link" in r.text, r.text


def test_jail_masks_the_links(linked, make_session):
    """Names the classifier cannot see are masked in the read-only jail: every other name of a
    denied file is in the masks, and reading it there shows nothing."""
    s = make_session(settings=DENY)
    masks = s.engine.read_denied_paths()
    assert {linked / ".env", linked / "secrets", linked / "x", linked / "docs" / "notes.txt",
            linked / "docs" / "key.txt"} <= set(masks)
    assert linked / "plain.txt" not in masks
    if s.sandbox().jail.backend != "bwrap":
        pytest.skip("only bwrap masks paths inside the workspace (Landlock cannot)")
    proc = jailed(s.sandbox(), "cat x docs/notes.txt docs/key.txt plain.txt", linked, masks)
    assert SECRET not in proc.stdout and "plain" in proc.stdout, proc.stdout


SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
print("ready", flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""


def test_a_link_swapped_in_after_the_decision_is_refused_at_the_open(linked, make_session):
    """`y` flips between a plain file and a hard link to .env: whichever the decision saw, the
    file opened is checked again."""
    (linked / "y").write_text("plain y\n")
    os.link(linked / ".env", linked / "y-link")
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(linked / "y"), str(linked / "y-link")],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        s = make_session(settings=DENY)
        for _ in range(1500):
            r = s.call("Read", {"file_path": "y"})
            assert SECRET not in r.text, r.text
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
