"""Bash through Session.call: one table of commands and what their results must hold."""

from __future__ import annotations

import pytest

# (id, input, bash settings, substrings the text must contain, data fields that must match, is_error)
CASES = [
    ("interleaved", {"command": "echo a; echo b >&2; echo c; echo d >&2"}, {},
     ["a\nb\nc\nd"], {"exitCode": 0, "stdout": "a\nb\nc\nd", "timedOut": False}, False),
    ("exit-code", {"command": "echo out; exit 3"}, {},
     ["out", "Exit code 3"], {"exitCode": 3, "interrupted": False}, False),
    ("signal-exit-code", {"command": "kill -9 $$"}, {},
     ["Exit code 137"], {"exitCode": 137}, False),
    ("no-output", {"command": "true"}, {}, ["(no output)"], {"stdout": "", "exitCode": 0}, False),
    ("stdin-is-closed", {"command": "cat; read -r x; echo \"read rc=$?\""}, {},
     ["read rc=1"], {"exitCode": 0}, False),
    ("invalid-utf8", {"command": r"printf 'ok \xff\xfe\xfd end\n'"}, {},
     ["ok \ufffd\ufffd\ufffd end"], {"exitCode": 0}, False),
    ("binary-garbage", {"command": "head -c 5000 /dev/urandom; echo; echo END"}, {},
     ["END"], {"exitCode": 0}, False),
    ("tmpdir-is-session-temp", {"command": "case \"$TMPDIR\" in */tmp) echo tmp-ok;; esac; touch \"$TMPDIR/x\" && echo writable"}, {},
     ["tmp-ok", "writable"], {"exitCode": 0}, False),
    ("timeout", {"command": "echo before; sleep 30", "timeout": 300}, {},
     ["before", "timed out after 0.3s"], {"timedOut": True, "exitCode": 143}, True),
    ("timeout-term-ignored", {"command": "trap '' TERM; echo stubborn; while :; do sleep 0.05; done", "timeout": 300}, {},
     ["stubborn", "timed out"], {"timedOut": True, "exitCode": 137}, True),
    ("timeout-default-setting", {"command": "sleep 30"}, {"defaultTimeoutMs": 200},
     ["timed out after 0.2s"], {"timedOut": True}, True),
    ("timeout-above-max", {"command": "true", "timeout": 600_001}, {},
     ["above the maximum of 600000 ms"], {}, True),
    ("timeout-above-configured-max", {"command": "true", "timeout": 5000}, {"maxTimeoutMs": 1000},
     ["above the maximum of 1000 ms"], {}, True),
    ("timeout-zero", {"command": "true", "timeout": 0}, {}, ["positive number"], {}, True),
    ("timeout-as-string", {"command": "echo fine", "timeout": "5000"}, {}, ["fine"], {"exitCode": 0}, False),
    ("nul-in-command", {"command": "echo a\x00b"}, {}, ["NUL byte"], {}, True),
    ("lone-surrogate", {"command": "echo \ud800x"}, {}, ["unpaired UTF-16 surrogate"], {}, True),
    ("escaped-surrogate", {"command": "echo '\udcff'"}, {}, ["unpaired UTF-16 surrogate"], {}, True),
    ("empty-command", {"command": "   "}, {}, ["command is empty"], {}, True),
    ("syntax-error", {"command": "if then fi"}, {}, ["syntax error", "Exit code 2"], {"exitCode": 2}, False),
    ("output-limit", {"command": "yes"}, {"maxOutputBytes": 2_000_000},
     ["output exceeded the per-command output limit", "Tool result too large"], {"truncated": True}, False),
    ("large-output-evicted", {"command": "seq 1 200000"}, {},
     ["Tool result too large", "Read it with Read using offset and limit, or search it with Grep",
      "--- first lines ---\n1\n2\n", "200000", "lines omitted"], {"truncated": True, "exitCode": 0}, False),
    ("one-huge-line", {"command": "head -c 300000 /dev/zero | tr '\\0' x"}, {},
     ["Tool result too large (300,000 bytes, 1 lines)"], {"truncated": True}, False),
    ("just-under-inline-limit", {"command": "head -c 27000 /dev/zero | tr '\\0' y"}, {},
     ["yyyy"], {"truncated": False}, False),
    ("extra-field-refused", {"command": "true", "bogus": 1}, {}, ["bogus"], {}, True),
]


# A bad setting is refused when the session starts, naming the key (not at the first command).
BAD_SETTINGS = [
    ("bad-env-policy-setting", {"env": "weird"}, "bash.env must be 'inherit' or 'clean'"),
    ("bad-timeout-setting", {"defaultTimeoutMs": "soon"}, "bash.defaultTimeoutMs must be"),
]


@pytest.mark.parametrize("case", BAD_SETTINGS, ids=[c[0] for c in BAD_SETTINGS])
def test_bad_bash_setting(shell, case):
    from codebelt.errors import SettingsError

    _, bash_settings, substring = case
    with pytest.raises(SettingsError) as e:
        shell.session(bash=bash_settings)
    assert substring in str(e.value)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bash_case(shell, case):
    _, inp, bash_settings, substrings, fields, is_error = case
    s = shell.session(bash=bash_settings)
    r = s.call("Bash", inp)
    assert r.is_error is is_error, r.text
    for sub in substrings:
        assert sub in r.text, (sub, r.text[:2000])
    for key, value in fields.items():
        assert r.data is not None and r.data.get(key) == value, (key, r.data)
    assert len(r.text) <= 30_000
    if r.data and r.data.get("truncated"):
        from pathlib import Path

        path = Path(r.data["outputPath"])
        assert path.is_file() and path.stat().st_size == r.data["outputBytes"]
        assert str(path) in r.text
