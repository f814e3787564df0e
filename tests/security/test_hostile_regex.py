"""Regexes from a model or a repository run in codebelt's own process: a BashOutput `filter`, a
hook `matcher`, a permission rule's command pattern. A backtracking engine hangs on the patterns
below (minutes to years); every site must answer at once. pytest-timeout is the guard: no timing
assertions, a hang fails the test."""

from __future__ import annotations

import re
import sys
import time

import pytest

from codebelt import linear_regex
from codebelt.errors import RegexError
from codebelt.hooks.config import matcher_matches

# (pattern, a text, whether it matches): each takes a backtracking engine exponential or
# high-polynomial time on this text.
HOSTILE = [
    (r"(a+)+$", "a" * 100_000 + "!", False),
    (r"(a|a)*b", "a" * 100_000, False),
    (r"(a*)*b", "a" * 100_000, False),
    (r"(a|aa)+$", "a" * 100_000 + "!", False),
    (r"(\w+\s?)+$", "word " * 20_000 + "!", False),
    (r"(.*a){20}", "a" * 100_000, True),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 100_000 + "!", False),
    (r".*.*.*.*.*.*.*.*.*.*=", "x" * 100_000, False),
    (r"(x+x+)+y", "x" * 100_000, False),
    (r"(?i)(error|e.ror|er.or)+!", "error" * 20_000, False),
    (r"a{0,1000}a{0,1000}b", "a" * 100_000, False),
    (r"(a+)+$", "a" * 100_000, True),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("pattern,text,matches", HOSTILE, ids=[p for p, _, _ in HOSTILE])
def test_hostile_patterns_run_in_linear_time(pattern, text, matches):
    compiled = linear_regex.compile(pattern)
    assert (compiled.search(text) is not None) is matches
    blob = "\n".join([text, "b", text]).encode()
    assert len(compiled.matching_lines(blob)) == (2 if matches else 0) + (1 if compiled.search("b") else 0)


@pytest.mark.parametrize("pattern,what", [
    (r"(a)\1", "backreference"),
    (r"(?P<x>a)(?P=x)", "named backreference"),
    (r"a(?=b)", "lookahead"),
    (r"a(?!b)", "negative lookahead"),
    (r"(?<=a)b", "lookbehind"),
    (r"(?<!a)b", "negative lookbehind"),
    (r"(?>a+)b", "atomic group"),
    (r"a++b", "possessive"),
    (r"(a)?(?(1)b|c)", "conditional"),
    (r"(?x) a b", "verbose"),
    (r"a{1000}{1000}", "multiple repeat"),
    (r"(?:a{1000}){1000}", "more than 1000 times"),
    (r"a{5000}", "more than 1000 times"),
    (r"(?:(?:a{30}){30}){30}", "more than 1000 times"),
    (r"[", "unterminated character set"),
    (r"(unclosed", "missing )"),
])
def test_what_cannot_run_is_refused_with_a_reason(pattern, what):
    with pytest.raises(RegexError) as info:
        linear_regex.compile(pattern)
    assert what in str(info.value)


@pytest.mark.timeout(30)
def test_a_program_over_the_memory_budget_is_refused():
    with pytest.raises(RegexError, match="too large"):
        linear_regex.compile(r"(?:\w{100}\s{10}){10}")  # Unicode classes, 1,000 times: ~30 MB
    assert linear_regex.compile(r"\w{500}").search("é" * 500)  # within the budget


# Python's meaning is kept where RE2's syntax reads the same text differently.
SAME_AS_PYTHON = [
    (r"\d+ passed", ["12 passed", "١٢ passed", "x passed"]),
    (r"^\w+$", ["héllo", "naïve_1", "a-b", "日本"]),
    (r"\s", ["a\u00a0b", "a\u2003b", "a\x1cb", "ab", "a\vb"]),
    (r"^\S+$", ["abc", "a b", "a\u3000b"]),
    (r"[\w-]+", ["--", "é-é", " "]),
    (r"[^\d]", ["123", "12a"]),
    (r"\D", ["٣", "x"]),
    (r"\W", ["abc", "a!"]),
    (r"x{,3}y", ["xxy", "xxxxy", "x{,3}y", "y"]),
    (r"[[:alpha:]]", [":]", "b", "[]"]),
    (r"end\Z", ["the end", "end of"]),
    (r"\u00e9|\N{BULLET}|\x41", ["é", "•", "A", "e"]),
    (r"\101\0", ["A\0", "A"]),
    (r"(?i)ERROR", ["an error", "Error!", "err"]),
    (r"(?s)a.b", ["a\nb", "ab"]),
    (r"(?m)^b", ["a\nb", "ab"]),
    (r"(?a)\w+$", ["abc", "é"]),
    (r"(?#a comment)x", ["x", "y"]),
    (r"[\b]", ["\b", "b"]),
    (r"(?P<word>\w+)\s(?P<n>\d+)", ["count 3", "count x"]),
    (r"a|b|", ["", "c"]),
    (r"\bword\b", ["a word here", "swordfish"]),
    (r"^$", ["", "x"]),
]


@pytest.mark.parametrize("pattern,texts", SAME_AS_PYTHON, ids=[p for p, _ in SAME_AS_PYTHON])
def test_python_meaning_is_kept(pattern, texts):
    mine = linear_regex.compile(pattern)
    theirs = re.compile(pattern)
    for text in texts:
        assert (mine.search(text) is not None) == (theirs.search(text) is not None), (pattern, text)
        if mine.search(text) is not None:
            assert mine.search(text).group(0) == theirs.search(text).group(0), (pattern, text)
    blob = "\n".join(texts).encode()
    lines = blob.split(b"\n")
    want = [i for i, line in enumerate(lines) if theirs.search(line.decode())]
    spans = mine.matching_lines(blob)
    got = [blob[:a].count(b"\n") for a, _ in spans]
    if "\\Z" not in pattern and "(?s)" not in pattern and "(?m)" not in pattern:
        assert got == want, (pattern, texts)


def test_flags_and_surrogates():
    assert linear_regex.compile("abc", re.IGNORECASE).search("xABCx")
    assert linear_regex.compile("a.c", re.DOTALL).fullmatch("a\nc")
    assert linear_regex.compile(".*").fullmatch("a\udc80b")  # a lone surrogate from JSON is no error


# -- the sites ---------------------------------------------------------------------------------

def _filtered_output(s, tid: str, pattern: str) -> list[str]:
    """Every line the filter kept, over as many reads as the task takes to end."""
    got: list[str] = []
    deadline = time.monotonic() + 30
    while True:
        r = s.call("BashOutput", {"bash_id": tid, "filter": pattern})
        assert not r.is_error, r.text
        got += [line for line in r.data["stdout"].split("\n") if line]
        if r.data["status"] != "running":
            r = s.call("BashOutput", {"bash_id": tid, "filter": pattern})
            return got + [line for line in r.data["stdout"].split("\n") if line]
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.timeout(90)
def test_bash_output_filter_cannot_hang_the_server(ws, make_session):
    s = make_session(mode="bypassPermissions", sandbox="off")
    (ws / "gen.py").write_text(
        "import sys\n"
        "w = sys.stdout.write\n"
        "w('a' * 200000 + '!\\n')\n"
        "w('x' * 3000000 + '\\n')\n"  # a line over the 1 MB line cap
        "w(('a' * 40 + '!\\n') * 20000)\n"
        "w('aaaa\\n')\n")
    tid = s.call("Bash", {"command": f"{sys.executable} gen.py", "run_in_background": True}).data["backgroundTaskId"]
    assert _filtered_output(s, tid, r"(a+)+$") == ["aaaa"]


@pytest.mark.timeout(60)
def test_filter_finds_the_lines_python_would(ws, make_session):
    s = make_session(mode="bypassPermissions", sandbox="off")
    lines = ["ok 1", "ERROR: disk", "warn: slow", "a" * 60 + "!", "aaaa", "x" * 2_000_000 + " error at the end", "done"]
    (ws / "out.txt").write_text("\n".join(lines) + "\n")
    tid = s.call("Bash", {"command": "cat out.txt", "run_in_background": True}).data["backgroundTaskId"]
    # The 2 MB line is judged by its first 1 MB, which holds no "error": it is left out.
    assert _filtered_output(s, tid, r"(?i)error|(a+)+$") == ["ERROR: disk", "aaaa"]


@pytest.mark.timeout(30)
def test_hook_matchers_cannot_hang():
    assert matcher_matches(r"(a+)+$", "a" * 100 + "!") is False
    assert matcher_matches(r"(a+)+$", "a" * 100) is True
    assert matcher_matches(r"^mcp__.*__write$", "mcp__files__write") is True


def test_hook_matchers_that_cannot_run_are_refused_when_settings_load(ws, make_session):
    from codebelt.errors import SettingsError

    hooks = {"PreToolUse": [{"matcher": "Bash(?=x)", "hooks": [{"type": "command", "command": "true"}]}]}
    with pytest.raises(SettingsError, match="lookahead"):
        make_session(settings={"hooks": hooks})


@pytest.mark.timeout(60)
@pytest.mark.parametrize("behavior", ["deny", "ask", "allow"])
def test_permission_rules_with_many_wildcards_cannot_hang(ws, make_session, behavior):
    # A repository may add deny and ask rules; each `*` was a `.*` for a backtracking engine, and
    # 14 of them against a 9,000-character command is O(n^14).
    program = "mkdir" if behavior == "allow" else "echo"
    rule = f"Bash({program} " + "*a" * 14 + "*b)"
    s = make_session(settings={"permissions": {behavior: [rule]}}, sandbox="off")
    long_a = "a" * 9_000  # commands over 10,000 characters always ask
    matched = s.call("Bash", {"command": f"{program} {long_a}b"})
    unmatched = s.call("Bash", {"command": f"{program} {long_a}"})
    if behavior == "allow":
        assert "Permission to use Bash" not in matched.text  # allowed: mkdir itself complains
        assert "Permission to use Bash was denied" in unmatched.text
    else:
        assert matched.is_error and rule in matched.text, matched.text[:300]
        assert not unmatched.is_error and unmatched.text.startswith(long_a[:100])
