"""Backend selection, the probe's reasons, refusal when a sandbox is required, and settings.

An unusable bwrap is made real rather than mocked: PATH holds either no bwrap at all, or a
stand-in `bwrap` that fails the way bubblewrap fails without user namespaces. A kernel without
Landlock cannot be made real here, so that one case replaces `abi_version` (the ABI query).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codebelt.errors import SettingsError
from codebelt import sandbox
from codebelt.sandbox import Limits, SandboxConfig, SandboxUnavailable, bwrap, landlock

from .conftest import backend_unusable

NAMESPACE_FAILURE = "bwrap: Creating new namespace failed: Operation not permitted"


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(bwrap, "DEFAULT_PATHS", ())


@pytest.fixture
def broken_bwrap(monkeypatch, tmp_path):
    bindir = tmp_path / "fake-bin"
    bindir.mkdir()
    fake = bindir / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{NAMESPACE_FAILURE}' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")


@pytest.fixture
def no_landlock(monkeypatch):
    monkeypatch.setattr(landlock, "abi_version", lambda: (0, "the kernel has no Landlock (simulated)"))


def need(backend: str) -> None:
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")


def test_off_means_no_wrapper(make_sandbox, ws):
    sb = make_sandbox("off")
    assert sb.wrapper() is None
    assert not sb.status.active and sb.status.backend is None and "off" in sb.status.reason


def test_auto_prefers_bwrap(make_sandbox):
    need("bwrap")
    st = make_sandbox("auto").status
    assert (st.active, st.backend, st.protected_paths) == (True, "bwrap", True)
    assert "bubblewrap" in st.reason and "network off" in st.reason


def test_auto_falls_back_to_landlock_and_says_why(make_sandbox, no_bwrap):
    need("landlock")
    st = make_sandbox("auto").status
    assert (st.active, st.backend) == (True, "landlock")
    assert "bwrap is not installed" in st.reason and "Landlock ABI" in st.reason
    assert "not read-only under Landlock" in st.reason  # the trade-off is stated


def test_probe_failure_explains_namespaces(make_sandbox, broken_bwrap):
    need("landlock")
    st = make_sandbox("auto").status
    assert st.backend == "landlock"
    assert "cannot create namespaces" in st.reason and "Creating new namespace failed" in st.reason


@pytest.mark.parametrize("mode", ["bwrap", "required"])
def test_forced_or_required_refuses_when_nothing_works(mode, make_sandbox, no_bwrap, no_landlock):
    sb = make_sandbox(mode)
    assert not sb.status.active
    with pytest.raises(SandboxUnavailable) as e:
        sb.wrapper()
    assert "bwrap is not installed" in str(e.value) and "sandbox.mode" in str(e.value)


def test_auto_with_nothing_runs_unsandboxed_with_a_warning(make_sandbox, no_bwrap, no_landlock):
    sb = make_sandbox("auto")
    assert sb.wrapper() is None
    assert "run unsandboxed" in sb.status.reason and "Landlock (simulated)" in sb.status.reason


@pytest.mark.parametrize(
    "settings",
    [{"sandbox": {"mode": "bogus"}}, {"sandbox": {"limits": {"processes": -1}}},
     {"sandbox": {"network": "yes"}}, {"sandbox": {"limits": {"fileSizeMB": "big"}}}],
    ids=["mode", "negative-limit", "network-not-bool", "limit-not-int"],
)
def test_invalid_settings_fail_closed(settings, make_session):
    # Refused when the session starts, naming the key: no command can run under settings
    # that do not say what the sandbox should be.
    with pytest.raises(SettingsError, match=r"session settings: sandbox\.(mode|limits\.\w+|network) must be"):
        make_session(settings=settings)


def test_limits_from_settings():
    assert Limits.from_settings({"processes": 64, "fileSizeMB": 10, "coreDumps": True}) == Limits(64, 10, True)
    assert Limits.from_settings(None) == Limits()
    with pytest.raises(SettingsError):
        SandboxConfig((Path("/"),), None, mode="sometimes")


# -- through a Session ------------------------------------------------------------------------
def test_session_probes_once_and_uses_its_temp_dir(make_session, backend):
    s = make_session(sandbox=backend, settings={"sandbox": {"network": True}})
    st = s.sandbox().status
    assert st is s.sandbox().status  # cached in the session's service
    assert (st.active, st.backend, st.mode, st.network) == (True, backend, backend, True)
    argv, env, preexec = s.sandbox().wrapper()(["/bin/true"], s.workspace.root, {})
    assert env["TMPDIR"] == str(Path(os.path.realpath(s.temp_dir)))
    assert callable(preexec)
    assert (argv[0].endswith("bwrap")) == (backend == "bwrap")


def test_explain_denial_only_when_sandboxed(make_session):
    off = make_session(sandbox="off")
    assert off.sandbox().explain_denial("touch: cannot touch '/etc/x': Read-only file system", 1) is None


@pytest.mark.parametrize(
    "command,inside,expect_blocked",
    [("echo hi > inside.txt && cat inside.txt", True, False),
     ("touch /etc/codebelt-bash-tool-test", False, True),
     ("touch ../codebelt-bash-tool-test", False, True)],
    ids=["inside", "etc", "parent"],
)
def test_bash_tool_runs_sandboxed(command, inside, expect_blocked, make_session, backend, ws):
    s = make_session(sandbox=backend, mode="bypassPermissions")
    r = s.call("Bash", {"command": command})
    assert not r.is_error or expect_blocked, r.text
    assert ("blocked by the sandbox" in r.text) == expect_blocked, r.text
    if inside:
        assert (ws / "inside.txt").read_text() == "hi\n"
    for leftover in (Path("/etc/codebelt-bash-tool-test"), ws.parent / "codebelt-bash-tool-test"):
        exists = leftover.exists()
        leftover.unlink(missing_ok=True)
        assert not exists


def test_bash_tool_refuses_when_required_sandbox_is_missing(make_session, no_bwrap, no_landlock):
    s = make_session(sandbox="required", mode="bypassPermissions")
    r = s.call("Bash", {"command": "echo should-not-run > ran.txt"})
    assert r.is_error and "Bash commands are refused" in r.text, r.text
    assert "internal error" not in r.text
    assert not (s.workspace.root / "ran.txt").exists()


def test_timeout_leaves_nothing_running_in_the_sandbox(make_session, backend):
    """Even a process that left the command's session (setsid) dies with the sandboxed command."""
    import subprocess
    import time
    import uuid

    tag = f"{uuid.uuid4().int % 1000}.{os.getpid() % 1000}"  # a sleep duration nobody else uses
    # moved to the background at its timeout (as Claude Code), stopped 0.5 s later
    s = make_session(sandbox=backend, mode="bypassPermissions", settings={"bash": {"backgroundTimeoutMs": 500}})
    r = s.call("Bash", {"command": f"setsid sleep 9{tag} & (sleep 8{tag} &); sleep 7{tag}", "timeout": 1500})
    assert "moved to the background" in r.text, r.text
    deadline = time.monotonic() + 10
    while True:
        left = subprocess.run(["pgrep", "-f", f"sleep [789]{tag}"], capture_output=True, text=True).stdout
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == "", f"still running after the timeout: {left}"
