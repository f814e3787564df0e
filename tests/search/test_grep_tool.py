"""Grep through Session.call: the three modes, filters, paging, caps, permissions."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

import codebelt.search.grep as grep_engine
import codebelt.tools.grep as grep_tool
from codebelt.tools.grep import Grep

# (input, exact expected text). The tree is tests/search/conftest.py's TREE.
CASES = [
    (
        {"pattern": "hello"},
        "Found 5 files\ndocs/readme.md\nsrc/util.py\nsrc/deep/x.js\nsrc/app.py\n.hidden/secret.txt",
    ),
    (
        {"pattern": "hello", "output_mode": "content"},
        ".hidden/secret.txt:1:hello hidden\n"
        "docs/readme.md:2:hello again\n"
        "src/app.py:3:    print('hello')\n"
        "src/deep/x.js:1:function hello() {}\n"
        "src/util.py:2:    return 'hello world'",
    ),
    (
        {"pattern": "hello", "output_mode": "content", "-n": False, "path": "docs"},
        "docs/readme.md:hello again",
    ),
    (
        {"pattern": "HELLO", "output_mode": "content", "-i": True, "path": "docs"},
        "docs/readme.md:1:Hello docs\ndocs/readme.md:2:hello again",
    ),
    (
        {"pattern": "hello", "output_mode": "count"},
        ".hidden/secret.txt:1\ndocs/readme.md:1\nsrc/app.py:1\nsrc/deep/x.js:1\nsrc/util.py:1\n\n"
        "Found 5 total occurrences across 5 files.",
    ),
    ({"pattern": "hello", "glob": "*.py"}, "Found 2 files\nsrc/util.py\nsrc/app.py"),
    ({"pattern": "hello", "glob": "*.js,*.md"}, "Found 2 files\ndocs/readme.md\nsrc/deep/x.js"),
    ({"pattern": "hello", "glob": "*.{js,md}"}, "Found 2 files\ndocs/readme.md\nsrc/deep/x.js"),
    ({"pattern": "hello", "type": "js"}, "Found 1 file\nsrc/deep/x.js"),
    ({"pattern": "hello", "path": "src/deep"}, "Found 1 file\nsrc/deep/x.js"),
    ({"pattern": "hello", "path": "src/app.py"}, "Found 1 file\nsrc/app.py"),
    (
        {"pattern": "print", "output_mode": "content", "-C": 1},
        "src/app.py-2-def main():\nsrc/app.py:3:    print('hello')\nsrc/app.py-4-    return 0",
    ),
    (
        {"pattern": "print", "output_mode": "content", "-B": 2, "path": "src/app.py"},
        "1-import os\n2-def main():\n3:    print('hello')",  # one file: no file name, as ripgrep prints it
    ),
    (
        {"pattern": "print", "output_mode": "content", "-A": 1, "context": 0},
        "src/app.py:3:    print('hello')",  # context wins over -A, like Claude Code
    ),
    (
        {"pattern": "print('hello')", "fixed_strings": True, "output_mode": "content"},
        "src/app.py:3:    print('hello')",
    ),
    (
        {"pattern": r"def main\(\):.*print", "multiline": True, "output_mode": "content"},
        "src/app.py:2:def main():\nsrc/app.py:3:    print('hello')",
    ),
    ({"pattern": r"def main\(\):.*print"}, "No files found"),  # no multiline: no match
    ({"pattern": "-hello"}, "No files found"),  # a leading dash is a pattern, not a flag
    ({"pattern": "zzz_nothing", "output_mode": "content"}, "No matches found"),
    ({"pattern": "zzz_nothing", "output_mode": "count"}, "No matches found\n\nFound 0 total occurrences across 0 files."),
    (
        {"pattern": "hello", "head_limit": 2},
        "Found 2 files limit: 2\ndocs/readme.md\nsrc/util.py\n"
        "(More results: 5 in all; call Grep again with offset=2 for the next ones.)",
    ),
    (
        {"pattern": "hello", "head_limit": 2, "offset": 4},
        "Found 1 file offset: 4\n.hidden/secret.txt",
    ),
    ({"pattern": "hello", "head_limit": 10**12}, None),  # huge: like unlimited
    ({"pattern": "hello", "head_limit": 0}, None),
    ({"pattern": "hello", "head_limit": "2", "offset": "1", "-i": "true"}, None),  # strings
]


@pytest.mark.parametrize("inp,expected", CASES, ids=[json.dumps(c[0])[:60] for c in CASES])
def test_grep_cases(s, inp, expected):
    r = s.call("Grep", inp)
    assert not r.is_error, r.text
    if expected is not None:
        assert r.text == expected
    assert "build/out.py" not in r.text and ".git/" not in r.text and "data.bin" not in r.text


def test_huge_head_limit_returns_everything(s):
    r = s.call("Grep", {"pattern": "hello", "head_limit": 10**12})
    assert r.text.startswith("Found 5 files") and r.data["nextOffset"] is None


def test_structured_output_matches_schema(s):
    r = s.call("Grep", {"pattern": "hello", "output_mode": "content", "head_limit": 3})
    d = r.data
    assert d["mode"] == "content" and d["numLines"] == 3 and d["nextOffset"] == 3
    assert d["truncated"] and d["appliedLimit"] == 3
    assert d["filenames"] == [".hidden/secret.txt", "docs/readme.md", "src/app.py"]
    Grep.Output.model_validate(d)


def test_count_output_data(s):
    d = s.call("Grep", {"pattern": "o", "output_mode": "count"}).data
    assert d["numMatches"] == sum(int(x.rsplit(":", 1)[1]) for x in d["content"].splitlines())


def test_schema_uses_claude_code_names(s):
    spec = {t["name"]: t for t in s.tool_specs()}["Grep"]
    props = spec["input_schema"]["properties"]
    for name in ("pattern", "path", "glob", "type", "output_mode", "-A", "-B", "-C", "context",
                 "-n", "-i", "head_limit", "offset", "multiline", "fixed_strings"):
        assert name in props, name
    assert spec["input_schema"]["required"] == ["pattern"]
    assert props["head_limit"] == {"type": "number", "description": props["head_limit"]["description"]}
    assert spec["read_only"] and spec["concurrency_safe"] and spec["max_result_chars"] is None


def test_offset_pages_concatenate_to_the_full_result(ws, make_session):
    # 40 files x 7 matches; pages of 13 lines must tile the full, path-sorted result.
    for i in range(40):
        (ws / f"m{i:02d}.txt").write_text("".join(f"needle {i} {j}\nfiller\n" for j in range(7)))
    s = make_session(root=ws)
    full = s.call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    want = full.text.splitlines()
    assert len(want) == 280
    got: list[str] = []
    offset = 0
    while True:
        r = s.call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 13,
                            "offset": offset})
        body = r.text.split("\n\n[Showing")[0].split("\n(More results")[0]
        got += body.splitlines()
        if r.data["nextOffset"] is None:
            break
        assert f"offset={r.data['nextOffset']}" in r.text
        offset = r.data["nextOffset"]
    assert got == want


# Content mode gives up rg's sorted run when it is slow (a loaded machine, or a sparse pattern)
# and scans in parallel, keeping up to SORT_IN_MEMORY_BYTES of rg's output to sort here: a
# result that fits is counted whole (an exact total, not "more than"). So the file has more
# matching lines than fit, and the test runs both ways: as on a quiet machine, and with the
# sorted run given up at once, as under load.
@pytest.mark.parametrize("sorted_budget", [None, 0.0], ids=["sorted-rg", "sorted-rg-given-up"])
def test_stopped_early_says_more_than(ws, make_session, monkeypatch, sorted_budget):
    if sorted_budget is not None:
        monkeypatch.setattr(grep_tool, "grep", functools.partial(grep_engine.grep, sorted_budget=sorted_budget))
    lines = grep_engine.SORT_IN_MEMORY_BYTES // len("many.txt:1:hit\n") + 1  # each output line is longer
    (ws / "many.txt").write_text("hit\n" * lines)
    s = make_session(root=ws)
    r = s.call("Grep", {"pattern": "hit", "output_mode": "content"})
    assert len(r.text.split("\n\n")[0].splitlines()) == 250
    assert "(More results: more than 250 in all" in r.text and "offset=250" in r.text
    assert r.data["totalIsLowerBound"] and r.data["nextOffset"] == 250


def test_offset_past_the_end(s):
    for mode in ("content", "files_with_matches", "count"):
        r = s.call("Grep", {"pattern": "hello", "output_mode": mode, "offset": 10**15})
        assert not r.is_error and r.text.startswith("No entries at this offset"), r.text


def test_result_capped_at_20000_chars_with_next_offset(ws, make_session):
    (ws / "wide.txt").write_text(("needle " + "x" * 300 + "\n") * 500)
    s = make_session(root=ws)
    r = s.call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    body, _, footer = r.text.partition("\n(More results")
    assert len(body) <= 20_000
    assert "capped at 20,000 characters" in footer
    n = len(body.splitlines())
    assert r.data["nextOffset"] == n and f"offset={n}" in footer
    nxt = s.call("Grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0,
                          "offset": n})
    assert nxt.text.splitlines()[0].startswith(f"wide.txt:{n + 1}:needle")


def test_long_lines_are_clipped_with_a_marker(ws, make_session):
    (ws / "min.js").write_text("var a=1;" * 2000 + "needle" + ";" * 100 + "\n")
    s = make_session(root=ws)
    r = s.call("Grep", {"pattern": "needle", "output_mode": "content"})
    assert r.text == "min.js:1:[Omitted long matching line]"  # ripgrep's own marker, as Claude Code shows it


def test_fifty_megabyte_single_line(ws, make_session):
    with (ws / "huge.txt").open("wb") as f:
        f.write(b"a" * 25_000_000 + b" needle " + b"b" * 25_000_000)
    s = make_session(root=ws)
    r = s.call("Grep", {"pattern": "needle", "output_mode": "content"})
    assert not r.is_error and r.text == "huge.txt:1:[Omitted long matching line]"
    assert s.call("Grep", {"pattern": "needle"}).text == "Found 1 file\nhuge.txt"
    assert s.call("Grep", {"pattern": "needle", "output_mode": "count"}).text.startswith(
        "huge.txt:1\n"
    )


def test_read_deny_rules_hide_files_in_every_mode(project, make_session):
    s = make_session(root=project,
                     settings={"permissions": {"deny": ["Read(./src/util.py)", "Read(docs/**)"]}})
    for mode in ("files_with_matches", "content", "count"):
        r = s.call("Grep", {"pattern": "hello", "output_mode": mode})
        assert not r.is_error, r.text
        assert "util.py" not in r.text and "readme" not in r.text, r.text
        assert "src/app.py" in r.text
        # not even that a denied file matched: that would answer questions about its content
        assert "Read deny" not in r.text and "Permission denied" not in r.text, r.text
    r = s.call("Grep", {"pattern": "hello", "path": "src/util.py"})
    assert r.is_error and "denied" in r.text.lower()


def test_a_denied_file_is_no_oracle(project, make_session):
    """Whether a pattern matches inside a Read-denied file must not show: the same answer for
    the secret and for a string that is nowhere (else the secret is guessed a character at a time)."""
    (project / "creds.env").write_text("API_KEY=sk-3f9a2\n")
    s = make_session(root=project, settings={"permissions": {"deny": ["Read(./creds.env)"]}})
    for mode in ("files_with_matches", "content", "count"):
        hit = s.call("Grep", {"pattern": "API_KEY=sk-3", "output_mode": mode})
        miss = s.call("Grep", {"pattern": "API_KEY=zz-9", "output_mode": mode})
        strip = (lambda r: {k: v for k, v in (r.data or {}).items() if k != "durationMs"})
        assert hit.text == miss.text and strip(hit) == strip(miss), (hit.text, miss.text)


def test_outside_the_workspace_asks(project, tmp_path, make_session):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "o.txt").write_text("hello outside\n")
    s = make_session(root=project)
    r = s.call("Grep", {"pattern": "hello", "path": str(outside)})
    assert r.is_error and "outside the workspace" in r.text
    asked = []
    s2 = make_session(root=project, approver=lambda req: asked.append(req) or True)
    r = s2.call("Grep", {"pattern": "hello", "path": str(outside), "output_mode": "content"})
    assert not r.is_error and asked
    assert r.text == f"{outside}/o.txt:1:hello outside"


def test_symlinks_out_of_the_workspace_are_not_followed(project, tmp_path, make_session):
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.txt").write_text("hello secret\n")
    (project / "link").symlink_to(outside)
    s = make_session(root=project)
    assert "key.txt" not in s.call("Grep", {"pattern": "hello"}).text
    r = s.call("Grep", {"pattern": "hello", "path": "link"})
    assert r.is_error and "outside the workspace" in r.text


def test_results_dir_is_searchable_without_asking(project, make_session):
    s = make_session(root=project)
    (Path(s.results_dir) / "r1.txt").write_text("hello evicted\n")
    r = s.call("Grep", {"pattern": "hello", "path": str(s.results_dir), "output_mode": "content"})
    assert not r.is_error and r.text.endswith("r1.txt:1:hello evicted")


def test_binary_file_given_explicitly(s):
    r = s.call("Grep", {"pattern": "hello", "path": "data.bin", "output_mode": "content"})
    assert not r.is_error
    assert "binary file matches" in r.text


def test_non_utf8_file_names_and_contents(ws, make_session):
    name = os.fsencode(str(ws)) + b"/caf\xe9.txt"
    fd = os.open(name, os.O_CREAT | os.O_WRONLY)
    os.write(fd, b"needle \xff\xfe latin\n")
    os.close(fd)
    (ws / "co:lon name.txt").write_text("needle\n")
    s = make_session(root=ws)
    files = s.call("Grep", {"pattern": "needle"})
    assert not files.is_error and "caf\\xe9.txt" in files.text and "co:lon name.txt" in files.text
    content = s.call("Grep", {"pattern": "needle", "output_mode": "content"})
    assert "caf\\xe9.txt:1:needle \ufffd\ufffd latin" in content.text
    assert "co:lon name.txt:1:needle" in content.text
    json.dumps(content.data)  # valid text all the way down
    count = s.call("Grep", {"pattern": "needle", "output_mode": "count"})
    assert "Found 2 total occurrences across 2 files." in count.text


def test_symlink_loops_do_not_hang(ws, make_session):
    (ws / "a.txt").write_text("needle\n")
    (ws / "loop").symlink_to(ws)
    (ws / "x").symlink_to(ws / "y")
    (ws / "y").symlink_to(ws / "x")
    s = make_session(root=ws)
    assert s.call("Grep", {"pattern": "needle"}).text == "Found 1 file\na.txt"
    r = s.call("Grep", {"pattern": "needle", "path": "x"})
    assert r.is_error and "does not exist" in r.text


def test_timeout_is_an_error_not_no_matches(ws, make_session, tmp_path):
    slow = tmp_path / "slow-rg"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")  # exec: rg may start no process
    slow.chmod(0o755)
    s = make_session(root=ws, settings={"search": {"ripgrepPath": str(slow)},
                                        "grep": {"timeoutMs": 300}})
    r = s.call("Grep", {"pattern": "x"})
    assert r.is_error and "timed out" in r.text and "Narrow the search" in r.text
    assert "No files found" not in r.text


def test_missing_ripgrep_is_a_clear_error(ws, make_session):
    s = make_session(root=ws, settings={"search": {"ripgrepPath": "/nonexistent/rg"}})
    r = s.call("Grep", {"pattern": "x"})
    assert r.is_error and "search.ripgrepPath" in r.text


def test_ignored_files_can_be_included_by_setting(project, make_session):
    s = make_session(root=project, settings={"grep": {"includeIgnored": True}})
    assert "build/out.py" in s.call("Grep", {"pattern": "hello"}).text


def test_cancel_event_ends_the_search(ws, make_session, tmp_path):
    import threading

    slow = tmp_path / "slow-rg"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")  # exec: rg may start no process
    slow.chmod(0o755)
    s = make_session(root=ws, settings={"search": {"ripgrepPath": str(slow)}})
    ev = threading.Event()
    threading.Timer(0.2, ev.set).start()
    r = s.call("Grep", {"pattern": "x"}, cancel_event=ev)
    assert r.is_error and "cancelled" in r.text


async def test_parallel_batch_of_searches(s):
    calls = [
        ("Grep", {"pattern": "hello"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("Grep", {"pattern": "hello", "output_mode": "count"}),
        ("Glob", {"pattern": "*.md"}),
        ("Grep", {"pattern": "("}),
    ]
    results = await s.call_many(calls)
    assert [r.is_error for r in results] == [False, False, False, False, True]
    assert results[0].text.startswith("Found 5 files")
    assert results[1].data["filenames"] == ["src/app.py", "src/util.py"]  # oldest first
    assert results[3].data["filenames"] == ["docs/readme.md"]
    for (name, inp), r in zip(calls, results):
        assert r.text == s.call(name, inp).text  # same answer as one at a time
