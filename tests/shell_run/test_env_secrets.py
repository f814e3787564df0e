"""Secrets in codebelt's own environment never reach a command's output: the names and values
that look secret (shell/execution/environment.py), `bash.envAllow`, and the effect through real
sessions — every way a command can print its environment, jailed or not, in the foreground and
the background, and `/proc` of codebelt's own process from a sandboxed command."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from codebelt.shell.execution.environment import (
    removed_variables, scrubbed_environ, secret_reason, secret_references)
from codebelt.shell.execution.runner import build_env

# (name, value, why it is removed: "name", "value", or None when it is passed on)
VARIABLES = [
    ("OPENAI_API_KEY", "x", "name"), ("ANTHROPIC_API_KEY", "x", "name"), ("GITHUB_TOKEN", "x", "name"),
    ("GH_TOKEN", "x", "name"), ("CODEBELT_TOKEN", "x", "name"), ("AWS_ACCESS_KEY_ID", "x", "name"),
    ("AWS_SECRET_ACCESS_KEY", "x", "name"), ("AWS_SESSION_TOKEN", "x", "name"),
    ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.170.2/x", "name"),
    ("AZURE_CLIENT_SECRET", "x", "name"), ("GOOGLE_APPLICATION_CREDENTIALS", "/k.json", "name"),
    ("PGPASSWORD", "x", "name"), ("MYSQL_PWD", "x", "name"), ("DB_PASS", "x", "name"), ("SMTP_PASSWD", "x", "name"),
    ("GPG_PASSPHRASE", "x", "name"), ("SSH_PRIVATE_KEY", "x", "name"), ("SLACK_WEBHOOK_URL", "https://h/x", "name"),
    ("SENTRY_DSN", "https://k@h/1", "name"), ("BW_SESSION", "x", "name"), ("OP_SESSION_my", "x", "name"),
    ("CI_JOB_JWT", "x", "name"), ("HTTP_AUTHORIZATION", "Bearer x", "name"), ("NPM_CONFIG__AUTH", "x", "name"),
    ("npm_config_//registry.npmjs.org/:_authToken", "x", "name"), ("SSH_AUTH_SOCK", "/run/a.sock", "name"),
    ("OAUTH_CLIENT_ID", "x", "name"), ("SESSION_COOKIE", "x", "name"), ("KRB5CCNAME", "FILE:/tmp/k", "name"),
    ("TOKENIZERS_PARALLELISM", "false", "name"),  # a false positive, on purpose: the rule is simple
    ("DATABASE_URL", "postgres://app:hunter2@db/x", "value"), ("REDIS_URL", "redis://:pw@cache:6379", "value"),
    ("HTTPS_PROXY", "http://me:pw@proxy:3128", "value"),
    ("AZ_STORAGE", "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==", "value"),
    ("MSSQL", "Server=x;User Id=u;Password=p;", "value"),
    ("MY_GH", "ghp_" + "a1" * 18, "value"), ("MY_OPENAI", "sk-" + "b2" * 12, "value"),
    ("DEPLOY_ID", "AKIA" + "ABCDEFGHIJKLMNOP", "value"), ("PEM", "-----BEGIN OPENSSH PRIVATE KEY-----\nx", "value"),
    ("JWT_LIKE", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "name"),
    ("ID_TOKENISH", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "name"),
    ("BEARER", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "value"),
    # passed on: what builds need, and look-alikes
    ("PATH", "/usr/bin", None), ("HOME", "/root", None), ("PWD", "/w", None), ("OLDPWD", "/", None),
    ("LANG", "C.UTF-8", None), ("TERM", "xterm", None), ("GIT_AUTHOR_NAME", "n", None),
    ("GIT_AUTHOR_EMAIL", "a@b", None), ("GIT_CONFIG_KEY_0", "http.extraHeader", None),
    ("GIT_CONFIG_VALUE_0", "Authorization: Bearer ghp_" + "c3" * 18, "value"), ("GIT_CONFIG_KEY_X", "k", "name"), ("XAUTHORITY", "/run/x", None), ("AWS_REGION", "eu-west-1", None),
    ("AWS_PROFILE", "dev", None), ("AZURE_TENANT_ID", "t", None), ("COMPASS_HOME", "/c", None),
    ("BYPASS_CACHE", "1", None), ("HTTP_PROXY", "http://proxy:3128", None), ("DATABASE_URL", "postgres://db/x", None),
    ("SSL_CERT_FILE", "/etc/ssl/cert.pem", None), ("VIRTUAL_ENV", "/v", None), ("CI", "true", None),
]


@pytest.mark.parametrize("name,value,why", VARIABLES, ids=[f"{n}={v[:12]}" for n, v, _ in VARIABLES])
def test_what_looks_secret(name, value, why):
    assert secret_reason(name, value) == why


# (policy, envAllow, variables kept out of {PATH, HOME, GH_TOKEN, MY_APP_TOKEN, MY_APP_HOST, DATABASE_URL})
ALLOW = [
    ("inherit", [], {"GH_TOKEN", "MY_APP_TOKEN", "DATABASE_URL"}),
    ("inherit", ["GH_TOKEN"], {"MY_APP_TOKEN", "DATABASE_URL"}),  # an exact name passes one on
    ("inherit", ["MY_APP_*"], {"GH_TOKEN", "DATABASE_URL"}),  # a glob
    ("inherit", ["DATABASE_URL"], {"GH_TOKEN", "MY_APP_TOKEN"}),  # a value-detected one
    ("inherit", ["gh_token"], {"GH_TOKEN", "MY_APP_TOKEN", "DATABASE_URL"}),  # names are case-sensitive
    ("inherit", ["*"], set()),  # everything: scrubbing off
    ("clean", [], {"GH_TOKEN", "MY_APP_TOKEN", "MY_APP_HOST", "DATABASE_URL"}),
    ("clean", ["MY_APP_*"], {"GH_TOKEN", "DATABASE_URL"}),  # under clean, envAllow also keeps
    ("clean", ["GH_TOKEN", "MY_APP_HOST"], {"MY_APP_TOKEN", "DATABASE_URL"}),
]
BASE = {"PATH": "/bin", "HOME": "/h", "GH_TOKEN": "t", "MY_APP_TOKEN": "t", "MY_APP_HOST": "h",
        "DATABASE_URL": "postgres://u:p@h/d"}


@pytest.mark.parametrize("policy,allow,removed", ALLOW)
def test_env_policy_and_env_allow(policy, allow, removed, tmp_path):
    env = build_env(policy, allow, tmp_path, "m.1", base=BASE)
    assert set(BASE) - set(env) == removed
    assert env["TMPDIR"] == str(tmp_path) and env["CODEBELT_SHELL_ID"] == "m.1"
    if policy == "inherit":
        assert set(removed_variables(BASE, allow)) == removed  # what `codebelt config` lists
        assert scrubbed_environ(BASE, allow) == {k: v for k, v in BASE.items() if k not in removed}


def test_references_are_judged_by_their_text_alone():
    assert secret_references('echo "$OPENAI_API_KEY" ${GH_TOKEN:-none}; printenv AWS_SESSION_TOKEN') == [
        "OPENAI_API_KEY", "GH_TOKEN", "AWS_SESSION_TOKEN"]
    assert secret_references("echo $HOME $PATH $PWD") == []
    assert secret_references("MY_TOKEN=1; echo $MY_TOKEN") == []  # set by the command itself
    assert secret_references("export MY_TOKEN=1 && echo $MY_TOKEN") == []
    assert secret_references("echo $GH_TOKEN", allow=["GH_*"]) == []
    # whether such a variable exists in codebelt's environment changes nothing
    assert secret_references("echo $NOWHERE_SET_TOKEN_QQ") == ["NOWHERE_SET_TOKEN_QQ"]


# Every way a command can show its environment (and one that is not read-only, which the
# approver lets run).
DUMPS = [
    "printenv",
    "env",
    "printenv OPENAI_API_KEY; printenv DATABASE_URL; echo \"[$OPENAI_API_KEY][$CB_TOKEN_SECRET]\"",
    "cat /proc/self/environ",
    "tr '\\0' '\\n' < /proc/self/environ",
    "bash -c 'declare -x'",
    "export -p",
    "set",
    "python3 -c 'import os; print(dict(os.environ))'",
    "cat /proc/$$/environ; cat /proc/$PPID/environ",
    "for p in /proc/[0-9]*/environ; do cat \"$p\"; done 2>/dev/null",
]

SANDBOXES = {
    "unsandboxed, no jail": {"sandbox": {"mode": "off", "jail": False}},
    "unsandboxed, jailed when read-only": {"sandbox": {"mode": "off"}},
    "bwrap": {"sandbox": {"mode": "bwrap"}},
    "landlock": {"sandbox": {"mode": "landlock"}},
}


@pytest.fixture
def secrets(monkeypatch) -> dict[str, str]:
    tag = uuid.uuid4().hex
    values = {
        "OPENAI_API_KEY": f"sk-{tag}",
        "CB_TOKEN_SECRET": f"tok{tag}",
        "DATABASE_URL": f"postgres://app:pw{tag}@db/x",
        "CB_INNOCENT": f"https://example.invalid/{tag}x",  # looks like nothing: passed on
    }
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


def _leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return [k for k, v in secrets.items() if k != "CB_INNOCENT" and v in text]


@pytest.mark.parametrize("name", list(SANDBOXES))
def test_commands_never_print_a_secret(name, shell, secrets):
    s = shell.session(settings=SANDBOXES[name], sandbox=SANDBOXES[name]["sandbox"]["mode"])
    if name in ("bwrap", "landlock") and s.sandbox().status.backend != name:
        pytest.skip(f"{name} is not available here: {s.sandbox().status.reason}")
    seen_innocent = False
    for command in DUMPS:
        r = s.call("Bash", {"command": command})
        assert not _leaks(r.text, secrets), (name, command, r.text[-2000:])
        seen_innocent |= secrets["CB_INNOCENT"] in r.text
    assert seen_innocent  # the commands did print the environment: a variable that looks like nothing is there


@pytest.mark.parametrize("name", ["unsandboxed, jailed when read-only", "unsandboxed, no jail"])
def test_background_tasks_never_print_a_secret(name, shell, secrets):
    s = shell.session(settings=SANDBOXES[name], sandbox="off")
    r = s.call("Bash", {"command": "printenv; cat /proc/self/environ", "run_in_background": True})
    task = r.data["backgroundTaskId"]
    out = s.call("TaskOutput", {"task_id": task, "block": True, "timeout": 30_000})
    assert secrets["CB_INNOCENT"] in out.text
    assert not _leaks(out.text, secrets), out.text[-2000:]


def test_env_allow_passes_one_on(shell, secrets):
    s = shell.session(bash={"envAllow": ["CB_TOKEN_*"]})
    r = s.call("Bash", {"command": "printenv"})
    assert secrets["CB_TOKEN_SECRET"] in r.text
    assert _leaks(r.text, secrets) == ["CB_TOKEN_SECRET"]


def test_the_model_is_told_why_a_secret_is_empty(shell, secrets):
    s = shell.session()
    r = s.call("Bash", {"command": 'echo "[$OPENAI_API_KEY]"'})
    assert r.text.startswith("[]")
    assert "Commands never see $OPENAI_API_KEY" in r.text and "bash.envAllow" in r.text
    assert "never see" not in s.call("Bash", {"command": "echo $HOME"}).text
    # the same words whether the variable exists or not: nothing about codebelt's environment is told
    other = s.call("Bash", {"command": 'echo "[$NOT_SET_ANYWHERE_TOKEN]"'}).text
    assert "Commands never see $NOT_SET_ANYWHERE_TOKEN" in other


def _cli(ws: Path, sandbox: str, command: str, env: dict[str, str]) -> str:
    import json

    r = subprocess.run(
        [sys.executable, "-m", "codebelt.cli", "call", "--root", str(ws), "--mode", "bypassPermissions",
         "--sandbox", sandbox, "--new-session", "Bash", json.dumps({"command": command})],
        capture_output=True, text=True, timeout=120, env=env)
    return r.stdout + r.stderr


@pytest.mark.parametrize("sandbox", ["bwrap", "landlock"])
def test_codebelt_process_environ_is_out_of_reach_of_sandboxed_commands(sandbox, ws, tmp_path):
    """/proc/PID/environ of codebelt's own process holds the environment it started with, secrets
    included (scrubbing builds the children's environment; it cannot rewrite the parent's). A
    sandboxed command cannot read it: bwrap gives it its own pid namespace, and Landlock refuses
    ptrace-class access to processes outside the domain."""
    secret = f"sk-{uuid.uuid4().hex}"
    env = {**os.environ, "OPENAI_API_KEY": secret, "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    probe = _cli(ws, sandbox, "true", env)
    if "could not" in probe.lower() or "refused" in probe.lower():
        pytest.skip(f"{sandbox} is not available here: {probe[-300:]}")
    out = _cli(ws, sandbox, "cat /proc/$PPID/environ /proc/1/environ; "
                            "for p in /proc/[0-9]*/environ; do cat \"$p\" 2>/dev/null; done; echo done", env)
    # (the loop's refusals go to /dev/null: one line per process of a busy machine ran the output
    # past what a call shows inline, and "done" with it)
    assert "done" in out, out
    assert secret not in out
    # the same command with the sandbox off does read it: this is what the sandbox closes
    # (documented in docs/security.md)
    assert secret in _cli(ws, "off", "cat /proc/$PPID/environ", env)


def test_codebelt_config_lists_the_names_removed_never_the_values(ws, tmp_path):
    import json

    secret = f"sk-{uuid.uuid4().hex}"
    env = {**os.environ, "OPENAI_API_KEY": secret, "CB_DB": f"postgres://u:{secret}@h/x", "CB_PLAIN": "1",
           "XDG_CONFIG_HOME": str(tmp_path / "config")}
    r = subprocess.run([sys.executable, "-m", "codebelt.cli", "config", "--root", str(ws), "--json"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    removed = json.loads(r.stdout)["environment"]["removed"]
    assert removed["OPENAI_API_KEY"] == "name" and removed["CB_DB"] == "value" and "CB_PLAIN" not in removed
    text = subprocess.run([sys.executable, "-m", "codebelt.cli", "config", "--root", str(ws)],
                          capture_output=True, text=True, timeout=60, env=env).stdout
    assert "OPENAI_API_KEY  (by its name)" in text
    assert secret not in r.stdout + text
