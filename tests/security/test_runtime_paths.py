"""codebelt's own code as hostile input: the modules codebelt imports on first use are looked for
on sys.path, in order. A directory of sys.path inside the workspace (codebelt installed into the
project's own environment, run on its own source, or started with `python -m` from the
checkout) is where the repository, or a command in the write sandbox, could plant a module of
that name, which would then run in codebelt's process, outside any sandbox."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codebelt.sandbox import Sandbox
from codebelt.sandbox.protected import protected_paths, protection_gap

from ..sandbox.conftest import backend_unusable

PLANTED = "import pathlib, os\npathlib.Path(os.environ['PLANTED_MARKER']).write_text('ran')\nraise ImportError('planted')\n"
# a 1x1 PNG: reading it imports Pillow on first use, in codebelt's own process
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d4944415478da636460f85f0f0002870180eb47ba920000000049454e44ae426082")


def test_python_m_from_the_checkout_imports_nothing_the_checkout_planted(tmp_path):
    """`python -m codebelt.cli` in a checkout that ships a `PIL` package: reading an image
    imports Pillow on first use, and must not find the checkout's."""
    ws = tmp_path / "ws"
    (ws / "PIL").mkdir(parents=True)
    (ws / "PIL" / "__init__.py").write_text(PLANTED)
    (ws / "x.png").write_bytes(PNG)
    marker = tmp_path / "marker"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PLANTED_MARKER": str(marker)}
    r = subprocess.run([sys.executable, "-m", "codebelt.cli", "call", "Read", '{"file_path": "x.png"}', "--json",
                        "--root", str(ws)], cwd=ws, env=env, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), "the checkout's PIL ran in codebelt"
    assert r.returncode == 0 and "planted" not in r.stdout, (r.stdout[-2000:], r.stderr[-2000:])


# (sys.path entry under the workspace, as a layout would have it)
LAYOUTS = [
    "venv/lib/python3.11/site-packages",  # codebelt in the project's own environment
    "src",  # codebelt run on its own source (an editable install)
    "tools/lib",
]


@pytest.mark.parametrize("entry", LAYOUTS)
def test_a_sys_path_directory_in_the_workspace_is_read_only_in_the_sandbox(entry, tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    (ws / entry).mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(ws / entry)])
    found = protected_paths(ws, (ws,))
    assert (ws / entry, "ro") in found
    # every directory between the root and it pinned: renamed away, it would take the bind along
    between = [up for up in reversed((ws / entry).parents) if ws in up.parents]
    assert [p for p, kind in found if kind == "pin" and p in between] == between
    assert protection_gap(ws) is None


def test_an_entry_spelled_through_a_link_outside_is_protected_where_it_lies(tmp_path, monkeypatch):
    """`/home` a link to `/data`: the workspace is its real path, sys.path spells it through the
    link; the entry lies in the workspace all the same."""
    ws = tmp_path / "ws"
    (ws / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(ws)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "alias" / "venv" / "lib")])
    found = protected_paths(ws, (ws,))
    assert (ws / "venv" / "lib", "ro") in found and (ws / "venv", "pin") in found
    assert protection_gap(ws) is None


def test_an_entry_on_sys_path_and_below_another_stays_read_only(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [*sys.path, str(ws / "a" / "b"), str(ws / "a")])
    found = protected_paths(ws, (ws,))
    assert (ws / "a", "ro") in found and (ws / "a" / "b", "ro") in found and (ws / "a", "pin") not in found


def test_an_entry_that_does_not_exist_in_the_workspace_cannot_be_protected(tmp_path, monkeypatch):
    """Nothing there to bind: a command could create it (a directory, or a zip archive)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(ws / "lib" / "python311.zip")])
    assert "does not exist" in (protection_gap(ws) or "")


def test_a_workspace_on_sys_path_itself_cannot_be_protected_so_commands_ask(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    assert protection_gap(ws) is None
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    monkeypatch.chdir(ws)
    assert "sys.path" in (protection_gap(ws) or "")


def test_a_sys_path_entry_through_a_link_in_the_workspace_cannot_be_protected(tmp_path, monkeypatch):
    """The bind would land on the link's target, outside; the link itself could be replaced by
    a directory of the command's, with a module in it."""
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (ws / "lib").symlink_to(elsewhere)
    monkeypatch.setattr(sys, "path", [*sys.path, str(ws / "lib")])
    assert "link" in (protection_gap(ws) or "")


@pytest.mark.parametrize("how", ["resident", "one-shot"])
def test_a_sandboxed_command_cannot_plant_a_module_where_codebelt_imports_from(how, make_session, ws, monkeypatch):
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(why)
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now" if how == "resident" else False)
    lib = ws / "venv" / "lib" / "python3.11" / "site-packages"
    lib.mkdir(parents=True)
    (ws / "venv" / "bin").mkdir()
    s = make_session(settings={"sandbox": {"mode": "bwrap", "autoAllowBash": True}})
    control = s.call("Bash", {"command": "echo ok > venv/ok.txt"})  # the sandbox does let it write the workspace
    assert control.data["exitCode"] == 0 and (ws / "venv" / "ok.txt").exists()
    monkeypatch.setattr(sys, "path", [*sys.path, str(lib)])
    monkeypatch.setattr(sys, "prefix", str(ws / "venv"))
    (ws / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    before = {p: p.stat().st_ino for p in (lib, ws / "venv" / "bin", ws / "venv" / "pyvenv.cfg")}
    plant = "mkdir -p venv/lib/python3.11/site-packages venv/bin && echo 'import os' > venv/lib/python3.11/site-packages/pypdf.py"
    for command in ("echo 'import os' > venv/lib/python3.11/site-packages/pypdf.py",
                    "echo 'import os' > venv/lib/python3.11/site-packages/evil.pth",
                    "printf '#!/bin/sh\\n' > venv/bin/codebelt",
                    "echo 'home = /tmp' > venv/pyvenv.cfg",
                    # a directory above renamed away, and another made in its place
                    f"mv venv venv-old; {plant}",
                    f"mv venv/lib venv/lib-old; {plant}",
                    f"mv venv/lib/python3.11 venv/lib/py; {plant}",
                    "mv venv/bin venv/b; mkdir venv/bin && printf '#!/bin/sh\\n' > venv/bin/codebelt",
                    "mv venv/pyvenv.cfg venv/old.cfg; echo 'home = /tmp' > venv/pyvenv.cfg",
                    "rm -rf venv; mkdir -p venv/lib/python3.11/site-packages && echo 'import os' > venv/lib/python3.11/site-packages/pypdf.py"):
        r = s.call("Bash", {"command": command})
        assert r.data["exitCode"] != 0, command
    assert sorted(p.name for p in lib.iterdir()) == [] and not (ws / "venv" / "bin" / "codebelt").exists()
    assert {p: p.stat().st_ino for p in before} == before  # each still the one it was
    assert (ws / "venv" / "pyvenv.cfg").read_text() == "home = /usr/bin\n"
