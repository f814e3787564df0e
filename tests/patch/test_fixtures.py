"""The patch scenarios in tests/fixtures/patch/, run through the engine and through the
`apply_patch` console script. Each folder: input/ (optional), patch.txt, expected/ (optional =
empty), expected_error.txt (a substring of the error; then expected/ equals input/),
expected_stdout.txt (optional, exact)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from codebelt.patch import PatchError, apply_patch

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "patch"
SCENARIOS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and (p / "patch.txt").exists())
APPLY_PATCH = Path(sysconfig.get_path("scripts")) / "apply_patch"


def tree(root: Path) -> dict[str, bytes]:
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def prepare(scenario: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    if (scenario / "input").exists():
        shutil.copytree(scenario / "input", work)
    else:
        work.mkdir()
    return work


def expectations(scenario: Path) -> tuple[dict[str, bytes], str | None, str | None]:
    err = scenario / "expected_error.txt"
    out = scenario / "expected_stdout.txt"
    return (tree(scenario / "expected"),
            err.read_text(encoding="utf-8").rstrip("\n") if err.exists() else None,
            out.read_text(encoding="utf-8") if out.exists() else None)


def test_there_are_enough_scenarios():
    assert len(SCENARIOS) >= 60
    for s in SCENARIOS:
        if (s / "expected_error.txt").exists():
            assert tree(s / "expected") == tree(s / "input"), f"{s.name}: a failure must leave input/ unchanged"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_engine(scenario: Path, tmp_path: Path):
    work = prepare(scenario, tmp_path)
    expected, error, stdout = expectations(scenario)
    patch = (scenario / "patch.txt").read_bytes().decode("utf-8")
    if error is None:
        changes = apply_patch(patch, work)
        if stdout is not None:
            assert changes.summary() == stdout
    else:
        with pytest.raises(PatchError) as info:
            apply_patch(patch, work)
        assert error in str(info.value)
    assert tree(work) == expected


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_console_script(scenario: Path, tmp_path: Path):
    work = prepare(scenario, tmp_path)
    expected, error, stdout = expectations(scenario)
    patch = (scenario / "patch.txt").read_bytes()
    proc = subprocess.run([str(APPLY_PATCH)], input=patch, cwd=work, capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    out, err = proc.stdout.decode(), proc.stderr.decode()
    if error is None:
        assert proc.returncode == 0, err
        assert out.startswith("Success. Updated the following files:\n")
        if stdout is not None:
            assert out == stdout
    else:
        assert proc.returncode == 1, (out, err)
        assert error in err
        assert out == ""
    assert tree(work) == expected


def test_console_script_takes_the_patch_as_argument(tmp_path: Path):
    proc = subprocess.run([str(APPLY_PATCH), "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Success. Updated the following files:\nA a.txt\n"
    assert (tmp_path / "a.txt").read_text() == "x\n"


@pytest.mark.parametrize("argv, code, stream", [
    (["--help"], 0, "stdout"),
    (["-h"], 0, "stdout"),
    (["one", "two"], 2, "stderr"),
    ([""], 2, "stderr"),
])
def test_console_script_usage(tmp_path: Path, argv, code, stream):
    proc = subprocess.run([str(APPLY_PATCH), *argv], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == code
    assert "usage: apply_patch" in getattr(proc, stream)
    assert list(tmp_path.iterdir()) == []


def test_console_script_empty_stdin_is_usage_error(tmp_path: Path):
    proc = subprocess.run([str(APPLY_PATCH)], input=b"", cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 2
    assert b"usage: apply_patch" in proc.stderr


def test_console_script_imports_no_heavy_libraries():
    code = ("import sys, codebelt.patch.cli, codebelt.patch.apply; "
            "bad = [m for m in ('mcp', 'PIL', 'pypdf') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
