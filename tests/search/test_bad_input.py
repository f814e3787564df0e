"""Bad input to Glob and Grep: always a clear is_error result (or a clear answer), never a crash."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from codebelt.search.ripgrep import locate

# (tool, input, substrings the error text must contain)
ERRORS = [
    ("Grep", {}, ["The required parameter `pattern` is missing"]),
    ("Grep", {"pattern": "("}, ["Search failed — ripgrep rejected the pattern", "unclosed group"]),
    ("Grep", {"pattern": "a{2,1}"}, ["Search failed — ripgrep rejected the pattern", "repetition"]),
    ("Grep", {"pattern": "x", "glob": "[abc"}, ["rg: error parsing glob", "unclosed character class"]),
    ("Grep", {"pattern": "x", "type": "nosuchtype"}, ["rg: unrecognized file type: nosuchtype"]),
    ("Grep", {"pattern": "x", "path": "nope/missing"}, ["Path does not exist: ", "nope/missing. Note: your current"]),
    ("Grep", {"pattern": "x", "path": "src/ap.py"}, ["Path does not exist: "]),
    ("Grep", {"pattern": "x", "-A": -1, "output_mode": "content"}, ["rg: error parsing flag -A"]),  # passed on, as Claude Code does
    ("Grep", {"pattern": "x", "-C": "lots"}, ["`-C` type is expected as `number` but provided as `string`"]),
    ("Grep", {"pattern": "x", "output_mode": "lines"}, ['"path": [\n      "output_mode"']),
    ("Grep", {"pattern": "x", "bogus": 1}, ["An unexpected parameter `bogus` was provided"]),
    ("Grep", {"pattern": "x", "path": "\\\\host\\share"}, ["UNC"]),
    ("Grep", {"pattern": "a\x00b"}, ["NUL"]),
    ("Grep", {"pattern": "a\nb"}, ["Consider enabling multiline mode"]),
    ("Glob", {"pattern": "src/[a-"}, ["rg: error parsing glob", "unclosed character class"]),
    ("Glob", {"pattern": "{a,b"}, ["rg: error parsing glob", "unclosed alternate group"]),
    ("Glob", {"pattern": "*", "path": "src/app.py"}, ["Path is not a directory: src/app.py"]),
    ("Glob", {"pattern": "*", "path": "nowhere"}, ["Directory does not exist: ", "nowhere. Note: your current"]),
    ("Glob", {"pattern": "*", "path": "//host/share"}, ["UNC"]),
]
# As Claude Code: these are answered, not refused.
ANSWERS = [
    ("Grep", {"pattern": "", "path": "src"}, "Found 3 files"),  # an empty pattern matches every line
    ("Grep", {"pattern": "hello", "head_limit": -1}, "Found 5 files"),  # as if not given
    ("Grep", {"pattern": "hello", "offset": -5}, "Found 5 files"),
    ("Glob", {"pattern": ""}, "src/app.py"),  # everything
    ("Glob", {"pattern": "   "}, "src/app.py"),
]


@pytest.mark.parametrize("tool,inp,start", ANSWERS, ids=[f"{t}:{json.dumps(i)[:50]}" for t, i, _ in ANSWERS])
def test_values_claude_code_accepts_are_answered(s, tool, inp, start):
    r = s.call(tool, inp)
    assert not r.is_error and start in r.text, r.text


@pytest.mark.parametrize("tool,inp,needles", ERRORS, ids=[f"{t}:{json.dumps(i)[:50]}" for t, i, _ in ERRORS])
def test_bad_input_is_a_clear_error(s, tool, inp, needles):
    r = s.call(tool, inp)
    assert r.is_error, r.text
    for n in needles:
        assert n in r.text, r.text
    assert "Traceback" not in r.text and "internal error" not in r.text


def test_special_files_are_refused_not_waited_on(s, project):
    os.mkfifo(project / "pipe")
    r = s.call("Grep", {"pattern": "x", "path": "pipe"})
    assert r.is_error and "not a regular file" in r.text
    r = s.call("Grep", {"pattern": "x", "path": "/dev/zero"})
    assert r.is_error
    # walking past a FIFO never opens it
    assert s.call("Grep", {"pattern": "hello"}).text.startswith("Found 5 files")
    assert "pipe" not in s.call("Glob", {"pattern": "*"}).text


def test_grep_on_a_file_searches_that_file(s):
    r = s.call("Grep", {"pattern": "return", "path": "src/util.py", "output_mode": "content"})
    assert r.text == "2:    return 'hello world'"  # one file: no file name, as ripgrep prints it


def test_binary_files_are_skipped_when_walking(s):
    assert "data.bin" not in s.call("Grep", {"pattern": "binary"}).text
    assert s.call("Grep", {"pattern": "binary"}).text == "No files found"


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"),
    reason="needs root and setpriv to run ripgrep as an unprivileged user",
)
def test_unreadable_files_and_dirs_are_reported_not_fatal(tmp_path, make_session):
    # Root reads everything, so rg itself runs as `nobody` (through setpriv, via the
    # search.ripgrepPath setting), for whom chmod 000 is real. The real rg, real errors.
    d = Path(tempfile.mkdtemp(prefix="codebelt-unreadable-", dir="/tmp"))
    d.chmod(0o755)
    wrapper = tmp_path / "rg-as-nobody"
    wrapper.write_text(
        "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "
        f"{locate()} \"$@\"\n"
    )
    wrapper.chmod(0o755)
    try:
        (d / "ok.txt").write_text("needle ok\n")
        (d / "locked.txt").write_text("needle locked\n")
        (d / "locked.txt").chmod(0o000)
        (d / "closed").mkdir()
        (d / "closed" / "inner.txt").write_text("needle inner\n")
        (d / "closed").chmod(0o000)
        # unjailed: setpriv needs the capabilities the read-only jail drops
        s = make_session(root=d, settings={"search": {"ripgrepPath": str(wrapper)}, "sandbox": {"jail": False}})
        content = s.call("Grep", {"pattern": "needle", "output_mode": "content"})
        assert not content.is_error, content.text
        assert content.text.startswith("ok.txt:1:needle ok\n")
        assert "Permission denied" in content.text
        assert "results may be incomplete" in content.text
        assert content.data["warnings"]
        files = s.call("Grep", {"pattern": "needle"})
        assert files.text.startswith("Found 1 file\nok.txt\n") and "Permission denied" in files.text
        assert s.call("Grep", {"pattern": "needle", "output_mode": "count"}).text.startswith(
            "ok.txt:1\n"
        )
        g = s.call("Glob", {"pattern": "**/*.txt"})
        assert not g.is_error and set(g.data["filenames"]) == {"locked.txt", "ok.txt"}
        assert "Permission denied" in g.text  # the closed directory is reported
    finally:
        (d / "closed").chmod(0o755)
        shutil.rmtree(d, ignore_errors=True)
