"""The Python that runs inside bwrap before its checks (the stage, the residents) cannot be changed
by a sandboxed command.

codebelt run from a virtual environment made with `--copies` inside the workspace (a real one,
`python -m venv --copies`): a command replaces the environment's `python` binaries and points its
`pyvenv.cfg` at a planted standard library whose `os.py` announces itself — refused in the write
sandbox (the environment is one of codebelt's runtime paths, read-only there), done anyway outside
it, as a command a person approved would; then a one-shot jailed command and a one-shot sandboxed command with a mask (both start
through the stage) must run without the planted program ever running. And the table of where a
writable directory exposes the interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from codebelt.sandbox.stage_python import base_interpreter, exposed, reads

from .conftest import backend_unusable

SRC = Path(__file__).resolve().parents[2] / "src"
PWNED = "PWNED-by-the-workspace"

# run by the copied environment's python, as codebelt would be: attack, then start through the stage
SCRIPT = textwrap.dedent('''
    import json, os, subprocess, sys
    from contextlib import closing
    from pathlib import Path
    from codebelt.sandbox import Sandbox, SandboxConfig
    import codebelt.sandbox.manager as manager

    ws, tmpd, attack = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    Sandbox.resident_sandbox = False  # one bwrap per command: every start goes through the stage

    def run(wrapped):
        argv, env, preexec = wrapped[:3]
        return subprocess.run(argv, cwd=ws, env=env, preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                              start_new_session=True).stdout

    out = {"stage_python": manager.STAGE_PYTHON}
    with closing(Sandbox(SandboxConfig((ws,), tmpd, mode="bwrap", name="codebelt-test-stage"))) as sb:
        out["status"] = sb.status.reason
        secret = ws / "secret.txt"
        wrap = sb.wrapper(lambda: [secret])
        # in the sandbox the environment is read-only (a runtime path of codebelt's: protected.py)
        out["attack_sandboxed"] = run(wrap(["/bin/bash", "-c", attack], ws, dict(os.environ)))
        out["replaced_in_sandbox"] = b"PWNED" in (ws / ".venv" / "bin" / "python").read_bytes()
        # replaced anyway (a command a person approved): the stage must still not run it
        out["attack"] = subprocess.run(["/bin/bash", "-c", attack], capture_output=True, text=True).stdout
        out["sandboxed"] = run(wrap(["/bin/bash", "-c", "cat secret.txt; echo ran"], ws, dict(os.environ)))
        out["jail"] = sb.jail.reason
        jailed = sb.jail_wrapper([secret])(["/bin/bash", "-c", "cat secret.txt; echo ran"], ws, dict(os.environ))
        out["jailed"] = run(jailed)
    print(json.dumps(out))
''')


def _attack(venv: Path, planted: Path) -> str:
    """What the sandboxed command does: every `python*` of the environment replaced by a script
    that announces itself, and `pyvenv.cfg` pointed at a standard library whose os.py does."""
    lines = [f"for p in {venv}/bin/python*; do rm -f \"$p\"; printf '#!/bin/sh\\necho {PWNED} >&2\\n"
             f"exec {base_interpreter()} \"$@\"\\n' > \"$p\"; chmod +x \"$p\"; done",
             f"printf 'home = {planted}/bin\\ninclude-system-site-packages = false\\n' > {venv}/pyvenv.cfg",
             "echo attacked"]
    return "\n".join(lines)


def _planted_stdlib(root: Path) -> None:
    """A prefix whose standard library is the real one, links entry by entry, but for os.py."""
    real = Path(os.path.dirname(os.__file__))
    lib = root / "lib" / real.name
    lib.mkdir(parents=True)
    (root / "bin").mkdir()
    for entry in real.iterdir():
        if entry.name not in ("os.py", "__pycache__"):
            (lib / entry.name).symlink_to(entry)
    (lib / "os.py").write_text(f"import sys as _s\n_s.stderr.write('{PWNED}\\n')\n" + (real / "os.py").read_text())


def test_a_sandboxed_command_cannot_change_the_python_the_stage_runs(tmp_path):
    why = backend_unusable("bwrap")
    if why:
        pytest.skip(f"bwrap cannot work here: {why}")
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    tmpd = (tmp_path / "session-tmp").resolve()
    tmpd.mkdir()
    (ws / "secret.txt").write_text("the-secret\n")
    venv = ws / ".venv"
    subprocess.run([base_interpreter(), "-m", "venv", "--copies", "--without-pip", str(venv)], check=True,
                   timeout=120)
    assert not (venv / "bin" / "python").is_symlink()  # a copy, in the workspace
    _planted_stdlib(ws / "planted")
    site = sysconfig.get_paths()["purelib"]  # codebelt's dependencies, from the environment running the tests
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), site]))
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT, str(ws), str(tmpd), _attack(venv, ws / "planted")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert not out["replaced_in_sandbox"], out
    assert "attacked" in out["attack"], out  # the environment was replaced outside the sandbox
    assert PWNED in subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], capture_output=True, text=True,
                                   timeout=60).stderr  # and what it runs now is the planted program
    for name in ("sandboxed", "jailed"):
        assert PWNED not in out[name] and "the-secret" not in out[name] and "ran" in out[name], (name, out)
    assert not out["stage_python"].startswith(str(ws)), out


STDLIB = Path(os.path.realpath(os.path.dirname(os.__file__)))
PREFIX = Path(os.path.realpath(sys.base_prefix))
# (writable directory, whether it exposes the stage's interpreter)
CASES = {
    "the prefix": (PREFIX, True),
    "above the prefix": (PREFIX.parent, True),
    "/": (Path("/"), True),
    "the binary's directory": (Path(base_interpreter()).parent, True),
    "the standard library": (STDLIB, True),
    "a package of the standard library": (STDLIB / "encodings", True),
    "site-packages (left out by -S)": (STDLIB / "site-packages", False),
    "a workspace elsewhere": (Path("/nonexistent-workspace"), False),
}


@pytest.mark.parametrize("case", CASES)
def test_which_writable_directories_expose_the_stage_interpreter(case):
    writable, expected = CASES[case]
    assert (exposed(base_interpreter(), [writable]) is not None) == expected, (writable, reads(base_interpreter()))
