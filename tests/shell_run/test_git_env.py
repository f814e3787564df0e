"""git's environment variables in codebelt's own environment and commands that run unasked.

The classifier's git model reads the repository git finds from the command's directory, that
repository's configuration and git's own programs; `--git-dir`, `--work-tree`, `--exec-path`,
`--config-env` are refused as options. Their environment forms (`GIT_DIR`, `GIT_CONFIG_COUNT`,
`GIT_EXTERNAL_DIFF`, …) in codebelt's environment would reach every command: a command no
person approved (the read-only jail, sandboxed auto-allow) runs without them; one a person
approved keeps them, as in the user's shell. Checked by what the command sees and by what git
then does, through real sessions."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from codebelt.shell.execution.environment import GIT_KEPT, secret_reason, unasked_environ

# every variable git reads that chooses a repository, configuration, program, protocol or file
REMOVED = {
    "GIT_DIR": "{ws}/vendor/other/.git", "GIT_WORK_TREE": "{ws}/vendor", "GIT_COMMON_DIR": "{ws}/vendor/other/.git",
    "GIT_INDEX_FILE": "{ws}/vendor/idx", "GIT_OBJECT_DIRECTORY": "{ws}/vendor/other/.git/objects",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": "{ws}/vendor/other/.git/objects", "GIT_NAMESPACE": "ns",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM": "1", "GIT_CONFIG": "{ws}/vendor/cfg", "GIT_CONFIG_GLOBAL": "{ws}/vendor/cfg",
    "GIT_CONFIG_SYSTEM": "{ws}/vendor/cfg", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.abbrev",
    "GIT_CONFIG_VALUE_0": "40", "GIT_CONFIG_PARAMETERS": "'core.abbrev'='40'", "GIT_EXEC_PATH": "{ws}/vendor",
    "GIT_SSH": "{ws}/vendor/ssh", "GIT_SSH_COMMAND": "sh -c id", "GIT_SSH_VARIANT": "ssh",
    "GIT_EXTERNAL_DIFF": "echo EXTDIFF-RAN", "GIT_ASKPASS": "{ws}/vendor/askpass",
    "GIT_PROXY_COMMAND": "{ws}/vendor/proxy", "GIT_TEMPLATE_DIR": "{ws}/vendor", "GIT_ATTR_SOURCE": "HEAD",
    "GIT_ICASE_PATHSPECS": "1", "GIT_GLOB_PATHSPECS": "1", "GIT_LITERAL_PATHSPECS": "1",
    "GIT_REPLACE_REF_BASE": "refs/x/", "GIT_SHALLOW_FILE": "{ws}/vendor/shallow", "GIT_GRAFT_FILE": "{ws}/vendor/g",
    "GIT_TRACE": "{ws}/vendor/trace", "GIT_TRACE2_EVENT": "af_unix:/run/x.sock", "GIT_ALLOW_PROTOCOL": "ext",
    "GIT_PROTOCOL_FROM_USER": "1", "GIT_DIFF_OPTS": "-u9", "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_SSL_CERT": "{ws}/vendor/client.pem", "GIT_SSL_KEY": "{ws}/vendor/client.key",
}
KEPT = {"GIT_AUTHOR_NAME": "A U Thor", "GIT_COMMITTER_EMAIL": "c@example.invalid", "GIT_CEILING_DIRECTORIES": "/nowhere",
        "GIT_SSL_CAINFO": "/etc/ssl/certs/ca-certificates.crt"}


def test_unasked_environ_leaves_out_every_git_variable_but_the_kept():
    env = {**REMOVED, **KEPT, "PATH": "/usr/bin", "GITHUB_REF": "x", "git_dir": "lower-case is not git's"}
    out = unasked_environ(env)
    assert not set(REMOVED) & set(out)
    assert {k: out[k] for k in KEPT} == KEPT
    assert out["PATH"] == "/usr/bin" and out["GITHUB_REF"] == "x" and out["git_dir"]
    assert all(k.startswith("GIT_") for k in GIT_KEPT)


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repos(ws: Path) -> tuple[Path, str]:
    """The workspace's repository (one commit "workspace-commit", a.txt changed since), and
    another inside it, vendor/other, whose commit "other-commit" git would show under GIT_DIR."""
    (ws / "a.txt").write_text("alpha\n")
    _git(ws, "init", "-q")
    _git(ws, "add", "a.txt")
    _git(ws, "commit", "-qm", "workspace-commit")
    other = ws / "vendor" / "other"
    other.mkdir(parents=True)
    _git(other, "init", "-q")
    (other / "o.txt").write_text("o\n")
    _git(other, "add", "o.txt")
    _git(other, "commit", "-qm", "other-commit")
    (ws / "vendor" / "cfg").write_text("[core]\n\tabbrev = 40\n")
    (ws / "a.txt").write_text("alpha changed\n")
    return ws, _git(other, "rev-parse", "HEAD").strip()


def _set(monkeypatch, ws: Path, names) -> None:
    for name in names:
        monkeypatch.setenv(name, {**REMOVED, **KEPT}[name].format(ws=ws))


def _confinement(s, audit_db: Path) -> tuple[str, str]:
    """(confinement, decided by) of the session's last call, from the audit log."""
    s._audit.flush()
    with sqlite3.connect(audit_db) as db:
        return db.execute("SELECT confinement, decided_by FROM calls ORDER BY rowid DESC LIMIT 1").fetchone()


# a command that is not read-only asks in each (the controls: approved, it keeps the variables)
SANDBOXES = {
    "bwrap jail": {"sandbox": {"mode": "bwrap", "autoAllowBash": False}},
    "landlock jail": {"sandbox": {"mode": "landlock", "autoAllowBash": False}},
    "jail, write sandbox off": {"sandbox": {"mode": "off"}},
}


def _session(shell, name: str, **kwargs):
    s = shell.session(settings=SANDBOXES[name], sandbox=SANDBOXES[name]["sandbox"]["mode"], mode="default", **kwargs)
    jail = s.sandbox().jail.backend
    if jail is None or (name != "jail, write sandbox off" and s.sandbox().status.backend != name.split()[0]):
        pytest.skip(f"{name} is not available here: {s.sandbox().jail.reason}")
    return s


@pytest.mark.parametrize("name", list(SANDBOXES))
def test_a_jailed_command_sees_none_of_them(name, shell, repos, monkeypatch, audit_db):
    ws, _ = repos
    _set(monkeypatch, ws, [*REMOVED, *KEPT])
    s = _session(shell, name)
    r = s.call("Bash", {"command": "printenv | grep ^GIT_ | sort"})
    assert _confinement(s, audit_db)[0] == "jail"
    seen = {line.split("=", 1)[0] for line in r.text.splitlines() if line.startswith("GIT_")}
    assert not seen & set(REMOVED), r.text
    assert set(KEPT) <= seen, r.text  # control: the environment was printed, and these pass


# What git does under each variable, and what it shows when the variable reaches it.
EFFECTS = [
    (("GIT_DIR",), "git log --format=%s", "other-commit"),
    (("GIT_OBJECT_DIRECTORY",), "git log --format=%s", "bad object"),
    (("GIT_INDEX_FILE",), "git status --short", "?? a.txt"),
    (("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"), "git log --format=%h", "{full}"),
    (("GIT_CONFIG_GLOBAL",), "git log --format=%h", "{full}"),
    (("GIT_CONFIG_SYSTEM",), "git log --format=%h", "{full}"),
    (("GIT_CONFIG_PARAMETERS",), "git log --format=%h", "{full}"),
    (("GIT_EXTERNAL_DIFF",), "git diff", "EXTDIFF-RAN"),
    (("GIT_ALTERNATE_OBJECT_DIRECTORIES",), "git cat-file -t {other}", "commit"),
]


@pytest.mark.parametrize("names,command,shows", EFFECTS, ids=[e[0][0] for e in EFFECTS])
def test_git_in_the_jail_does_what_was_judged(names, command, shows, shell, repos, monkeypatch, audit_db):
    ws, other = repos
    full = _git(ws, "rev-parse", "HEAD").strip()
    _set(monkeypatch, ws, names)
    s = _session(shell, "bwrap jail")
    r = s.call("Bash", {"command": command.format(other=other)})
    assert _confinement(s, audit_db)[0] == "jail"
    assert shows.format(full=full) not in r.text, r.text
    # control: the same command approved by a person runs as in the user's shell, and shows it
    approved = s.call("Bash", {"command": command.format(other=other) + " ; : > approved.txt"})
    assert _confinement(s, audit_db) == ("sandbox", "user"), approved.text  # asked, approved
    assert shows.format(full=full) in approved.text, approved.text


def test_sandboxed_auto_allow_runs_without_them_and_an_approved_command_with_them(shell, repos, monkeypatch,
                                                                                 audit_db):
    ws, _ = repos
    _set(monkeypatch, ws, [*REMOVED, *KEPT])
    s = shell.session(settings={"sandbox": {"mode": "bwrap", "autoAllowBash": True}}, sandbox="bwrap",
                      mode="default", approver=lambda request: pytest.fail(f"asked: {request}"))
    if s.sandbox().status.backend != "bwrap":
        pytest.skip(f"bwrap is not available here: {s.sandbox().status.reason}")
    r = s.call("Bash", {"command": "touch made; printenv | grep ^GIT_ | sort"})
    assert _confinement(s, audit_db) == ("sandbox", "sandbox")
    seen = {line.split("=", 1)[0] for line in r.text.splitlines() if line.startswith("GIT_")}
    assert (ws / "made").exists() and set(KEPT) <= seen, r.text
    assert not seen & set(REMOVED), r.text
    asked = []
    s2 = shell.session(settings=SANDBOXES["bwrap jail"], sandbox="bwrap", mode="default",
                       approver=lambda request: asked.append(request) or True)
    r = s2.call("Bash", {"command": "touch made2; printenv | grep ^GIT_ | sort"})
    assert asked, "the control must be a command a person approved"
    seen = {line.split("=", 1)[0] for line in r.text.splitlines() if line.startswith("GIT_")}
    assert {n for n in REMOVED if secret_reason(n) is None} <= seen, r.text  # (GIT_SSL_KEY: a secret's name)


def _seen(text: str) -> set[str]:
    return {line.split("=", 1)[0] for line in text.splitlines() if line.startswith("GIT_")}


def test_in_the_background_and_through_codex_exec_command_too(shell, repos, monkeypatch, make_session):
    ws, _ = repos
    _set(monkeypatch, ws, [*REMOVED, *KEPT])
    s = _session(shell, "bwrap jail")
    r = s.call("Bash", {"command": "printenv | grep ^GIT_ | sort", "run_in_background": True})
    out = s.call("TaskOutput", {"task_id": r.data["backgroundTaskId"], "block": True, "timeout": 30_000})
    assert set(KEPT) <= _seen(out.text) and not _seen(out.text) & set(REMOVED), out.text
    codex = make_session(profile="codex", settings=SANDBOXES["bwrap jail"], sandbox="bwrap", mode="default")
    r = codex.call("exec_command", {"cmd": "printenv | grep ^GIT_ | sort", "login": False})
    assert set(KEPT) <= _seen(r.text) and not _seen(r.text) & set(REMOVED), r.text
