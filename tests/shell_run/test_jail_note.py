"""The read-only jail's note after a failed command: only when the jail is the plausible cause
(a path it does not show, a write it refused, no network), never on an ordinary missing file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.tools._jail_note import NOTE, JailView, jail_note

WS = Path("/work/project")
DENIED = WS / "secrets"


def view() -> JailView:
    return JailView([WS], lambda p: p == DENIED or DENIED in p.parents)


# (output line, the jail's?) in the words of the programs that print them
LINES = [
    # ordinary missing files: in the workspace, relative or absolute, or in a system directory
    ("cat: nope.txt: No such file or directory", False),
    ("ls: cannot access 'missing-dir': No such file or directory", False),
    ("/bin/bash: line 1: cd: no-such-dir: No such file or directory", False),
    ("grep: /work/project/src/gone.py: No such file or directory", False),
    ("sed: can't read notes.md: No such file or directory", False),
    ("python3: can't open file '/work/project/run.py': [Errno 2] No such file or directory", False),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'data/in.csv'", False),
    ("head: cannot open '/usr/share/dict/none' for reading: No such file or directory", False),
    ("No such file or directory", False),  # no path named: nothing says it is the jail's
    # what the jail does not show: outside the visible directories, escaping the workspace, masked
    ("cat: /home/alice/notes.txt: No such file or directory", True),
    ("ls: cannot access '/tmp/build.log': No such file or directory", True),
    ("cat: ../other-project/README: No such file or directory", True),
    ("stat: cannot statx '/var/log/syslog': No such file or directory", True),
    ("cat: secrets/key.pem: No such file or directory", True),
    ("cat: /home/alice/notes.txt: Permission denied", True),
    ("FileNotFoundError: [Errno 2] No such file or directory: \"/root/.config/app.json\"", True),
    # refusals the jail makes: writes, sockets, network
    ("fatal: Unable to create '/work/project/.git/index.lock': Read-only file system", True),
    ("ping: socket: Permission denied", True),
    ("curl: (6) Could not resolve host; Temporary failure in name resolution", True),
    ("connect: Network is unreachable", True),
    ("Operation not permitted", True),
]


@pytest.mark.parametrize("line,theirs", LINES, ids=[line for line, _ in LINES])
def test_the_note_comes_only_when_the_jail_is_the_plausible_cause(line, theirs):
    got = jail_note(f"some output\n{line}\n", WS, view())
    assert got == (NOTE if theirs else None)


def test_a_refused_write_on_a_path_the_host_may_write_is_the_jails(tmp_path):
    # Landlock refuses writes with EACCES; a path this process may write was refused by the jail,
    # one it may not write (nor create) is an ordinary refusal
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("x")
    v = JailView([ws], lambda p: False)
    assert jail_note(f"touch: cannot touch '{ws}/a.txt': Permission denied", ws, v) == NOTE
    if os.geteuid() != 0:  # root may write anything
        locked = ws / "locked"
        locked.mkdir(mode=0o500)
        assert jail_note(f"touch: cannot touch '{locked}/new': Permission denied", ws, v) is None


def test_a_workspace_link_out_of_the_view_is_not_shown(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (ws / "link").symlink_to(home)
    v = JailView([ws], lambda p: False)
    assert jail_note("cat: link/file.txt: No such file or directory", ws, v) == NOTE
    assert jail_note("cat: other/file.txt: No such file or directory", ws, v) is None


def test_whether_a_hidden_path_exists_on_the_host_changes_nothing(tmp_path):
    # the note must not tell the model what the jail hides
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "there.txt").write_text("hidden")
    v = JailView([ws], lambda p: False)
    for name in ("there.txt", "absent.txt"):
        assert jail_note(f"cat: {outside / name}: No such file or directory", ws, v) == NOTE


# -- through a real session, in the real jail ------------------------------------------------------
@pytest.fixture
def jailed_session(ws: Path):
    with Session(ws) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        yield s


def test_a_missing_workspace_file_gets_no_note(jailed_session, ws):
    result = jailed_session.call("Bash", {"command": "cat nope.txt"})
    assert result.is_error and "nope.txt: No such file or directory" in result.text
    assert "read-only jail" not in result.text


def test_a_file_outside_the_jail_gets_the_note(jailed_session, ws, tmp_path):
    # A command judged read-only that reads outside what the jail shows: git runs the program
    # repository config names (the classifier does not read repository config; the jail is what
    # makes that harmless). On the host the file is there; in the jail it is not.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "there.txt").write_text("on the host, not in the jail\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "-C", str(ws), "add", "a.txt"], check=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    subprocess.run(["git", "-C", str(ws), "config", "diff.external", f"cat {outside / 'there.txt'}"], check=True)
    result = jailed_session.call("Bash", {"command": "git diff"})
    assert "Permission to use Bash" not in result.text  # it ran, unasked, in the jail
    assert result.is_error and f"{outside / 'there.txt'}: No such file or directory" in result.text
    assert NOTE in result.text
