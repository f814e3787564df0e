"""PATH directories in the read-only jail: the jail shows the directories on PATH, and must never
show, through a PATH entry, what its own rules hide. A PATH entry inside the workspace (an
activated `.venv/bin`, `node_modules/.bin`) is the repository's to replace with a link to
anywhere; each way of aiming one outside is tried against every jail (the resident, the one-shot
bwrap, Landlock), with a control showing that a PATH directory the user really has outside the
workspace is readable, so the test would see the leak."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from codebelt.sandbox.jail import path_dirs, scratch_in_jail

from .conftest import jailed


def _outside(tmp_path: Path) -> tuple[Path, str]:
    """A directory outside the workspace holding a secret, and in its `bin` another."""
    out = tmp_path / "outside"
    (out / "bin").mkdir(parents=True)
    token = uuid.uuid4().hex
    (out / "secret.txt").write_text(f"top-{token}\n")
    (out / "bin" / "secret.txt").write_text(f"bin-{token}\n")
    return out, token


# name -> (set-up in the workspace, the PATH entry); `ws`, `out` the workspace and the outside dir
def _link(at: Path, to: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)


AIMS = {
    # an activated virtual environment whose bin the repository made a link
    "symlinked entry": (lambda ws, out: _link(ws / ".venv" / "bin", out), "{ws}/.venv/bin"),
    "relative link in the entry": (lambda ws, out: _link(ws / ".venv" / "bin", Path(os.path.relpath(out, ws / ".venv"))),
                                   "{ws}/.venv/bin"),
    "symlinked parent": (lambda ws, out: _link(ws / "tools", out), "{ws}/tools/bin"),
    "dot-dot after a link": (lambda ws, out: _link(ws / "deep", out / "bin"), "{ws}/deep/.."),
    "dot-dot through a real directory": (lambda ws, out: (ws / "sub").mkdir(), "{ws}/sub/../../outside"),
    "relative entry": (lambda ws, out: _link(ws / "tools", out), "tools"),
    "dot entry": (lambda ws, out: None, "."),
    # the user's own entry outside the workspace, a link into it, which the repository aims out
    "chain through the workspace": (lambda ws, out: (_link(ws.parent / "userbin", ws / "bin"), _link(ws / "bin", out)),
                                    "{ws.parent}/userbin"),
    "entry that is a file": (lambda ws, out: _link(ws / ".venv" / "bin", out / "secret.txt"), "{ws}/.venv/bin"),
    "link to a file's directory through the file": (lambda ws, out: _link(ws / "f", out / "secret.txt"), "{ws}/f/.."),
}


@pytest.mark.parametrize("name", sorted(AIMS))
def test_a_path_entry_aimed_outside_shows_nothing(name, jail, ws, tmp_path, monkeypatch):
    out, token = _outside(tmp_path)
    plant, entry = AIMS[name]
    plant(ws, out)
    monkeypatch.setenv("PATH", f"{entry.format(ws=ws)}:{os.environ['PATH']}")
    r = jailed(jail, f"cat {out}/secret.txt {out}/bin/secret.txt; ls {out}; cat .venv/bin/secret.txt "
                     f"tools/bin/secret.txt deep/secret.txt; command -v cat", ws)
    assert token not in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("/cat"), r.stdout  # the rest of PATH still works


def test_an_entry_replaced_after_the_jail_started_shows_nothing(jail, ws, tmp_path, monkeypatch):
    """The entry is a real directory when the session's first command starts (the resident jail
    is built then) and a link out for the next: each command's view is decided as it starts."""
    out, token = _outside(tmp_path)
    (ws / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{ws}/.venv/bin:{os.environ['PATH']}")
    assert jailed(jail, "true", ws).returncode == 0
    (ws / ".venv" / "bin").rmdir()
    (ws / ".venv" / "bin").symlink_to(out / "bin")
    r = jailed(jail, f"cat {out}/bin/secret.txt .venv/bin/secret.txt; ls {out}/bin", ws)
    assert token not in r.stdout, r.stdout


def test_control_a_users_path_directory_outside_the_workspace_is_readable(jail, ws, tmp_path, monkeypatch):
    out, token = _outside(tmp_path)
    monkeypatch.setenv("PATH", f"{out / 'bin'}:{os.environ['PATH']}")
    r = jailed(jail, f"cat {out}/bin/secret.txt; cat {out}/secret.txt", ws)
    assert f"bin-{token}" in r.stdout, r.stdout  # bound: the user put it on PATH
    assert f"top-{token}" not in r.stdout, r.stdout  # its parent is not


# path_dirs itself: entry -> what is bound (None: nothing). `ws` is the one writable root.
def test_path_dirs_binds_no_entry_reached_through_a_writable_root(ws, tmp_path):
    out, _ = _outside(tmp_path)
    for name, (plant, entry) in AIMS.items():
        for p in (ws / ".venv", ws / "tools", ws / "deep", ws / "sub", ws / "bin", ws / "f", ws.parent / "userbin"):
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                import shutil

                shutil.rmtree(p)
        plant(ws, out)
        assert path_dirs(entry.format(ws=ws), None, [ws]) == [], name
    # system directories, merged-/usr links included, and the user's own directories stay
    system = [d for d in ("/usr/bin", "/bin", "/usr/local/bin", "/sbin") if os.path.isdir(d)]
    got = path_dirs(":".join([*system, str(out / "bin"), str(out / "bin" / ".." / "bin")]), None, [ws])
    assert got == list(dict.fromkeys(Path(os.path.realpath(d)) for d in [*system, out / "bin"]))
    # the workspace is its own root: an entry inside is visible through it, never bound twice
    (ws / "realbin").mkdir()
    assert path_dirs(f"{ws}/realbin:{ws}", None, [ws]) == []
    # a loop of links is no directory
    (ws.parent / "loop").symlink_to(ws.parent / "loop")
    assert path_dirs(f"{ws.parent}/loop", None, [ws]) == []


# A language server's installation is made readable for it in the jail (helpers.install_dirs:
# where its link leads, the interpreter its first line names). One found in the workspace (an
# activated `.venv/bin` on PATH) is the repository's program: it names nothing readable.
def _script(at: Path, first_line: str) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.write_text(f"{first_line}\nexit 0\n")
    at.chmod(0o755)


SERVERS = {
    "a link out": lambda ws, out, user: (_script(out / "bin" / "srv", "#!/bin/sh"),
                                         _link(ws / ".venv" / "bin" / "srv", out / "bin" / "srv"),
                                         ws / ".venv" / "bin" / "srv")[-1],
    "its first line names a directory out": lambda ws, out, user: (
        _script(ws / ".venv" / "bin" / "srv", f"#!{out}/bin/interp"), ws / ".venv" / "bin" / "srv")[-1],
    "the user's link into the workspace": lambda ws, out, user: (
        _script(ws / "srv", f"#!{out}/bin/interp"), _link(user / "srv", ws / "srv"), user / "srv")[-1],
    "a linked directory on the way": lambda ws, out, user: (
        _script(out / "bin" / "srv", "#!/bin/sh"), _link(ws / "tools", out), ws / "tools" / "bin" / "srv")[-1],
}


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_in_the_workspace_names_nothing_readable(name, jail, ws, tmp_path, tmpd):
    from types import SimpleNamespace

    from codebelt.tools._services import server_profile

    out, token = _outside(tmp_path)
    program = SERVERS[name](ws, out, tmp_path / "userbin")
    spec = SimpleNamespace(name="srv", command=str(program), args=(), env={})
    profile = server_profile(spec, (ws.resolve(), tmpd.resolve()))
    assert not [p for p in profile.readable if p == out or out in p.parents or p in out.parents], profile.readable
    r = _helper_run(jail, profile, f"cat {out}/bin/secret.txt {out}/secret.txt; ls {out}/bin", ws)
    assert token not in r.stdout, r.stdout


def test_control_a_server_installed_outside_is_readable_to_it(jail, ws, tmp_path, tmpd):
    from types import SimpleNamespace

    from codebelt.tools._services import server_profile

    out, token = _outside(tmp_path)
    _script(out / "bin" / "srv", "#!/bin/sh")
    spec = SimpleNamespace(name="srv", command=str(out / "bin" / "srv"), args=(), env={})
    profile = server_profile(spec, (ws.resolve(), tmpd.resolve()))
    r = _helper_run(jail, profile, f"cat {out}/bin/secret.txt", ws)
    assert f"bin-{token}" in r.stdout, r.stdout


def _helper_run(sb, profile, command: str, cwd: Path):
    import subprocess

    wrap = sb.helper(profile, [])
    assert wrap is not None
    argv, env, preexec, *rest = wrap(["/bin/bash", "-c", command], cwd, dict(os.environ))
    try:
        return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              start_new_session=True)
    finally:
        if rest and rest[0] is not None:
            rest[0]()


@pytest.mark.parametrize("visible,scratch", [
    (["/usr", "/home/u/ws"], "/tmp"),
    (["/usr", "/tmp/ws"], "/tmp/.codebelt-scratch"),  # a write right on /tmp would cover the workspace
    (["/tmp"], "/tmp/.codebelt-scratch"),
    (["/tmpdir/ws", "/var/tmp"], "/tmp"),  # only /tmp itself and what lies beneath it
])
def test_the_scratch_is_never_above_a_visible_directory(visible, scratch):
    assert scratch_in_jail([Path(v) for v in visible]) == scratch
