"""A masked file's directory moved while a command starts (a background command in the write
sandbox can rename the directories above a denied file, not the file itself). The masks are
decided, then mounted by path a moment later.

Every way of moving it (the parent away, the parent replaced by a decoy, a grandparent, a symlink
to a decoy, an atomic RENAME_EXCHANGE with a decoy), made deterministically between the wrapper's
decision and the start, for every jail and write sandbox and a command on a terminal; then a
racing loop against many starts. bwrap (resident or one-shot) checks the directory by identity
and refuses the command; Landlock holds the directories by descriptor and is unaffected. And the
same moves between the Read-deny walk and the wrapper: the identity checked is the one of the
directory the walk listed the path in, and Landlock refuses too."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import uuid
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from codebelt.permissions.denied import DeniedFiles
from codebelt.permissions.rules import Rule
from codebelt.sandbox import Sandbox, SandboxConfig
from codebelt.shell.execution.pty_session import Pty
from codebelt.shell.execution.runner import build_env
from codebelt.shell.execution.tasks import TaskManager

from .conftest import JAILS, WRITE_SANDBOXES, _launched, backend_unusable, sandbox_name, spawn, write_sandbox

REFUSED = "was moved while the command started"
RENAME_EXCHANGE = 2
AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a: Path, b: Path) -> None:
    """renameat2(RENAME_EXCHANGE): both names swapped in one step."""
    if _libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), str(a))


def _decoy(d: Path) -> None:
    d.mkdir(parents=True)
    (d / "secret").write_text("decoy\n")


# how the directories above the denied file `<ws>/a/d/secret` move: the command reads it under
# every name it may have afterwards
SWAPS = {
    "parent moved away": lambda ws: (ws / "a" / "d").rename(ws / "a" / "e"),
    "parent replaced by a decoy": lambda ws: ((ws / "a" / "d").rename(ws / "a" / "e"), _decoy(ws / "a" / "d")),
    "grandparent moved away": lambda ws: (ws / "a").rename(ws / "b"),
    "grandparent replaced by a decoy": lambda ws: ((ws / "a").rename(ws / "b"), _decoy(ws / "a" / "d")),
    "parent replaced by a link to a decoy": lambda ws: (
        (ws / "a" / "d").rename(ws / "a" / "e"), _decoy(ws / "x"), (ws / "a" / "d").symlink_to(ws / "x")),
    "parent exchanged with a decoy": lambda ws: (_decoy(ws / "a" / "e"), exchange(ws / "a" / "d", ws / "a" / "e")),
}
READ_ALL = "cat a/d/secret a/e/secret b/d/secret x/secret 2>/dev/null; echo ran"
COMMAND = ["/bin/bash", "-c", READ_ALL]


def _plant(ws: Path) -> tuple[Path, str]:
    (ws / "a" / "d").mkdir(parents=True)
    token = uuid.uuid4().hex
    (ws / "a" / "d" / "secret").write_text(f"secret-{token}\n")
    return ws / "a" / "d" / "secret", token


def _checked(out: str, token: str, backend: str) -> None:
    assert token not in out, out
    if backend == "bwrap":  # the cover did not land where the file is: refused, never run (or
        # bwrap itself could not mount a cover where the path now leads nowhere it can create)
        assert "ran" not in out and (REFUSED in out or out.startswith("bwrap: ")), out


@pytest.mark.parametrize("how", SWAPS)
@pytest.mark.parametrize("name", JAILS)
def test_the_jail_never_shows_a_file_whose_directory_moved_as_it_started(name, how, ws, tmpd):
    backend = name.removesuffix("-one-shot")
    one_shot = name.endswith("one-shot")
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")
    secret, token = _plant(ws)
    with closing(Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        if sb.jail.backend != backend:
            pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
        wrap = sb.jail_wrapper([secret.resolve()])
        first = _run(wrap(COMMAND, ws, dict(os.environ)), ws, one_shot)
        assert "ran" in first and token not in first and REFUSED not in first, first  # control
        if backend == "bwrap" and not one_shot and sb._resident is None:
            pytest.skip(f"no resident jail here: {sb._resident_failed}")
        wrapped = wrap(COMMAND, ws, dict(os.environ))  # the masks are decided here
        SWAPS[how](ws)
        _checked(_run(wrapped, ws, one_shot), token, backend)


@pytest.mark.parametrize("how", SWAPS)
@pytest.mark.parametrize("name", WRITE_SANDBOXES)
def test_the_write_sandbox_never_shows_a_file_whose_directory_moved_as_it_started(name, how, ws, tmpd, monkeypatch):
    backend = write_sandbox(name, monkeypatch)
    secret, token = _plant(ws)
    with closing(Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        wrap = sb.wrapper(lambda: [secret.resolve()])
        first = spawn(wrap(COMMAND, ws, dict(os.environ)), ws).stdout
        assert "ran" in first and token not in first and REFUSED not in first, first  # control
        wrapped = wrap(COMMAND, ws, dict(os.environ))  # the masks are decided here
        SWAPS[how](ws)
        _checked(spawn(wrapped, ws).stdout, token, backend)


@pytest.mark.parametrize("how", SWAPS)
@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
@pytest.mark.parametrize("jailed", [False, True], ids=["sandboxed", "jailed"])
def test_a_command_on_a_terminal_never_shows_a_file_whose_directory_moved_as_it_started(backend, jailed, how, ws, tmpd):
    """A background Bash command or Codex's `tty: true`: one bwrap per command whatever the
    residents do (a terminal must be the command's controlling terminal)."""
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")
    secret, token = _plant(ws)
    with closing(Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        if jailed and sb.jail.backend != backend:
            pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
        inner = sb.jail_wrapper([secret.resolve()]) if jailed else sb.wrapper(lambda: [secret.resolve()])
        swap = [SWAPS[how]]

        def wrap(argv, cwd, env):
            wrapped = inner(argv, cwd, env)  # the masks are decided here
            if swap:
                swap.pop()(ws)
            return wrapped

        manager = TaskManager(tmpd / "spool", f"mask-race-{uuid.uuid4().hex[:8]}.", build_env("inherit", [], tmpd, ""))
        try:
            first = _on_terminal(manager, inner, ws)
            assert "ran" in first and token not in first and REFUSED not in first, first  # control
            _checked(_on_terminal(manager, wrap, ws), token, backend)
        finally:
            manager.close()


def _on_terminal(manager: TaskManager, wrap, ws: Path) -> str:
    terminal = Pty()
    proc = manager.spawn(READ_ALL, ws, 60, wrap=wrap, stdio=terminal)
    assert proc.wait(60)
    terminal.output.join(30)  # the pump copies what is left once the command has ended
    return proc.spool_path.read_text(errors="replace")


def test_a_cover_whose_file_vanished_before_the_mount_leaves_nothing_in_the_workspace(ws, tmpd, monkeypatch):
    """bwrap creates the mount point of a cover whose path is gone (an empty file, in the host's
    tree under a writable root): the file deleted between the argv's build and the mount. What it
    made is removed; an empty file that was there all along is not."""
    write_sandbox("bwrap-one-shot", monkeypatch)
    secret, token = _plant(ws)
    kept = ws / "a" / "d" / "empty"
    kept.write_text("")
    with closing(Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode="bwrap", name=sandbox_name()))) as sb:
        wrapped = sb.wrapper(lambda: [secret.resolve(), kept.resolve()])(COMMAND, ws, dict(os.environ))
        assert wrapped[0][0].endswith("bwrap")  # built: the covers planned
        secret.unlink()
        out = spawn(wrapped, ws, one_shot=True).stdout
        assert "ran" in out and token not in out, out
        made = os.path.lexists(secret)  # bwrap's mount point, where the file was
        sb.wrapper(lambda: [kept.resolve()])(COMMAND, ws, dict(os.environ))[0]  # the next command's build
        assert not os.path.lexists(secret), "bwrap's mount point is still in the workspace"
    assert made  # (what this test is about: bwrap does make one)
    assert kept.exists()


# -- the window between the walk and the wrap --------------------------------------------------
def _walked(ws: Path) -> DeniedFiles:
    """The Read deny rules' walk over the workspace, as a session's permission engine has it."""
    return DeniedFiles([Rule.parse("Read(./a/d/secret)", "test", root=ws)])


@pytest.mark.parametrize("how", SWAPS)
@pytest.mark.parametrize("side,name", [*(("jail", n) for n in JAILS), *(("sandbox", n) for n in WRITE_SANDBOXES)])
def test_a_directory_swapped_between_the_walk_and_the_wrap_is_told_from_the_one_the_walk_saw(side, name, how, ws,
                                                                                         tmpd, monkeypatch):
    """The masks come from the walk (permissions/denied.py); the directory above the denied file
    moves after the walk listed it and before the wrapper is given the paths. The covers are
    checked against the directory the walk saw, not against whatever the path leads to when the
    wrapper looks: a decoy there is not taken for the real one."""
    backend = name.removesuffix("-one-shot")
    one_shot = name.endswith("one-shot")
    if side == "sandbox":
        write_sandbox(name, monkeypatch)
    elif backend_unusable(backend):
        pytest.skip(f"{backend} cannot work here: {backend_unusable(backend)}")
    ws = ws.resolve()
    _, token = _plant(ws)
    denied = _walked(ws)
    swaps = []

    def masks():
        found = denied.view([ws], 0.0).masks  # the walk
        if swaps:
            swaps.pop()(ws)  # between the walk and the wrapper's lookups
        return found

    with closing(Sandbox(SandboxConfig((ws,), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        if side == "jail":
            if sb.jail.backend != backend:
                pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
            first = _run(sb.jail_wrapper(masks())(COMMAND, ws, dict(os.environ)), ws, one_shot)
            if backend == "bwrap" and not one_shot and sb._resident is None:
                pytest.skip(f"no resident jail here: {sb._resident_failed}")
            assert "ran" in first and token not in first and REFUSED not in first, first  # control
            swaps.append(SWAPS[how])
            out = _run(sb.jail_wrapper(masks())(COMMAND, ws, dict(os.environ)), ws, one_shot)
        else:
            wrap = sb.wrapper(masks)
            first = spawn(wrap(COMMAND, ws, dict(os.environ)), ws).stdout
            assert "ran" in first and token not in first and REFUSED not in first, first  # control
            swaps.append(SWAPS[how])
            out = spawn(wrap(COMMAND, ws, dict(os.environ)), ws).stdout
        assert not swaps  # the swap happened, between the two
        _checked(out, token, backend)


# -- a racing loop against many starts ------------------------------------------------------------
STARTS = 25


class Racer:
    """A background command's loop, moving the directory above the denied file as fast as it can
    for the whole test: away and back (`moves`, so the start may find it gone or elsewhere), or
    swapped with a decoy (`exchange`: RENAME_EXCHANGE, the decoy where the directory was half the
    time). With masks given as paths (not from a walk), a decoy is only ever in place after the
    masks were decided (`paused()` returns the real layout): a path given is all there is to
    know; with the masks from the walk the loop never pauses."""

    def __init__(self, ws: Path, kind: str):
        self.ws, self.kind = ws, kind
        self.real = os.stat(ws / "a" / "d").st_ino
        self.stop = threading.Event()
        self.hold = threading.Lock()
        self.rounds = 0
        if kind == "exchange":
            _decoy(ws / "a" / "e")
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        d, e = self.ws / "a" / "d", self.ws / "a" / "e"
        while not self.stop.is_set():
            with self.hold:
                try:
                    if self.kind == "exchange":
                        exchange(d, e)
                        exchange(d, e)
                    else:
                        d.rename(e)
                        e.rename(d)
                except OSError:
                    self._restore()
                self.rounds += 1

    def _restore(self) -> None:
        """The real directory back at its name (bwrap creates what a mask path lacks: a stray
        directory may stand where it was)."""
        d, e = self.ws / "a" / "d", self.ws / "a" / "e"
        if os.path.lexists(d) and os.lstat(d).st_ino != self.real:
            shutil.rmtree(d) if not d.is_symlink() else d.unlink()
        if not os.path.lexists(d):
            e.rename(d)
        if self.kind == "exchange" and not os.path.lexists(e):
            _decoy(e)

    @contextmanager
    def paused(self):
        if self.kind == "moves":
            yield
            return
        with self.hold:
            yield

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        self._restore()


@pytest.mark.parametrize("kind", ["moves", "exchange"])
@pytest.mark.parametrize("where", ["jail-one-shot", "sandbox-one-shot", "terminal", "jail", "sandbox"])
def test_a_racing_loop_never_gets_a_start_to_show_the_file(where, kind, ws, tmpd, monkeypatch):
    backend = "bwrap"
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")
    one_shot = where.endswith("one-shot") or where == "terminal"
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now" if where == "sandbox" else False)
    secret, token = _plant(ws)
    outs: list[str] = []
    with closing(Sandbox(SandboxConfig((ws.resolve(),), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        jailed = where.startswith("jail")
        if jailed and sb.jail.backend != backend:
            pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
        wrap = sb.jail_wrapper([secret.resolve()]) if jailed else sb.wrapper(lambda: [secret.resolve()])
        manager = TaskManager(tmpd / "spool", f"mask-race-{uuid.uuid4().hex[:8]}.", build_env("inherit", [], tmpd, ""))
        try:
            with Racer(ws, kind) as racer:
                for _ in range(STARTS):
                    if where == "terminal":
                        def decided(argv, cwd, env):
                            with racer.paused():
                                return wrap(argv, cwd, env)

                        outs.append(_on_terminal(manager, decided, ws))
                        continue
                    with racer.paused():
                        wrapped = wrap(COMMAND, ws, dict(os.environ))  # the one-shot jail's argv: built later
                    outs.append(_run(wrapped, ws, one_shot) if jailed else spawn(wrapped, ws, one_shot=one_shot).stdout)
                rounds = racer.rounds
        finally:
            manager.close()
    leaked = [o for o in outs if token in o]
    assert not leaked, f"{len(leaked)} of {len(outs)} starts showed the file: {leaked[0]}"
    assert rounds > STARTS, rounds  # the loop ran meanwhile
    assert any("ran" in o for o in outs) or any(REFUSED in o for o in outs), outs[:3]


@pytest.mark.parametrize("kind", ["moves", "exchange"])
@pytest.mark.parametrize("where", ["jail-one-shot", "sandbox-one-shot", "jail", "sandbox"])
def test_a_racing_loop_never_gets_a_walk_to_show_the_file(where, kind, ws, tmpd, monkeypatch):
    """The masks from the walk, with the loop never paused: a decoy in place while the walk
    lists the directory, or while the wrapper is given the paths, or both."""
    backend = "bwrap"
    why = backend_unusable(backend)
    if why:
        pytest.skip(f"{backend} cannot work here: {why}")
    monkeypatch.setattr(Sandbox, "resident_sandbox", "now" if where == "sandbox" else False)
    ws = ws.resolve()
    _, token = _plant(ws)
    denied = _walked(ws)
    masks = lambda: denied.view([ws], 0.0).masks  # noqa: E731
    assert masks() == [ws / "a" / "d" / "secret"]  # denied by name before the loop: by inode after
    outs: list[str] = []
    with closing(Sandbox(SandboxConfig((ws,), tmpd.resolve(), mode=backend, name=sandbox_name()))) as sb:
        jailed = where.startswith("jail")
        if jailed and sb.jail.backend != backend:
            pytest.skip(f"no {backend} jail here: {sb.jail.reason}")
        one_shot = where.endswith("one-shot")
        with Racer(ws, kind) as racer:
            for _ in range(STARTS):
                if jailed:
                    outs.append(_run(sb.jail_wrapper(masks())(COMMAND, ws, dict(os.environ)), ws, one_shot))
                else:
                    outs.append(spawn(sb.wrapper(masks)(COMMAND, ws, dict(os.environ)), ws, one_shot=one_shot).stdout)
            rounds = racer.rounds
    leaked = [o for o in outs if token in o]
    assert not leaked, f"{len(leaked)} of {len(outs)} starts showed the file: {leaked[0]}"
    assert rounds > STARTS, rounds  # the loop ran meanwhile


def _run(wrapped, cwd: Path, one_shot: bool) -> str:
    argv, env, preexec, *rest = wrapped
    launch = None if one_shot else getattr(wrapped, "launch", None)
    try:
        if launch is not None:
            return _launched(launch, argv, 60).stdout
        return subprocess.run(argv, cwd=cwd, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              start_new_session=True).stdout
    finally:
        if rest and rest[0] is not None:
            rest[0]()
