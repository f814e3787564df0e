"""The ApplyPatch tool through a real Session: result text, permissions (Edit rules), workspace
bounds, the file-state store, and the Bash tool's interception of `apply_patch` commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebelt.permissions.requests import PathRequest
from codebelt.tools.apply_patch import patch_requests, run_patch


def patch(body: str) -> str:
    return "*** Begin Patch\n" + body + "*** End Patch\n"


def files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_result_text_and_data(ws: Path, make_session):
    (ws / "app.py").write_text("def greet():\n    print('Hi')\n")
    (ws / "old.txt").write_text("bye\n")
    s = make_session(mode="acceptEdits")
    r = s.call("ApplyPatch", {"input": patch(
        "*** Add File: pkg/new.txt\n+hello\n"
        "*** Update File: app.py\n*** Move to: src/main.py\n@@ def greet():\n-    print('Hi')\n+    print('Hello')\n"
        "*** Delete File: old.txt\n")})
    assert not r.is_error, r.text
    assert r.text == "Success. Updated the following files:\nA pkg/new.txt\nM src/main.py\nD old.txt\n"
    assert files(ws) == {"pkg/new.txt": "hello\n", "src/main.py": "def greet():\n    print('Hello')\n"}
    by_path = {f["path"]: f for f in r.data["files"]}
    assert by_path["src/main.py"]["move_from"] == "app.py"
    assert "-    print('Hi')\n+    print('Hello')\n" in by_path["src/main.py"]["diff"]
    assert by_path["pkg/new.txt"]["diff"].startswith("--- /dev/null\n+++ b/pkg/new.txt\n")
    assert r.data["deleted"] == ["old.txt"]


@pytest.mark.parametrize("rule, body", [
    ("Edit(secret/**)", "*** Add File: secret/key.txt\n+x\n"),
    ("Edit(secret/**)", "*** Update File: open.txt\n*** Move to: secret/open.txt\n@@\n-open\n+moved\n"),
    ("Edit(open.txt)", "*** Update File: open.txt\n@@\n-open\n+changed\n"),
    ("Edit(open.txt)", "*** Delete File: open.txt\n"),
    ("Edit(open.txt)", "*** Add File: fine.txt\n+ok\n*** Update File: open.txt\n@@\n-open\n+changed\n"),
])
def test_edit_deny_rule_blocks_the_whole_patch(ws: Path, make_session, rule, body):
    (ws / "open.txt").write_text("open\n")
    s = make_session(mode="acceptEdits", settings={"permissions": {"deny": [rule]}})
    r = s.call("ApplyPatch", {"input": patch(body)})
    assert r.is_error
    assert "denied" in r.text.lower() or "deny" in r.text.lower()
    assert files(ws) == {"open.txt": "open\n"}


def test_default_mode_without_approver_changes_nothing(ws: Path, make_session):
    s = make_session()
    r = s.call("ApplyPatch", {"input": patch("*** Add File: a.txt\n+x\n")})
    assert r.is_error
    assert files(ws) == {}


@pytest.mark.parametrize("path", ["../escape.txt", "/tmp/codebelt-patch-escape.txt", "sub/../../escape.txt"])
def test_paths_outside_the_workspace_are_refused(ws: Path, make_session, path):
    s = make_session(mode="bypassPermissions")
    r = s.call("ApplyPatch", {"input": patch(f"*** Add File: {path}\n+x\n")})
    assert r.is_error
    assert "outside the workspace" in r.text
    assert not (ws.parent / "escape.txt").exists()
    assert not Path("/tmp/codebelt-patch-escape.txt").exists()


def test_symlink_pointing_outside_is_refused(ws: Path, tmp_path: Path, make_session):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "t.txt").write_text("t\n")
    (ws / "link").symlink_to(outside)
    s = make_session(mode="bypassPermissions")
    r = s.call("ApplyPatch", {"input": patch("*** Update File: link/t.txt\n@@\n-t\n+hacked\n")})
    assert r.is_error and "outside the workspace" in r.text
    assert (outside / "t.txt").read_text() == "t\n"


def test_absolute_path_inside_is_allowed(ws: Path, make_session):
    s = make_session(mode="acceptEdits")
    r = s.call("ApplyPatch", {"input": patch(f"*** Add File: {ws}/abs.txt\n+x\n")})
    assert not r.is_error, r.text
    assert r.text == "Success. Updated the following files:\nA abs.txt\n"


@pytest.mark.parametrize("text, expect", [
    ("not a patch", "The first line of the patch must be '*** Begin Patch'"),
    (patch("*** Update File: a.txt\n@@\n-missing\n+x\n"), "Failed to find expected lines in a.txt"),
    (patch("*** Delete File: nope.txt\n"), "Failed to delete file nope.txt"),
])
def test_errors_are_results_not_exceptions(ws: Path, make_session, text, expect):
    (ws / "a.txt").write_text("a\n")
    s = make_session(mode="acceptEdits")
    r = s.call("ApplyPatch", {"input": text})
    assert r.is_error
    assert expect in r.text
    assert files(ws) == {"a.txt": "a\n"}


def test_read_patch_then_edit_keeps_working(ws: Path, make_session):
    (ws / "f.py").write_text("x = 1\ny = 2\n")
    s = make_session(mode="acceptEdits")
    assert not s.call("Read", {"file_path": str(ws / "f.py")}).is_error
    assert not s.call("ApplyPatch", {"input": patch("*** Update File: f.py\n@@\n-x = 1\n+x = 10\n")}).is_error
    r = s.call("Edit", {"file_path": str(ws / "f.py"), "old_string": "y = 2", "new_string": "y = 20"})
    assert not r.is_error, r.text
    assert (ws / "f.py").read_text() == "x = 10\ny = 20\n"


def test_patch_requests_cover_every_touched_path(ws: Path, make_session):
    s = make_session()
    ctx = s.context("ApplyPatch")
    reqs = patch_requests(patch(
        "*** Add File: a.txt\n+x\n*** Delete File: d.txt\n"
        "*** Update File: u.txt\n*** Move to: m/v.txt\n@@\n-x\n+y\n"), ws / "sub", ctx)
    root = ws.resolve()
    assert reqs == [PathRequest("write", root / "sub" / p) for p in ("a.txt", "d.txt", "u.txt", "m/v.txt")]
    assert patch_requests("garbage", ws, ctx) == []


def test_run_patch_takes_paths_from_base(ws: Path, make_session):
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("old\n")
    s = make_session(mode="acceptEdits")
    ctx = s.context("Bash")
    r = run_patch(patch("*** Update File: f.txt\n@@\n-old\n+new\n"), ws / "sub", ctx)
    assert not r.is_error, r.text
    assert r.text == "Success. Updated the following files:\nM sub/f.txt\n"
    assert (ws / "sub" / "f.txt").read_text() == "new\n"
    bad = run_patch("*** Begin Patch\n*** Bogus\n*** End Patch", ws, ctx)
    assert bad.is_error and "is not a valid hunk header" in bad.text


def test_bash_intercepts_apply_patch_heredoc(ws: Path, make_session):
    (ws / "pkg").mkdir()
    (ws / "pkg" / "m.py").write_text("A = 1\n")
    s = make_session(mode="acceptEdits")
    r = s.call("Bash", {"command": "cd pkg && apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: m.py\n"
                                   "@@\n-A = 1\n+A = 2\n*** End Patch\nEOF"})
    assert not r.is_error, r.text
    assert "M pkg/m.py" in r.text
    assert (ws / "pkg" / "m.py").read_text() == "A = 2\n"


def test_bash_interception_honours_edit_deny(ws: Path, make_session):
    (ws / "m.py").write_text("A = 1\n")
    s = make_session(mode="acceptEdits", settings={"permissions": {"deny": ["Edit(m.py)"]}})
    r = s.call("Bash", {"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: m.py\n"
                                   "@@\n-A = 1\n+A = 2\n*** End Patch\nEOF"})
    assert r.is_error
    assert (ws / "m.py").read_text() == "A = 1\n"


# (file bytes, Edit's old_string → new_string, the same change as patch lines): in a file with
# mixed line endings, Edit and ApplyPatch must write the same bytes.
MIXED = [
    ("one-crlf-line-in-a-tie", b"a\r\nb\nc\r\nd\n", ("c", "C"), " b\n-c\n+C\n d\n"),
    ("crlf-then-lf-lines", b"a\r\nb\r\nc\nd\n", ("b\nc", "B\nC"), " a\n-b\n-c\n+B\n+C\n d\n"),
    ("more-lines-than-replaced", b"a\nb\r\nc\n", ("b", "B1\nB2"), " a\n-b\n+B1\n+B2\n c\n"),
    ("insert-after-a-crlf-line", b"a\r\nb\nc\n", ("a\n", "a\nnew\n"), " a\n+new\n b\n"),
    ("insert-after-an-lf-line", b"a\nb\r\nc\r\n", ("a\n", "a\nnew\n"), " a\n+new\n b\n"),
]


@pytest.mark.parametrize("data, edit, body", [c[1:] for c in MIXED], ids=[c[0] for c in MIXED])
def test_edit_and_apply_patch_agree_on_mixed_line_endings(ws: Path, make_session, data, edit, body):
    (ws / "e.txt").write_bytes(data)
    (ws / "p.txt").write_bytes(data)
    s = make_session(mode="acceptEdits")
    assert not s.call("Read", {"file_path": "e.txt"}).is_error
    r = s.call("Edit", {"file_path": "e.txt", "old_string": edit[0], "new_string": edit[1]})
    assert not r.is_error, r.text
    r = s.call("ApplyPatch", {"input": patch(f"*** Update File: p.txt\n@@\n{body}")})
    assert not r.is_error, r.text
    assert (ws / "p.txt").read_bytes() == (ws / "e.txt").read_bytes()
