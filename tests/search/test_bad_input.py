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
    ("Grep", {"pattern": ""}, ["pattern is empty"]),
    ("Grep", {}, ["`pattern` is required"]),
    ("Grep", {"pattern": "("}, ["Invalid regular expression", "unclosed group", "fixed_strings: true"]),
    ("Grep", {"pattern": "a{2,1}"}, ["Invalid regular expression", "fixed_strings"]),
    ("Grep", {"pattern": "x", "glob": "[abc"}, ["Invalid glob", "unclosed character class"]),
    ("Grep", {"pattern": "x", "type": "nosuchtype"}, ["unrecognized file type", "glob instead"]),
    ("Grep", {"pattern": "x", "path": "nope/missing"}, ["Path does not exist: nope/missing"]),
    ("Grep", {"pattern": "x", "path": "src/ap.py"}, ["Did you mean src/app.py?"]),
    ("Grep", {"pattern": "x", "head_limit": -1}, ["`head_limit`", "greater than or equal to 0"]),
    ("Grep", {"pattern": "x", "offset": -5}, ["`offset`", "greater than or equal to 0"]),
    ("Grep", {"pattern": "x", "-A": -1}, ["`-A`", "greater than or equal to 0"]),
    ("Grep", {"pattern": "x", "-C": "lots"}, ["`-C`"]),
    ("Grep", {"pattern": "x", "output_mode": "lines"}, ["`output_mode`"]),
    ("Grep", {"pattern": "x", "bogus": 1}, ["`bogus` is not a parameter of Grep"]),
    ("Grep", {"pattern": "x", "path": "\\\\host\\share"}, ["UNC"]),
    ("Grep", {"pattern": "a\x00b"}, ["NUL"]),
    ("Grep", {"pattern": "a\nb"}, ["multiline: true"]),
    ("Glob", {"pattern": ""}, ["pattern is empty"]),
    ("Glob", {"pattern": "   "}, ["pattern is empty"]),
    ("Glob", {"pattern": "src/[a-"}, ["Invalid glob pattern", "unclosed character class"]),
    ("Glob", {"pattern": "{a,b"}, ["Invalid glob pattern", "unclosed alternate group"]),
    ("Glob", {"pattern": "*", "path": "src/app.py"}, ["Path is not a directory: src/app.py"]),
    ("Glob", {"pattern": "*", "path": "nowhere"}, ["Path does not exist: nowhere"]),
    ("Glob", {"pattern": "*", "path": "//host/share"}, ["UNC"]),
]


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
    assert r.text == "src/util.py:2:    return 'hello world'"


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
        s = make_session(root=d, settings={"search": {"ripgrepPath": str(wrapper)}})
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
