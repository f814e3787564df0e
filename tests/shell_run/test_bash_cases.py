"""Bash through Session.call: one table of commands and what their results must hold."""

from __future__ import annotations

import pytest

# (id, input, bash settings, substrings the text must contain, data fields that must match, is_error)
CASES = [
    ("interleaved", {"command": "echo a; echo b >&2; echo c; echo d >&2"}, {},
     ["a\nb\nc\nd"], {"exitCode": 0, "stdout": "a\nb\nc\nd", "timedOut": False}, False),
    ("exit-code", {"command": "echo out; exit 3"}, {},
     ["Exit code 3\nout"], {"exitCode": 3, "interrupted": False}, True),
    ("signal-exit-code", {"command": "kill -9 $$"}, {},
     ["Exit code 137"], {"exitCode": 137}, True),
    ("no-output", {"command": "true"}, {}, ["(Bash completed with no output)"], {"stdout": "", "exitCode": 0}, False),
    ("stdin-is-closed", {"command": "cat; read -r x; echo \"read rc=$?\""}, {},
     ["read rc=1"], {"exitCode": 0}, False),
    ("invalid-utf8", {"command": r"printf 'ok \xff\xfe\xfd end\n'"}, {},
     ["ok \ufffd\ufffd\ufffd end"], {"exitCode": 0}, False),
    ("binary-garbage", {"command": "head -c 5000 /dev/urandom; echo; echo END"}, {},
     ["END"], {"exitCode": 0}, False),
    ("tmpdir-is-session-temp", {"command": "case \"$TMPDIR\" in */tmp) echo tmp-ok;; esac; touch \"$TMPDIR/x\" && echo writable"}, {},
     ["tmp-ok", "writable"], {"exitCode": 0}, False),
    # As Claude Code: at its timeout a command moves to the background, with its output so far
    ("timeout", {"command": "echo before; sleep 30", "timeout": 1000}, {},
     ["before\nCommand did not complete within its 1s timeout and was moved to the background (ID: bash_1)",
      "stop it with TaskStop"], {"backgroundTaskId": "bash_1"}, False),
    ("timeout-term-ignored", {"command": "trap '' TERM; echo stubborn; while :; do sleep 0.05; done", "timeout": 1000}, {},
     ["stubborn\nCommand did not complete"], {"backgroundTaskId": "bash_1"}, False),
    ("timeout-default-setting", {"command": "sleep 30"}, {"defaultTimeoutMs": 2000},
     ["within its 2s timeout", "No output had been read from it when it was moved."], {}, False),
    # an unusable timeout is the default; one above the maximum, the maximum (as Claude Code)
    ("timeout-above-max", {"command": "true", "timeout": 600_001}, {},
     ["(Bash completed with no output)"], {}, False),
    ("timeout-above-configured-max", {"command": "true", "timeout": 5000}, {"maxTimeoutMs": 1000},
     ["(Bash completed with no output)"], {}, False),
    ("timeout-zero", {"command": "true", "timeout": 0}, {}, ["(Bash completed with no output)"], {}, False),
    ("timeout-as-string", {"command": "echo fine", "timeout": "5000"}, {}, ["fine"], {"exitCode": 0}, False),
    ("nul-in-command", {"command": "echo a\x00b"}, {}, ["NUL byte"], {}, True),
    ("lone-surrogate", {"command": "echo \ud800x"}, {}, ["unpaired UTF-16 surrogate"], {}, True),
    ("escaped-surrogate", {"command": "echo '\udcff'"}, {}, ["unpaired UTF-16 surrogate"], {}, True),
    ("empty-command", {"command": "   "}, {}, ["(Bash completed with no output)"], {}, False),
    ("syntax-error", {"command": "if then fi"}, {}, ["syntax error", "Exit code 2"], {"exitCode": 2}, True),
    ("output-limit", {"command": "yes"}, {"maxOutputBytes": 2_000_000},
     ["output exceeded the per-command output limit", "<persisted-output>\nOutput too large ("], {"truncated": True}, True),
    ("large-output-saved", {"command": "seq 1 200000"}, {},
     ["<persisted-output>\nOutput too large (1.2MB). Full output saved to: ", "\n\nPreview (first 2KB):\n1\n2\n",
      "\n...\n</persisted-output>"], {"truncated": True, "exitCode": 0}, False),
    ("one-huge-line", {"command": "head -c 300000 /dev/zero | tr '\\0' x"}, {},
     ["Output too large (293.0KB)"], {"truncated": True}, False),
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
