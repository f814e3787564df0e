"""The resident's compiled request path (sandbox/_zygote.c, loaded through sandbox/native.py): used
wherever it is built, never silently skipped; left out cleanly where it is absent or will not
load; and, for every way a command's set-up can fail, the same status and the same words as the
Python path (resident.py's init), which stays the reference. The resident's guarantees
themselves run on both paths in test_resident.py and test_resident_sandbox.py."""

from __future__ import annotations

import importlib.metadata
import os
import select
import shutil
import sysconfig
import tempfile
from pathlib import Path

import pytest

from codebelt.sandbox import Sandbox, native, residency

from .conftest import jailed, resident_jail


def _session(ws: Path, tmpd: Path, path: str, monkeypatch) -> Sandbox:
    return resident_jail(ws, tmpd, path, monkeypatch)


def _changed_requests(monkeypatch, change):
    original = residency.ResidentJail.launch

    def launch(self, request, fds):
        # not the resident's start-up probe (`true`): only the test's own commands
        return original(self, change(dict(request)) if request["argv"][0] == "/bin/bash" else request, fds)

    monkeypatch.setattr(residency.ResidentJail, "launch", launch)


def _raw_status(proc: residency.JailedProcess) -> bytes:
    """The init's status message as sent (JailedProcess reads only a plain status)."""
    select.select([proc.exit_fd], [], [], 30)
    proc._sock.setblocking(True)
    msg = proc._sock.recv(4096)
    proc.returncode = 0
    os.close(proc._pidfd)
    proc._sock.close()
    return msg


def test_the_extension_is_built_where_it_can_be():
    """An install with a C compiler and Python's headers builds it (setup.sh installs both): a
    failed build would otherwise leave every session on the slower path without a word."""
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if not (shutil.which("cc") or shutil.which("gcc")) or not headers.exists():
        pytest.skip("no C compiler or no Python headers here: the Python path is the one")
    source = Path(native.__file__).with_name("_zygote.c")
    installed = getattr(importlib.metadata.distribution("codebelt"), "_path", None)
    if not native.available() and installed is not None and installed.stat().st_mtime < source.stat().st_mtime:
        pytest.skip("this environment was installed before _zygote.c changed: `pip install -e .` builds it")
    assert native.available(), "the compiled request path was not built or does not import (`pip install -e .`)"


@pytest.mark.parametrize("kind", ["jail", "write-sandbox"])
def test_the_compiled_path_serves_the_requests_where_it_is_built(ws, tmpd, monkeypatch, kind):
    """Each request is taken by the compiled path, not handed back to the Python one: only the
    compiled path answers the `steps` field (the step bench's timestamps) — checked for the jail's
    requests and the write sandbox's."""
    if not native.available():
        pytest.skip("the compiled request path is not built here")
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now")
    sb = _session(ws, tmpd, "native", monkeypatch)
    try:
        _changed_requests(monkeypatch, lambda req: {**req, "steps": True})
        if kind == "jail":
            launch = sb.jail_wrapper([])(["/bin/bash", "-c", "true"], ws, dict(os.environ)).launch
            resident = sb._resident
        else:
            launch = sb.wrapper()(["/bin/bash", "-c", "true"], ws, dict(os.environ)).launch
            resident = sb._sandbox_resident.current
        with tempfile.TemporaryFile() as out:
            proc = launch({1: out.fileno(), 2: out.fileno()})
            assert proc is not None
            msg = _raw_status(proc)
        assert resident.native, resident.native_failed
        status, _, steps = msg.partition(b" steps ")
        assert status == b"status 0", msg
        stamps = [int(x) for x in steps.split(b",")]
        assert len(stamps) == 12 and stamps == sorted(stamps), msg
    finally:
        sb.close()


def test_without_the_extension_the_resident_keeps_its_python_path(ws, tmpd, monkeypatch):
    monkeypatch.setattr(native, "_zygote", None)
    sb = _session(ws, tmpd, "python", monkeypatch)
    try:
        assert not sb._resident.native and sb._resident.native_failed == "not asked for"
        r = jailed(sb, "echo ran; touch x 2>/dev/null || echo read-only", ws)
        assert r.stdout.split() == ["ran", "read-only"], r.stdout
    finally:
        sb.close()


def test_an_extension_that_does_not_load_leaves_the_python_path_and_says_why(ws, tmpd, monkeypatch):
    """A descriptor whose file is no extension (here a text file): the resident says why and
    serves its commands on the Python path."""
    if not native.available():
        pytest.skip("the compiled request path is not built here")
    bogus = tmpd / "not-an-extension.so"
    bogus.write_text("not ELF\n")
    monkeypatch.setattr(native, "open_extension", lambda writable: os.open(bogus, os.O_RDONLY | os.O_CLOEXEC))
    sb = _session(ws, tmpd, "native", monkeypatch)
    try:
        assert not sb._resident.native
        assert "ImportError" in sb._resident.native_failed, sb._resident.native_failed
        r = jailed(sb, "echo ran", ws)
        assert r.stdout.strip() == "ran", r.stdout
    finally:
        sb.close()


def test_an_extension_where_a_command_may_write_is_not_handed_to_a_resident(tmp_path):
    if not native.available():
        pytest.skip("the compiled request path is not built here")
    here = Path(native._zygote.__file__).resolve()
    assert native.open_extension([tmp_path]) is not None  # control: elsewhere it is
    os.close(native.open_extension([tmp_path]))
    for writable in (here.parent, here.parent.parent, here):
        assert native.open_extension([writable]) is None
        assert "where a sandboxed command may write" in native.why_not([writable])


# (name, change to a jail request, status, text the command's output must contain): every way a
# set-up fails, each ending before the command runs ("ran" never printed) or as a shell says it
def _argv0(path):
    return lambda req: {**req, "argv": [path, "-c", "echo ran"]}


ERRORS = [
    ("missing program", _argv0("/no/such/program"), 127, "/no/such/program: No such file or directory\n"),
    ("not executable", _argv0("/etc/passwd"), 127, "/etc/passwd: Permission denied\n"),
    ("bare name not on PATH", lambda req: {**req, "argv": ["no-such-program-here"], "env": {"PATH": "/usr/bin:/bin"}},
     127, "no-such-program-here: No such file or directory\n"),
    ("mask moved", lambda req: {**req, "masks": [*req["masks"], ["/etc/hostname", [1, 2]]]}, 126,
     "codebelt jail: the command could not be started in the jail (/etc/hostname was moved while the "
     "command started); it did not run\n"),
    ("mask's directory gone", lambda req: {**req, "masks": [*req["masks"], ["/no/such/dir/f", [1, 2]]]}, 126,
     "(/no/such/dir/f was moved while the command started)"),
    ("failed mount", lambda req: {**req, "mounts": [["show", "/no/such/source", "/etc/hostname"]]}, 126,
     "([Errno 2] mount /etc/hostname: No such file or directory); it did not run\n"),
    ("read-only remount of a missing path", lambda req: {**req, "mounts": [["readonly", "/no/such/path"]]}, 126,
     "([Errno 2] No such file or directory: '/no/such/path')"),
    ("pty instance refused", lambda req: {**req, "mounts": [["devpts", "/no/such/pts"]]}, 126,
     "([Errno 2] mount /no/such/pts: No such file or directory)"),
    ("missing cwd", lambda req: {**req, "cwd": "/no/such/cwd"}, 126,
     "([Errno 2] No such file or directory: '/no/such/cwd')"),
    ("unknown mount step", lambda req: {**req, "mounts": [["bogus", "/tmp"]]}, 126, "(unknown mount step 'bogus')"),
    # found as subprocess finds it (each PATH directory; an empty entry is the name itself)
    ("bare name found on PATH", lambda req: {**req, "argv": ["bash", "-c", "echo ran"], "env": {"PATH": ":/no/such:/bin"}},
     0, "ran\n"),
    # skipped as bwrap's -try options skip them: the command runs
    ("missing path pinned, masked, re-bound", lambda req: {**req, "masks": [*req["masks"], "/no/such/file"],
     "mounts": [["pin", "/no/such/a"], ["ro", "/no/such/b"], ["mask", "/no/such/c"]]}, 0, "ran\n"),
]


@pytest.mark.parametrize("name,change,code,text", ERRORS, ids=[e[0] for e in ERRORS])
def test_a_failed_set_up_says_the_same_on_both_paths(ws, tmpd, monkeypatch, name, change, code, text):
    seen = {}
    for path in ("native", "python"):
        sb = _session(ws, tmpd, path, monkeypatch)
        try:
            with monkeypatch.context() as m:
                _changed_requests(m, change)
                r = jailed(sb, "echo ran", ws)
            seen[path] = (r.returncode, r.stdout)
            assert (r.returncode, "ran" in r.stdout) == (code, code == 0), (path, r.stdout)
            assert text in r.stdout, (path, r.stdout)
            # the resident still serves after it (the failed command's init ended alone)
            assert jailed(sb, "echo again", ws).stdout == "again\n"
        finally:
            sb.close()
    assert seen["native"] == seen["python"], seen
