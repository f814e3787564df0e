"""Property-based tests: random files + random edits turned into patches must reproduce the edited
file; random garbage must give a clean PatchError and leave the directory exactly as it was."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codebelt.patch import PatchError, apply_patch, parse_patch
from codebelt.shell.analysis.patch_call import find_invocation

# Few distinct lines, so look-alike regions are common; no trailing whitespace (the fuzzy test adds it).
LINE = st.sampled_from(["a", "b", "", "def f():", "    return 1", "}", "x = 1", "naïve – “q”", "   indented", "*", "@@"])
NEW_LINE = st.one_of(LINE, st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12).map(str.rstrip))

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def edited_file(draw):
    """(original lines, edits) where edits are sorted, separated by at least one untouched line."""
    lines = draw(st.lists(LINE, min_size=0, max_size=40))
    edits = []
    pos = 0
    n = len(lines)
    while pos <= n and len(edits) < 6:
        start = draw(st.integers(pos, n))
        end = draw(st.integers(start, min(n, start + 4)))
        new = draw(st.lists(NEW_LINE, max_size=4))
        if start == end and not new:
            break
        edits.append((start, end, new))
        pos = end + 1
        if draw(st.booleans()):
            break
    assume(edits)
    return lines, edits


def expected_lines(lines, edits):
    out, pos = [], 0
    for s, e, new in edits:
        out += lines[pos:s] + new
        pos = e
    return out + lines[pos:]


def first_at_or_after(lines, block, lo):
    for i in range(lo, len(lines) - len(block) + 1):
        if lines[i:i + len(block)] == block:
            return i
    return None


def make_patch(lines, edits, draw, mangle=False):
    """An Update File patch whose chunks are found where they belong: pre-context is widened back to
    the end of the previous chunk whenever a shorter block would be found earlier. (A block may
    still fit a later place too: such a patch is refused as ambiguous.)"""
    chunks = []
    prev_end = 0
    for i, (s, e, new) in enumerate(edits):
        next_start = edits[i + 1][0] if i + 1 < len(edits) else len(lines)
        cs = max(prev_end, s - draw(st.integers(0, 3)))
        ce = min(next_start, e + draw(st.integers(0, 3)))
        if cs == ce and ce < len(lines) and ce < next_start:
            ce += 1  # a pure insertion in the middle needs a line to hang on
        if cs == ce and ce < len(lines):
            cs = prev_end  # …or the lines before it
        if mangle or first_at_or_after(lines, lines[cs:ce], prev_end) != cs:
            cs = prev_end
        if cs == ce and ce != len(lines):
            return None  # cannot be expressed without context (never happens with the rules above)
        body = ["@@"]
        body += [" " + x for x in lines[cs:s]]
        body += ["-" + x for x in lines[s:e]]
        body += ["+" + x for x in new]
        body += [" " + x for x in lines[e:ce]]
        if mangle:
            body = [b + "  " if b[:1] in " -" else b for b in body]
        chunks.append("\n".join(body))
        prev_end = ce
    return "*** Begin Patch\n*** Update File: f.txt\n" + "\n".join(chunks) + "\n*** End Patch\n"


def run(lines, patch):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "f.txt").write_text("".join(x + "\n" for x in lines), encoding="utf-8")
        apply_patch(patch, root)
        return (root / "f.txt").read_text(encoding="utf-8")


def fits_several_places(lines, patch, key=lambda s: s):
    """Whether a chunk of the patch (bare '@@' chunks, placed in order) matches more than one
    place after the previous chunk: then the patch does not say which one is meant."""
    keys = [key(x) for x in lines]
    prev = 0
    for chunk in parse_patch(patch).hunks[0].chunks:
        old = [key(t) for k, t in chunk.ops if k != "+"]
        if not old:
            continue
        starts = [i for i in range(prev, len(keys) - len(old) + 1) if keys[i:i + len(old)] == old]
        if len(starts) > 1:
            return True
        prev = starts[0] + len(old)
    return False


def applies_or_refuses_as_ambiguous(lines, edits, patch, key=lambda s: s):
    """Never silently wrong: the patch reproduces the edited file, or it is refused because a
    chunk fits several places — and only then."""
    try:
        out = run(lines, patch)
    except PatchError as e:
        assert "fits" in str(e) and fits_several_places(lines, patch, key), str(e)
        return
    assert not fits_several_places(lines, patch, key)
    assert out == "".join(x + "\n" for x in expected_lines(lines, edits))


@SETTINGS
@given(edited_file(), st.data())
def test_random_edits_reproduce_the_edited_file(case, data):
    lines, edits = case
    patch = make_patch(lines, edits, data.draw)
    assert patch is not None
    applies_or_refuses_as_ambiguous(lines, edits, patch)


@SETTINGS
@given(edited_file(), st.data())
def test_trailing_whitespace_in_patch_never_leaks_into_context(case, data):
    lines, edits = case
    patch = make_patch(lines, edits, data.draw, mangle=True)
    applies_or_refuses_as_ambiguous(lines, edits, patch, key=str.rstrip)


PATCHY_LINE = st.one_of(
    st.sampled_from([
        "*** Begin Patch", "*** End Patch", "*** Add File: a", "*** Add File: new/n.txt", "*** Update File: a",
        "*** Delete File: a", "*** Delete File: d", "*** Move to: b", "*** Move to: ../out", "@@", "@@ x",
        "@@ -1,2 +1,2 @@", " x", "-x", "+x", "+", "-", " ", "", "*** End of File", "<<'EOF'", "EOF", "\r",
        "*** Add File: ../escape", "*** Update File: /etc/hostname", "*** Add File: d", "  *** End Patch ",
        "*** Update File: d/inner.txt", "*** Add File: a/child",
    ]),
    st.text(max_size=20),
)


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.text(max_size=200),
    st.lists(PATCHY_LINE, max_size=12).map("\n".join),
    st.lists(PATCHY_LINE, max_size=10).map(lambda ls: "\n".join(["*** Begin Patch", *ls, "*** End Patch"])),
))
def test_garbage_gives_a_clean_error_and_changes_nothing(text):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "a").write_text("x\n")
        (root / "d").mkdir()
        (root / "d" / "inner.txt").write_text("x\n")
        before = snapshot(root)
        try:
            apply_patch(text, root)
        except PatchError as e:
            assert str(e)
            assert snapshot(root) == before
        assert not (Path(tmp) / "out").exists() and not (Path(tmp) / "escape").exists()
        assert find_invocation(text) is None or isinstance(find_invocation(text).patch, str)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parser_and_detector_never_crash(text):
    try:
        parse_patch(text)
    except PatchError:
        pass
    find_invocation(text)
    find_invocation("apply_patch <<'EOF'\n" + text + "\nEOF")
    find_invocation("bash -lc " + repr(text))
