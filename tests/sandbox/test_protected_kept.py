"""The write sandbox's protected paths and placeholders, kept between commands until a directory
they were looked up in changes (watched.py through the sandbox's `_protected_binds` and
`_make_placeholders`): after every change, the kept answer must be the one a fresh lookup
gives — scripted changes to each kind of protected path (top-level `.env*`, `.git` and its
hooks, config and submodules, nested repositories and settings directories, links retargeted
into and out of the workspace, a home directory inside the root) and random ones among them."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from codebelt.files.scan import shared
from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.sandbox import bwrap as _bwrap
from codebelt.sandbox import protected
from codebelt.sandbox.jail import mask_plan
from codebelt.sandbox.protected import placeholders

from .test_watched import _exchange, _relink, random_change


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    ws, tmp, out = tmp_path / "ws", tmp_path / "tmp", tmp_path / "out"
    for d in (ws, tmp, out):
        d.mkdir()
    monkeypatch.setenv("HOME", str(ws / "home"))  # a root that holds the home: its dot files are protected
    sb = Sandbox(config=SandboxConfig((ws,), tmp, mode="bwrap"))
    yield sb, ws, out
    sb.close()


def _compare(sb: Sandbox, ws: Path) -> list[tuple[Path, str]]:
    shared(ws).snapshot(0)  # the walk of now, for both answers (a wrap takes one 0.1 s old)
    kept = sb._protected_binds()
    fresh = _bwrap.protected_binds(sb.config)
    assert kept == fresh
    assert sb._lookups.get(("placeholders", sb.config.writable_roots),
                           lambda consult: placeholders(ws, consult)) == placeholders(ws)
    return fresh


def _write(p: Path, text: str = "") -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


# (name, change(ws, out)): the answers are compared after each
STEPS = [
    ("a top-level .env", lambda w, o: _write(w / ".env", "K=v")),
    ("an .env link out of the workspace", lambda w, o: (_write(o / "secret"), (w / ".env.local").symlink_to(o / "secret"))),
    ("the link retargeted inside, to nothing yet", lambda w, o: ((w / "cfg").mkdir(), _relink(w / ".env.local", w / "cfg" / "local"))),
    ("the link's target made", lambda w, o: _write(w / "cfg" / "local")),
    ("a repository", lambda w, o: (_write(w / ".git" / "config"), (w / ".git" / "hooks").mkdir())),
    # each directory made empty first: a step then changes only the directory's own entries
    ("an empty modules directory", lambda w, o: (w / ".git" / "modules").mkdir()),
    ("a submodule's directory", lambda w, o: (_write(w / ".git" / "modules" / "m" / "config"),
                                              (w / ".git" / "modules" / "m" / "hooks").mkdir())),
    ("the repository's config removed", lambda w, o: (w / ".git" / "config").unlink()),
    ("modules made a link to an empty directory", lambda w, o: (shutil.rmtree(w / ".git" / "modules"), (w / "mods").mkdir(),
                                                                (w / ".git" / "modules").symlink_to(w / "mods"))),
    ("a module added through the link", lambda w, o: (w / "mods" / "n" / "hooks").mkdir(parents=True)),
    ("a nested repository", lambda w, o: (_write(w / "sub" / ".git" / "config"), (w / "sub" / ".git" / "hooks").mkdir())),
    ("a nested settings directory", lambda w, o: (w / "sub" / ".claude").mkdir()),
    ("a nested .env", lambda w, o: _write(w / "sub" / "deep" / ".env.prod")),
    # only the walk sees this one: no lookup looked in pkg
    ("a directory", lambda w, o: (w / "pkg").mkdir()),
    ("a nested settings directory in it", lambda w, o: (w / "pkg" / ".codebelt").mkdir()),
    ("the nested tree's parent renamed", lambda w, o: os.rename(w / "sub", w / "sub2")),
    (".claude a link out of the workspace", lambda w, o: (shutil.rmtree(w / ".claude", ignore_errors=True),
                                                          (w / ".claude").symlink_to(o))),
    (".claude retargeted inside, to nothing yet", lambda w, o: _relink(w / ".claude", w / "cl")),
    ("the link's target made", lambda w, o: (w / "cl").mkdir()),
    ("the repository a link to another", lambda w, o: (os.rename(w / ".git", w / "real-git"),
                                                       (w / ".git").symlink_to(w / "real-git"))),
    ("a hook directory made in the link's target", lambda w, o: (w / "real-git" / "hooks" / "x").mkdir()),
    ("an empty home", lambda w, o: (w / "home").mkdir()),
    ("a dot file in the home (none the walk looks for)", lambda w, o: _write(w / "home" / ".ssh" / "config")),
    ("the home's start-up file", lambda w, o: _write(w / "home" / ".bashrc")),
    ("the home's bin", lambda w, o: (w / "home" / "bin").mkdir()),
    ("the home made a link", lambda w, o: (os.rename(w / "home", w / "home-real"), (w / "home").symlink_to(w / "home-real"))),
    ("two directories exchanged", lambda w, o: _exchange(w / "cl", w / "cfg")),
    ("a link loop", lambda w, o: (os.unlink(w / ".env.local"), (w / ".env.local").symlink_to(w / ".env.local"))),
    ("the top-level settings directories removed", lambda w, o: (os.unlink(w / ".claude"),
                                                                 shutil.rmtree(w / ".codebelt", ignore_errors=True))),
]


def test_kept_protected_paths_follow_each_change(sandbox):
    sb, ws, out = sandbox
    sb._make_placeholders()
    _compare(sb, ws)
    seen = set()
    for name, change in STEPS:
        change(ws, out)
        try:
            seen.update(_compare(sb, ws))
        except AssertionError as e:
            raise AssertionError(f"after: {name}") from e
    # the steps did reach each kind of protected path
    assert {ws / ".env", ws / "cfg" / "local", ws / "mods" / "n" / "hooks", ws / "sub2" / ".claude",
            ws / "real-git", ws / "home-real" / ".bashrc", ws / "home-real" / ".ssh", ws / "pkg" / ".codebelt"} <= {p for p, _ in seen}


def test_a_kept_answer_is_reused_while_nothing_it_looked_in_changes(sandbox, monkeypatch):
    sb, ws, out = sandbox
    # codebelt's own runtime paths are looked up on the way to each sys.path entry, outside the
    # workspace, where other tests running beside this one change things: a fixed one here
    monkeypatch.setattr(protected, "runtime_paths", lambda: [out / "lib"])
    _write(ws / ".git" / "config")
    _write(ws / "src" / "deep" / "a.py")
    first = _compare(sb, ws)
    # the lookups also look in the directories above the workspace (/tmp here), where other
    # programs make and remove entries at any time, rightly forgetting every answer: a few tries,
    # one of which must reuse them all
    reused = False
    for i in range(5):
        misses = sb._lookups.misses
        _write(ws / "src" / "deep" / f"b{i}.py")  # a writing command's usual change: nowhere a lookup looked
        (ws / "src" / "deep" / "a.py").write_text(f"changed {i}")
        assert _compare(sb, ws) == first
        if sb._lookups.misses == misses:
            reused = True
            break
    assert reused, "no kept answer was reused after changes where no lookup looked"
    misses = sb._lookups.misses
    _write(ws / ".env.test")
    assert (ws / ".env.test", "ro") in _compare(sb, ws)
    assert sb._lookups.misses > misses


def test_kept_protected_paths_follow_random_changes(sandbox):
    """Renames, exchanges, removals, links and directories among the names that matter: after
    every change the kept answer is the fresh one."""
    sb, ws, out = sandbox
    rng = random.Random(20261126)
    names = [".git", ".env", ".claude", "sub", "hooks", "modules", "config", "x"]

    def pick() -> Path:
        return ws.joinpath(*rng.sample(names, rng.randint(1, 3)))

    for step in range(250):
        random_change(rng, pick(), pick(), out)
        try:
            _compare(sb, ws)
        except AssertionError as e:
            raise AssertionError(f"step {step}") from e


def test_the_runtime_part_follows_a_link_on_the_way_outside_the_workspace(sandbox, monkeypatch):
    """A sys.path entry spelled through a link outside the workspace: retargeted into it, the
    kept answer must make the entry read-only from the next command on."""
    sb, ws, out = sandbox
    (ws / "venv" / "lib").mkdir(parents=True)
    (out / "elsewhere" / "lib").mkdir(parents=True)
    (out / "alias").symlink_to(out / "elsewhere")
    monkeypatch.setattr(protected, "runtime_paths", lambda: [out / "alias" / "lib"])
    assert (ws / "venv" / "lib", "ro") not in _compare(sb, ws)
    (out / "alias").unlink()
    (out / "alias").symlink_to(ws / "venv")
    found = _compare(sb, ws)
    assert (ws / "venv" / "lib", "ro") in found and (ws / "venv", "pin") in found


def test_the_kept_mask_plan_follows_what_is_at_each_masked_path(sandbox):
    """Whether a masked path is there, a file, a directory or a link decides its cover: kept, it
    must change as the path does, through a link's target too."""
    sb, ws, out = sandbox
    secret, other = ws / "sub" / "secret", out / "target"
    masked = [secret, ws / "link"]
    steps = [
        ("nothing there", lambda: None),
        ("a file", lambda: _write(secret, "x")),
        ("a directory in its place", lambda: (secret.unlink(), secret.mkdir())),
        ("a link in its place", lambda: (secret.rmdir(), secret.symlink_to(other))),
        ("a masked link's target made", lambda: ((ws / "link").symlink_to(other), other.mkdir())),
        ("the target replaced by a file", lambda: (other.rmdir(), _write(other))),
        ("the parent renamed away", lambda: os.rename(ws / "sub", ws / "sub2")),
    ]
    seen = set()
    for name, change in steps:
        change()
        kept, fresh = sb._mask_plan(masked), mask_plan(masked)
        assert kept == fresh, name
        seen.add(tuple(fresh))
    assert len(seen) >= 4  # the steps did change the plan
