"""Scans that protect paths cover the whole tree, and say so when they cannot.

Behind a directory of 25,000 files (the old walks stopped after 20,000 entries) sit a `.env`
that the read-only jail must mask and a nested repository whose hooks and config the write
sandbox must keep read-only. When the walk runs out of time, a command that would run unasked
because of that protection asks instead, with the reason."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.files import scan
from tests.sandbox.test_jail import jailed

SECRET = "TOKEN=deep-91be"
BIG = 25_000


@pytest.fixture(scope="module")
def deep(tmp_path_factory) -> Path:
    """One tree for the module (25,000 files take seconds to make); the tests only read it or
    fail to change it."""
    ws = tmp_path_factory.mktemp("deep")
    big = ws / "big"
    big.mkdir()
    for i in range(BIG):
        (big / f"f{i:05d}").touch()
    (big / "zz" / "app").mkdir(parents=True)
    (big / "zz" / "app" / ".env").write_text(SECRET + "\n")
    subprocess.run(["git", "init", "-q", str(big / "zz" / "repo")], check=True)
    (ws / "a.txt").write_text("alpha\n")
    return ws


def test_a_deep_env_past_twenty_thousand_entries_is_masked(deep):
    settings = {"permissions": {"deny": ["Read(.env)"]}}
    with Session(deep, settings=settings, load_user_settings=False, audit=False) as s:
        if s.sandbox().jail.backend is None:
            pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
        masks = s.engine.read_denied_paths()
        assert deep / "big" / "zz" / "app" / ".env" in masks
        if s.sandbox().jail.backend != "bwrap":
            pytest.skip("only bwrap masks paths inside the workspace (Landlock cannot)")
        # the classifier denies naming it; the jail is the second line for names it cannot see
        proc = jailed(s.sandbox(), "cat big/zz/app/.env", deep, masks)
    assert SECRET not in proc.stdout, proc.stdout


def test_a_deep_nested_repository_is_protected(deep):
    settings = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}
    config = deep / "big" / "zz" / "repo" / ".git" / "config"
    before = config.read_bytes()
    hook = deep / "big" / "zz" / "repo" / ".git" / "hooks" / "pre-commit"
    with Session(deep, settings=settings, load_user_settings=False, audit=False) as s:
        if not s.sandbox().status.protected_paths:
            pytest.skip(f"no bwrap sandbox here: {s.sandbox().status.reason}")
        code = (f"open('{config}', 'a').write('[core] fsmonitor = id'); ")
        r1 = s.call("Bash", {"command": f"python3 -c \"{code}\""})
        r2 = s.call("Bash", {"command": f"python3 -c \"open('{hook}', 'w').write('#!/bin/sh')\""})
    assert "Permission to use Bash" not in r1.text + r2.text
    assert config.read_bytes() == before, r1.text
    assert not hook.exists(), r2.text


@pytest.fixture
def out_of_time(monkeypatch):
    monkeypatch.setattr(scan, "SCAN_BUDGET_S", -1.0)  # every walk is cut short at once
    monkeypatch.setattr(scan, "_shared", scan.OrderedDict())


def test_jailed_commands_ask_when_the_masks_are_incomplete(ws, make_session, out_of_time):
    (ws / "a.txt").write_text("alpha\n")
    s = make_session(settings={"permissions": {"deny": ["Read(.env)"]}})
    if s.sandbox().jail.backend is None:
        pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
    r = s.call("Bash", {"command": "cat a.txt"})
    assert r.is_error and "took longer than" in r.text and "cannot run unasked" in r.text, r.text


def test_sandboxed_auto_allow_asks_when_protection_is_incomplete(ws, out_of_time):
    (ws / "a.txt").write_text("alpha\n")
    settings = {"sandbox": {"mode": "bwrap", "autoAllowBash": True}}
    with Session(ws, settings=settings, load_user_settings=False, audit=False) as s:
        if not s.sandbox().status.protected_paths:
            pytest.skip(f"no bwrap sandbox here: {s.sandbox().status.reason}")
        r = s.call("Bash", {"command": "python3 -c \"open('b.txt', 'w').write('x')\""})
    assert r.is_error and "took longer than" in r.text, r.text
    assert not (ws / "b.txt").exists()


def test_without_deny_rules_nothing_is_walked_for_masks(ws, make_session, out_of_time):
    (ws / "a.txt").write_text("alpha\n")
    s = make_session()
    if s.sandbox().jail.backend is None:
        pytest.skip(f"no read-only jail here: {s.sandbox().jail.reason}")
    r = s.call("Bash", {"command": "cat a.txt"})
    assert "alpha" in r.text, r.text
