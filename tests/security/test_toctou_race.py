"""A concurrent process flipping a directory between a real directory and a symlink to outside,
in a tight loop, while the tools are called hundreds of times: nothing may be written outside,
and no outside content may come back.

`d` is a directory inside the workspace holding harmless files; `outside/` holds files with the
same names and a secret. A swapper process exchanges `d` with `e` (a symlink to `outside/`)
atomically (renameat2 RENAME_EXCHANGE) as fast as it can, so every call meets both states
between its permission decision and its open. Verified by effect only: the outside directory is
byte-identical afterwards, and no result (text or image) carries outside content.
"""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import pytest

from tests.files.conftest import make_pdf

CALLS = 300  # per case: each call meets both states of `d` many times over (the swapper flips it every few µs)

SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
print("ready", flush=True)
while True:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""

SECRET = "OUTSIDE-SECRET-7f3a"
PATCH = "*** Begin Patch\n{}\n*** End Patch"


def _png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(out, "PNG")
    return out.getvalue()


def _notebook(text: str) -> str:
    return ('{"cells": [{"cell_type": "code", "source": ["print(%r)"], "outputs": [], "metadata": {}}], '
            '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}' % text)


def _files(marker: str) -> dict[str, bytes]:
    return {
        "victim": b"ORIGINAL A\n",
        "secret.txt": f"{marker}\n".encode(),
        "secret.ipynb": _notebook(marker).encode(),
        "secret.pdf": make_pdf([marker]),
        "secret.png": _png((250, 10, 10) if marker == SECRET else (10, 250, 10)),
        "mod.py": f"def {marker.replace('-', '_')}():\n    pass\n".encode(),
    }


@pytest.fixture
def race(ws: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    for name, data in _files(SECRET).items():
        (outside / name).write_bytes(data)
    (outside / f"only-outside-{SECRET[-4:]}.txt").write_text("x\n")
    (ws / "d").mkdir()
    for name, data in _files("inside").items():
        (ws / "d" / name).write_bytes(data)
    (ws / "e").symlink_to(outside)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws / "d"), str(ws / "e")],
                            stdout=subprocess.PIPE, text=True)

    def stop() -> None:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()

    try:
        assert proc.stdout.readline().strip() == "ready"
        yield outside, before, stop
    finally:
        stop()
    # the directory ends as either name; the outside tree must be exactly as it was
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def _leaks(result, outside_png: bytes) -> bool:
    if SECRET in result.text:
        return True
    return any(base64.b64decode(img.data) == outside_png for img in result.images)


def _writes(i: int) -> list[tuple[str, dict]]:
    a, b = ("A", "B") if i % 2 == 0 else ("B", "A")
    return [
        ("Write", {"file_path": f"d/new-{i}.txt", "content": "PWNED\n"}),
        ("Write", {"file_path": f"d/sub{i}/new.txt", "content": "PWNED\n"}),
        ("Write", {"file_path": "d/victim", "content": f"ORIGINAL {b}\n"}),
        ("Edit", {"file_path": f"d/created-{i}", "old_string": "", "new_string": "PWNED"}),
        ("Edit", {"file_path": "d/victim", "old_string": a, "new_string": b}),
        ("MultiEdit", {"file_path": "d/victim", "edits": [{"old_string": a, "new_string": b}]}),
        ("ApplyPatch", {"input": PATCH.format(f"*** Add File: d/added-{i}\n+PWNED")}),
        ("ApplyPatch", {"input": PATCH.format(f"*** Update File: d/victim\n@@\n-ORIGINAL {a}\n+ORIGINAL {b}")}),
        ("ApplyPatch", {"input": PATCH.format(f"*** Update File: d/secret.txt\n*** Move to: moved-{i}.txt\n@@\n"
                                              f"-inside\n+inside")}),
        ("ApplyPatch", {"input": PATCH.format("*** Delete File: d/victim")}),
    ]


WRITE_TOOLS = ["Write", "Edit", "MultiEdit", "ApplyPatch"]


@pytest.mark.parametrize("tool", WRITE_TOOLS)
def test_writes_never_land_outside(race, make_session, ws, tool):
    outside, before, stop = race
    s = make_session(mode="acceptEdits")
    for i in range(CALLS):
        for name, inp in _writes(i):
            if name != tool:
                continue
            s.call("Read", {"file_path": "d/victim"})  # so overwrites and edits are allowed to try
            r = s.call(name, inp)
            assert SECRET not in r.text, r.text
            if name == "ApplyPatch" and "Delete" in inp["input"] and not r.is_error:
                (ws / "d" / "victim").write_bytes(b"ORIGINAL A\n")  # may land in either name: harmless
    stop()
    # moved files must never carry the outside secret into the workspace
    for p in ws.rglob("moved-*"):
        assert SECRET not in p.read_text()


@pytest.mark.parametrize("name", ["secret.txt", "secret.ipynb", "secret.pdf", "secret.png"])
def test_reads_never_return_outside_content(race, make_session, name):
    outside, before, _stop = race
    s = make_session(mode="default")  # reading outside asks; without an approver that is a refusal
    # A PDF is parsed in a child process (~0.3 s a page): fewer rounds, the same open path.
    for _ in range(CALLS // 10 if name.endswith(".pdf") else CALLS * 2):
        r = s.call("Read", {"file_path": f"d/{name}"})
        assert not _leaks(r, before["secret.png"]), r.text[:300]


def test_the_walk_without_openat2_holds_too(race, make_session, monkeypatch):
    """Kernels without openat2 (before 5.6) open by an O_NOFOLLOW walk: the same guarantees."""
    from codebelt.files import beneath

    monkeypatch.setattr(beneath, "openat2_available", False)
    outside, before, _stop = race
    s = make_session(mode="acceptEdits")
    for i in range(CALLS // 2):
        s.call("Write", {"file_path": f"d/new-{i}.txt", "content": "PWNED\n"})
        r = s.call("Read", {"file_path": "d/secret.txt"})
        assert SECRET not in r.text, r.text


# ripgrep's own walk opens each subdirectory by name: one swapped while rg walks the tree is
# entered through the link. The search root is held open by codebelt; below it, only the
# read-only jail (where outside directories are not there to see) closes the race.
TRAVERSAL = pytest.mark.xfail(reason="ripgrep enters subdirectories by name; the read-only jail covers it",
                              strict=False)

SEARCHES = [
    ("Grep", {"pattern": "OUTSIDE-SECRET", "path": "d", "output_mode": "content"}),
    ("Grep", {"pattern": "OUTSIDE-SECRET", "path": "d", "output_mode": "files_with_matches"}),
    ("Glob", {"pattern": "*", "path": "d"}),
    pytest.param("Glob", {"pattern": "d/*"}, marks=TRAVERSAL),
    pytest.param("Grep", {"pattern": "OUTSIDE-SECRET", "output_mode": "content"}, marks=TRAVERSAL),
    ("LSP", {"operation": "documentSymbol", "filePath": "d/mod.py"}),
]


@pytest.mark.parametrize("tool,inp", SEARCHES, ids=["grep-d-content", "grep-d-files", "glob-in-d", "glob-d-pattern",
                                                     "grep-root", "lsp-d"])
def test_searches_never_return_outside_content(race, make_session, tool, inp, request):
    outside, before, _stop = race
    s = make_session(mode="default")  # searching outside asks; without an approver that is a refusal
    # a known gap (xfail, not strict) shows itself in a few calls; its 75 calls cost a minute
    calls = CALLS // 20 if request.node.get_closest_marker("xfail") else CALLS // 4
    for _ in range(calls):
        r = s.call(tool, inp)
        assert SECRET[-4:] not in r.text and SECRET.replace("-", "_") not in r.text, r.text[:500]
