"""apply_patch invocations in Bash run in-process under Edit permissions, never in a shell."""

from __future__ import annotations

import pytest


def _patch(path: str, line: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+{line}\n*** End Patch"


def _heredoc(path: str, line: str) -> str:
    return f"apply_patch <<'EOF'\n{_patch(path, line)}\nEOF"


@pytest.mark.parametrize("command, created", [
    (_heredoc("hello.txt", "hi"), "hello.txt"),
    (f"cd sub && {_heredoc('in_sub.txt', 'x')}", "sub/in_sub.txt"),
    (f'bash -lc "{_heredoc("wrapped.txt", "w")}"', "wrapped.txt"),
    (f"apply_patch '{_patch('quoted.txt', 'q')}'", "quoted.txt"),
])
def test_intercepted_under_edit_rules(shell, command, created):
    # acceptEdits allows writes inside the workspace but would ask (→ deny, no approver) for a
    # non-read-only shell command: success proves the call was judged as an edit.
    (shell.ws / "sub").mkdir()
    s = shell.session(mode="acceptEdits", approver=None)
    r = s.call("Bash", {"command": command})
    assert not r.is_error, r.text
    assert (shell.ws / created).is_file()


def test_deny_rule_on_the_patched_path_applies(shell):
    s = shell.session(mode="acceptEdits", approver=None,
                      settings={"permissions": {"deny": ["Edit(secret.txt)"]}})
    r = s.call("Bash", {"command": _heredoc("secret.txt", "s")})
    assert r.is_error and "denied" in r.text.lower()
    assert not (shell.ws / "secret.txt").exists()


def test_patch_base_is_the_persisted_cwd(shell):
    s = shell.session()
    s.call("Bash", {"command": "mkdir -p deep && cd deep"})
    r = s.call("Bash", {"command": _heredoc("here.txt", "h")})
    assert not r.is_error, r.text
    assert (shell.ws / "deep" / "here.txt").is_file()


def test_not_an_invocation_runs_in_the_shell(shell):
    s = shell.session()
    r = s.call("Bash", {"command": f"echo before; {_heredoc('no.txt', 'n')}"})
    assert "apply_patch: command not found" in r.text or r.data["exitCode"] != 0
    assert not (shell.ws / "no.txt").exists()
