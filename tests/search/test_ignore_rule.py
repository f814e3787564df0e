"""One ignore rule: files that .gitignore / .ignore rules ignore are left out of Glob and Grep
whatever the glob (ripgrep's --glob alone would override the rules), counted and named when they
are left out, and included with include_ignored: true."""

from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def repo(ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / ".ignore").write_text("generated/\n")
    for rel in ["build/a.o", "build/b.log", "logs/debug.log", "logs/keep.txt", "src/x.py",
                "src/deep/y.py", "generated/z.py", "secret/s.log", "secret/s.txt"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("needle\n")
    return ws


# (tool input, files that must be listed, files that must not, left-out count or None)
GLOB = [
    ({"pattern": "*.log"}, [], ["logs/debug.log", "build/b.log"], 3),
    ({"pattern": "**/*.log"}, [], ["logs/debug.log"], 3),
    ({"pattern": "build/**"}, [], ["build/a.o"], 2),
    ({"pattern": "**/*.py"}, ["src/x.py", "src/deep/y.py"], ["generated/z.py"], None),  # said only when nothing is left
    ({"pattern": "generated/*.py"}, [], ["generated/z.py"], 1),
    ({"pattern": "*.txt"}, ["logs/keep.txt", "secret/s.txt"], [], None),
    ({"pattern": "*.log", "include_ignored": True}, ["logs/debug.log", "build/b.log", "secret/s.log"], [], None),
    ({"pattern": "**/*.py", "include_ignored": True}, ["generated/z.py", "src/x.py"], [], None),
]


@pytest.mark.parametrize("inp,listed,absent,left_out", GLOB, ids=[str(g[0]) for g in GLOB])
def test_glob(repo, make_session, inp, listed, absent, left_out):
    r = make_session().call("Glob", inp)
    assert not r.is_error, r.text
    names = r.data["filenames"]
    assert all(f in names for f in listed), (names, listed)
    assert not any(f in names for f in absent), (names, absent)
    assert r.data.get("ignoredLeftOut") == left_out, r.text
    if left_out:
        assert f"{left_out} matching file" in r.text and "include_ignored: true" in r.text


def test_a_setting_can_include_ignored_files(repo, make_session):
    r = make_session(settings={"glob": {"includeIgnored": True}}).call("Glob", {"pattern": "*.log"})
    assert "logs/debug.log" in r.data["filenames"]


def test_deny_rules_and_ignore_rules_are_counted_apart(repo, make_session):
    s = make_session(settings={"permissions": {"deny": ["Read(./secret/**)"]}})
    r = s.call("Grep", {"pattern": "needle", "glob": "*.log", "output_mode": "files_with_matches"})
    assert r.data["filenames"] == [] and "left out because .gitignore" in r.text
    assert "Read deny" not in r.text  # secret/s.log is ignored first
    r = s.call("Grep", {"pattern": "needle", "glob": "*.txt", "output_mode": "files_with_matches"})
    # a denied file is not searched at all: not even that it matched shows
    assert r.data["filenames"] == ["logs/keep.txt"] and "Read deny" not in r.text
    assert "left out because" not in r.text
    g = s.call("Glob", {"pattern": "*.txt"})
    assert "secret/s.txt" not in g.data["filenames"] and "logs/keep.txt" in g.data["filenames"]


@pytest.mark.parametrize("inp,listed,absent", [
    ({"pattern": "needle", "glob": "*.log"}, [], ["logs/debug.log"]),
    ({"pattern": "needle", "glob": "*.py"}, ["src/x.py"], ["generated/z.py"]),
    ({"pattern": "needle", "glob": "*.log", "include_ignored": True}, ["logs/debug.log"], []),
    ({"pattern": "needle"}, ["src/x.py", "logs/keep.txt"], ["logs/debug.log", "build/a.o"]),
])
def test_grep(repo, make_session, inp, listed, absent):
    r = make_session().call("Grep", {"output_mode": "files_with_matches", **inp})
    assert not r.is_error, r.text
    names = r.data["filenames"]
    assert all(f in names for f in listed) and not any(f in names for f in absent), names


def test_content_and_count_modes_follow_the_rule(repo, make_session):
    s = make_session()
    content = s.call("Grep", {"pattern": "needle", "glob": "*.log", "output_mode": "content"})
    assert "debug.log" not in content.text
    count = s.call("Grep", {"pattern": "needle", "glob": "*.{log,txt}", "output_mode": "count"})
    assert "keep.txt:1" in count.text and "debug.log" not in count.text
