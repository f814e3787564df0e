"""Which commands need their final directory recorded (the EXIT trap costs bash a fork)."""

from __future__ import annotations

import pytest

from codebelt.shell.analysis.parse import parse


def may_change_cwd(command: str) -> bool:
    return parse(command).may_change_cwd

CASES = [
    ("true", False),
    ("ls -la && git status", False),
    ("npm test 2>&1 | tail -5", False),
    ("/usr/bin/env ls", False),
    ("cd sub", True),
    ("ls; cd ..", True),
    ("pushd /tmp", True),
    ("popd", True),
    ("source env.sh", True),
    (". ./env.sh", True),
    ("eval 'cd x'", True),
    ("builtin cd x", True),
    ("command cd x", True),
    ("exec bash", True),
    ("(cd sub && ls)", True),       # complex: recorded to be safe
    ("f() { cd /; }; f", True),
    ("$CMD x", True),
    ("FOO=1", True),
    ("", True),
]


@pytest.mark.parametrize("command,expected", CASES)
def test_may_change_cwd(command, expected):
    assert may_change_cwd(command) is expected


def test_cd_still_persists_and_plain_commands_keep_it(make_session, ws):
    (ws / "sub").mkdir()
    s = make_session(sandbox="off", mode="bypassPermissions")
    assert not s.call("Bash", {"command": "cd sub"}).is_error
    assert s.call("Bash", {"command": "pwd"}).text.strip().endswith("/sub")
    assert s.call("Bash", {"command": "true"}).is_error is False
    assert s.call("Bash", {"command": "pwd -P"}).text.strip().endswith("/sub")
