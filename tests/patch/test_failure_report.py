"""When a chunk cannot be placed, the error names the most similar lines of the file. That report
must be right (table below) and bounded: a failed patch costs about what a successful one does,
whatever the file and the patch (pytest-timeout guards; no timing assertions)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codebelt.errors import PatchApplyError
from codebelt.patch import apply_patch


def _patch(path: str, body: list[str], header: str = "") -> str:
    return ("*** Begin Patch\n*** Update File: " + path + "\n@@" + (" " + header if header else "") + "\n"
            + "".join(line + "\n" for line in body) + "*** End Patch\n")


def _distinct(n: int) -> list[str]:
    return [f"value_{i} = compute({i}, 'item {i}')" for i in range(n)]


def _blocks(n: int) -> list[str]:
    out = []
    for i in range(n):
        out += [f"def handler_{i}(request):", "    data = load(request)", "    check(data)",
                "    return render(data)", ""]
    return out


# (name, file lines, patch body, the "lines A-B" the report must name, a line it must quote)
CASES = [
    ("typo in the middle line", _distinct(2000),
     [" value_999 = compute(999, 'item 999')", "-value_1000 = compute(1000, 'item 1OOO')", "+x = 1",
      " value_1001 = compute(1001, 'item 1001')"], (1000, 1002), "1001| value_1000"),
    ("an extra line in the patch", _distinct(2000),
     [" value_500 = compute(500, 'item 500')", " inserted = True", "-value_501 = compute(501, 'item 501')",
      "+y = 2", " value_502 = compute(502, 'item 502')"], (500, 503), "502| value_501"),
    ("the right one of 100 equal blocks", _blocks(100),
     [" def handler_57(request):", "     data = load(request)", "-    check(data, strict=True)",
      "+    check(data)", "     return render(data)"], (286, 289), "286| def handler_57"),
    ("no shared line: the nearest single line", _distinct(300) + ["def alpha():", "    return 1"],
     [" def alpah():", "-    return 2", "+    return 3"], (301, 302), "301| def alpha():"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name,lines,body,span,quoted", CASES, ids=[c[0] for c in CASES])
def test_the_report_names_the_most_similar_lines(tmp_path: Path, name, lines, body, span, quoted):
    (tmp_path / "f.py").write_text("\n".join(lines) + "\n")
    with pytest.raises(PatchApplyError) as info:
        apply_patch(_patch("f.py", body), tmp_path)
    text = str(info.value)
    m = re.search(r"most similar lines of f\.py are lines (\d+)-(\d+)", text)
    assert m, text
    assert (int(m.group(1)), int(m.group(2))) == span, text
    assert quoted in text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("file_lines,context", [(40_000, 5_000), (200_000, 20_000)])
def test_repeated_lines_and_a_missing_one_fail_fast(tmp_path: Path, file_lines, context):
    (tmp_path / "r.txt").write_text("x\n" * file_lines)
    body = [" x"] * context + ["-missing", "+added"]
    with pytest.raises(PatchApplyError) as info:
        apply_patch(_patch("r.txt", body), tmp_path)
    text = str(info.value)
    assert f"line {context + 1} is the first that differs from the patch" in text
    assert "missing" in text  # the line that differs is quoted, not only the first 30
    assert len(text) < 5_000  # the report stays short whatever the sizes


@pytest.mark.timeout(60)
def test_trailing_blank_context_lines_are_dropped_by_bisection(tmp_path: Path):
    # Each trailing blank line was dropped and the search repeated: blank lines × file lines.
    (tmp_path / "r.txt").write_text("x\n" * 40_000 + "target\n" + "\n" * 10)
    body = ["-target", "+hit"] + [" "] * 30_000
    apply_patch(_patch("r.txt", body), tmp_path)
    assert (tmp_path / "r.txt").read_text() == "x\n" * 40_000 + "hit\n" + "\n" * 10
    with pytest.raises(PatchApplyError):
        apply_patch(_patch("r.txt", ["-nothere", "+hit"] + [" "] * 30_000), tmp_path)


@pytest.mark.timeout(60)
def test_a_missing_header_is_reported_fast_on_a_huge_file(tmp_path: Path):
    # Every line is much like the header: each full comparison is quadratic in the line length.
    (tmp_path / "big.py").write_text("".join(f"def f{i}():\n    return {i} + '{'z' * 2000}'\n" for i in range(30_000)))
    header = "    return 7 + '" + "z" * 1990 + "y'"
    with pytest.raises(PatchApplyError) as info:
        apply_patch(_patch("big.py", ["-    return 1", "+    return 2"], header=header), tmp_path)
    text = str(info.value)
    assert "Failed to find context" in text and "Lines that look similar: \"return 7 + 'zzz" in text
    assert len(text) < 2_000
