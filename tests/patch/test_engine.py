"""Engine behaviour the fixture folders cannot express: rollback when a write fails midway, file
modes, the diff in data, dry runs, the resolver, parse error line numbers, seek passes."""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path

import pytest

import codebelt.patch.apply as apply_mod
import codebelt.patch.commit as commit_mod
from codebelt.files.atomic import AtomicWriteError
from codebelt.patch import PatchError, PatchParseError, affected_paths, apply_patch, parse_patch
from codebelt.patch.seek import LineIndex, seek


def P(body: str) -> str:
    return "*** Begin Patch\n" + body + "*** End Patch\n"


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else "dir")
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("fail_on", [0, 1, 2, 3])  # 0: the deletion fails
def test_a_write_failing_midway_restores_everything(tmp_path: Path, monkeypatch, fail_on):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "gone.txt").write_text("gone\n")
    os.chmod(tmp_path / "gone.txt", 0o640)
    before = snapshot(tmp_path)
    real = commit_mod.write_atomic
    calls = {"n": 0}

    def flaky(path, data, **kw):
        calls["n"] += 1
        if calls["n"] == fail_on:
            raise AtomicWriteError(28, f"no space left on the device holding {path}")
        return real(path, data, **kw)

    def failing_unlink(path, *a, **kw):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(commit_mod, "write_atomic", flaky)
    if fail_on == 0:
        monkeypatch.setattr(os, "unlink", failing_unlink)
    patch = P("*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: gone.txt\n"
              "*** Add File: new/deep/c.txt\n+c\n*** Update File: b.txt\n*** Move to: moved/b.txt\n@@\n-b\n+B\n")
    with pytest.raises(PatchError) as info:
        apply_patch(patch, tmp_path)
    assert ("no space left" if fail_on else "Permission denied") in str(info.value)
    assert "No file was changed" in str(info.value)
    monkeypatch.undo()
    assert snapshot(tmp_path) == before
    assert stat.S_IMODE((tmp_path / "gone.txt").stat().st_mode) == 0o640


def test_moved_file_keeps_its_mode(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    apply_patch(P("*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo hi\n+echo hello\n"), tmp_path)
    moved = tmp_path / "bin" / "run.sh"
    assert moved.read_text() == "echo hello\n"
    assert stat.S_IMODE(moved.stat().st_mode) == 0o755


def test_updated_file_keeps_its_mode(tmp_path: Path):
    f = tmp_path / "x.sh"
    f.write_text("a\n")
    f.chmod(0o700)
    apply_patch(P("*** Update File: x.sh\n@@\n-a\n+b\n"), tmp_path)
    assert stat.S_IMODE(f.stat().st_mode) == 0o700


def test_dry_run_changes_nothing_but_reports(tmp_path: Path):
    (tmp_path / "a.txt").write_text("a\n")
    before = snapshot(tmp_path)
    changes = apply_patch(P("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: n.txt\n+n\n"), tmp_path, dry_run=True)
    assert changes.summary() == "Success. Updated the following files:\nA n.txt\nM a.txt\n"
    assert snapshot(tmp_path) == before


def test_unchanged_file_is_not_rewritten(tmp_path: Path):
    f = tmp_path / "a.txt"
    f.write_text("a\nb\n")
    before = f.stat().st_ino
    apply_patch(P("*** Update File: a.txt\n@@\n a\n-b\n+b\n"), tmp_path)
    assert f.stat().st_ino == before  # an atomic rewrite would have replaced the inode


@pytest.mark.parametrize("old, new", [
    ("".join(f"line {i}\n" for i in range(40)), "".join(f"line {i}\n" for i in range(40) if i not in (3, 20))),
    ("a\nb\nc\n", "a\nB\nc\nd\n"),
    ("x\n", "y\nz\n"),
])
def test_data_diff_matches_difflib(tmp_path: Path, old, new):
    (tmp_path / "f.txt").write_text(old)
    olds, news = old.splitlines(), new.splitlines()
    ops = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, olds, news).get_opcodes():
        ops += [" " + x for x in olds[i1:i2]] if tag == "equal" else []
        ops += ["-" + x for x in olds[i1:i2]] if tag in ("replace", "delete") else []
        ops += ["+" + x for x in news[j1:j2]] if tag in ("replace", "insert") else []
    changes = apply_patch(P("*** Update File: f.txt\n@@\n" + "\n".join(ops) + "\n"), tmp_path)
    assert (tmp_path / "f.txt").read_text() == new
    expected = "".join(x if x.endswith("\n") else x + "\n" for x in
                       difflib.unified_diff(olds, news, "a/f.txt", "b/f.txt", lineterm=""))
    assert changes.files[0].diff == expected


def test_fuzzy_passes_are_reported(tmp_path: Path):
    (tmp_path / "q.txt").write_text("say “hi”\n")
    changes = apply_patch(P('*** Update File: q.txt\n@@\n-say "hi"\n+say "hello"\n'), tmp_path)
    assert changes.to_data()["files"][0]["fuzzy"] == ["unicode punctuation"]


def test_resolver_refuses_unc_and_nul(tmp_path: Path):
    for bad in ("//host/share/x", "\\\\host\\share\\x"):
        with pytest.raises(PatchError, match="UNC"):
            apply_patch(P(f"*** Add File: {bad}\n+x\n"), tmp_path)
    assert snapshot(tmp_path) == {}


def test_resolver_base_for_relative_paths(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    resolve = apply_mod.workspace_resolver(tmp_path, base=tmp_path / "sub")
    apply_patch(P("*** Add File: x.txt\n+x\n*** Add File: ../y.txt\n+y\n"), tmp_path, resolve=resolve)
    assert (tmp_path / "sub" / "x.txt").exists() and (tmp_path / "y.txt").exists()
    with pytest.raises(PatchError, match="outside the workspace"):
        apply_patch(P("*** Add File: ../../z.txt\n+z\n"), tmp_path, resolve=resolve)


@pytest.mark.parametrize("text, line", [
    ("*** Begin Patch\n*** Update File: a\n@@\n x\nbad\n*** End Patch", 5),
    ("\n\n*** Begin Patch\n*** Bogus: a\n*** End Patch", 4),
    ("<<'EOF'\n*** Begin Patch\n*** Update File: a\n*** End Patch\nEOF", 3),
    ("*** Begin Patch\r\n*** Add File: a\r\n+x\r\n*** Update File: b\r\n@@\r\n-x\r\n*** End of File\r\nzzz\r\n*** End Patch", 8),
])
def test_parse_errors_name_the_patch_line(text, line):
    with pytest.raises(PatchParseError) as info:
        parse_patch(text)
    assert info.value.line == line
    assert f"line {line}" in str(info.value)


def test_affected_paths_lists_move_targets_once():
    assert affected_paths(P("*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** Delete File: a\n*** Add File: c\n+z\n")) \
        == ["a", "b", "c"]


@pytest.mark.parametrize("lines, pattern, start, eof, expected", [
    (["a", "b", "c"], ["b", "c"], 0, False, (1, 0)),
    (["a  ", "b\t"], ["a", "b"], 0, False, (0, 1)),
    (["   a", "  b "], ["a", "b"], 0, False, (0, 2)),
    (["‘x’ – y"], ["'x' - y"], 0, False, (0, 3)),
    (["x", "y", "x"], ["x"], 1, False, (2, 0)),
    (["x", "y", "x"], ["x"], 0, True, (2, 0)),
    (["x", "y", "z"], ["x"], 0, True, (0, 0)),  # not at the end: falls back to a normal search
    (["a"], ["a", "b"], 0, False, None),
    ([], [], 0, False, (0, 0)),
    (["a", "b"], [], 0, True, (2, 0)),
])
def test_seek_table(lines, pattern, start, eof, expected):
    assert seek(LineIndex(lines), pattern, start, eof) == expected


def test_seek_stays_linear_on_repeated_context():
    """5,000 repeated context lines against a 40,000-line file took 47 s with slice checks at
    every candidate; the rolling hash makes it linear. Asserted on the answer, and on the number
    of slice comparisons (not on time)."""
    import codebelt.files.runs as seek_mod

    lines = ["x"] * 40_000 + ["end"]
    pattern = ["x"] * 5_000 + ["end"]
    compared = {"n": 0}
    real = seek_mod.find_run_rolling

    def counting(keys, pat, lo, hi):
        compared["n"] += 1
        return real(keys, pat, lo, hi)

    seek_mod.find_run_rolling = counting
    try:
        assert seek(LineIndex(lines), pattern) == (35_000, 0)
        assert seek(LineIndex(lines), ["x"] * 5_000 + ["missing"]) is None
    finally:
        seek_mod.find_run_rolling = real
    assert compared["n"] >= 1  # the linear search took over


@pytest.mark.parametrize("seed", range(20))
def test_rolling_search_agrees_with_the_plain_one(seed):
    import random

    import codebelt.files.runs as seek_mod

    rnd = random.Random(seed)
    keys = [rnd.choice("ab") for _ in range(300)]
    pat = [rnd.choice("ab") for _ in range(rnd.randint(1, 8))]
    for lo in (0, 5, 100):
        hi = len(keys) - len(pat)
        plain = next((i for i in range(lo, hi + 1) if keys[i:i + len(pat)] == pat), None)
        assert seek_mod.find_run_rolling(keys, pat, lo, hi) == plain
        assert seek_mod.find_run(keys, pat, lo, hi) == plain
