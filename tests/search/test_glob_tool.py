"""Glob through Session.call: patterns, ordering, truncation, bases, permissions."""

from __future__ import annotations

import json
import os

import pytest

from codebelt.tools.glob import Glob

# (input, expected filenames in order). Paths in a pattern are relative to `path` (or root).
CASES = [
    ({"pattern": "**/*.py"}, ["src/util.py", "src/app.py"]),  # build/ is gitignored
    ({"pattern": "*.py"}, ["src/util.py", "src/app.py"]),  # no slash: any depth, like rg
    ({"pattern": "src/*.py"}, ["src/util.py", "src/app.py"]),
    ({"pattern": "*.py", "path": "src"}, ["src/util.py", "src/app.py"]),
    ({"pattern": "deep/*", "path": "src"}, ["src/deep/x.js"]),
    ({"pattern": "**/*.{js,md}"}, ["docs/readme.md", "src/deep/x.js"]),
    ({"pattern": "*.txt"}, [".hidden/secret.txt"]),  # hidden files included
    ({"pattern": "config"}, []),  # .git/config: VCS dirs never listed
    ({"pattern": "**/store"}, []),  # nor .hg
    ({"pattern": "*.nothing"}, []),
    ({"pattern": "../*.md", "path": "src/deep"}, []),  # src/*.md: none
    ({"pattern": "../../docs/*.md", "path": "src/deep"}, ["docs/readme.md"]),
    ({"pattern": "./*.bin"}, ["data.bin"]),  # "./" anchors at the search dir
    ({"pattern": "./*.py"}, []),
]


@pytest.mark.parametrize("inp,expected", CASES, ids=[json.dumps(c[0]) for c in CASES])
def test_glob_cases(s, inp, expected):
    r = s.call("Glob", inp)
    assert not r.is_error, r.text
    expected = expected[::-1]  # listed newest first above; Claude Code's Glob lists oldest first
    assert r.data["filenames"] == expected
    assert r.text == ("\n".join(expected) if expected else "No files found")
    assert r.data["numFiles"] == len(expected) and r.data["truncated"] is False
    Glob.Output.model_validate(r.data)


def test_absolute_pattern_is_split_into_base_and_pattern(s, project):
    r = s.call("Glob", {"pattern": f"{project}/src/**/*.js"})
    assert r.data["filenames"] == ["src/deep/x.js"]
    r = s.call("Glob", {"pattern": f"{project}/src/app.py"})
    assert r.data["filenames"] == ["src/app.py"]


def test_truncated_at_100_oldest_first(ws, make_session):
    for i in range(130):
        p = ws / f"f{i:03d}.txt"
        p.write_text("x")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    s = make_session(root=ws)
    r = s.call("Glob", {"pattern": "*.txt"})
    assert r.data["truncated"] is True and r.data["numFiles"] == 100
    assert r.data["filenames"][0] == "f000.txt" and r.data["filenames"][-1] == "f099.txt"
    assert r.text.endswith("\n(Showing 100 of 130 matching files; 30 more are not listed. Narrow the pattern or "
                           "path to see the rest.)")
    s2 = make_session(root=ws, settings={"glob": {"maxResults": 5}})
    assert s2.call("Glob", {"pattern": "*.txt"}).data["filenames"] == [
        f"f{i:03d}.txt" for i in range(0, 5)
    ]


def test_ties_in_mtime_are_broken_by_path(ws, make_session):
    for name in ("b.txt", "a.txt", "c.txt"):
        p = ws / name
        p.write_text("x")
        os.utime(p, (5, 5))
    s = make_session(root=ws)
    assert s.call("Glob", {"pattern": "*"}).data["filenames"] == ["a.txt", "b.txt", "c.txt"]


def test_include_ignored_setting(project, make_session):
    s = make_session(root=project, settings={"glob": {"includeIgnored": True}})
    assert "build/out.py" in s.call("Glob", {"pattern": "**/*.py"}).data["filenames"]


def test_hidden_can_be_turned_off(project, make_session):
    s = make_session(root=project, settings={"glob": {"includeHidden": False}})
    assert s.call("Glob", {"pattern": "*.txt"}).text == "No files found"


def test_read_deny_rules_hide_files(project, make_session):
    s = make_session(root=project, settings={"permissions": {"deny": ["Read(**/util.py)"]}})
    assert s.call("Glob", {"pattern": "**/*.py"}).data["filenames"] == ["src/app.py"]


def test_outside_workspace_asks_and_absolute_paths_are_shown(project, tmp_path, make_session):
    other = tmp_path / "other"
    other.mkdir()
    (other / "z.py").write_text("")
    s = make_session(root=project)
    r = s.call("Glob", {"pattern": f"{other}/*.py"})
    assert r.is_error and "outside the workspace" in r.text
    s2 = make_session(root=project, approver=lambda req: True)
    assert s2.call("Glob", {"pattern": "*.py", "path": str(other)}).data["filenames"] == [
        f"{other}/z.py"
    ]


def test_glob_escape_through_dotdot_is_checked(project, make_session):
    s = make_session(root=project)
    r = s.call("Glob", {"pattern": "../../**/*"})
    assert r.is_error and "outside the workspace" in r.text


def test_non_utf8_names_and_symlink_loops(ws, make_session):
    fd = os.open(os.fsencode(str(ws)) + b"/\xff\xfe.txt", os.O_CREAT | os.O_WRONLY)
    os.close(fd)
    (ws / "loop").symlink_to(ws)
    (ws / "x").symlink_to(ws / "y")
    (ws / "y").symlink_to(ws / "x")
    s = make_session(root=ws)
    r = s.call("Glob", {"pattern": "**/*"})
    assert not r.is_error and r.data["filenames"] == ["\\xff\\xfe.txt"]
    json.dumps(r.data)


def test_timeout_is_an_error_not_no_files(ws, make_session, tmp_path):
    slow = tmp_path / "slow-rg"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")  # exec: rg may start no process
    slow.chmod(0o755)
    s = make_session(root=ws, settings={"search": {"ripgrepPath": str(slow)},
                                        "glob": {"timeoutMs": 300}})
    r = s.call("Glob", {"pattern": "*"})
    assert r.is_error and "timed out" in r.text and "No files found" not in r.text
    assert r.data["timedOut"] is True
