"""The Python that runs codebelt's programs inside bwrap: the stage (stage.py, which checks the
masks and adds the jail's Landlock layer before a one-shot command) and the residents
(resident.py, which hold the capability to mount and build each command's view).

They run before the checks they make, so no sandboxed command may be able to change what they
run. `python -I -S -c` reads, at start (strace): the binary, its shared libpython, the standard
library's modules it imports (`encodings`, and whatever the program imports) from the prefix, and looks for
files that would move the prefix or the module path — `pyvenv.cfg` beside the binary or one
directory up, `<binary>._pth`, `pybuilddir.txt` beside it, `lib/pythonXY.zip` under the prefix.
A virtual environment made with `--copies` (or codebelt installed into a project's own
environment) has its binary and its `pyvenv.cfg` in the workspace, where a command in the write
sandbox may write: the next command's stage would be the command's program. So the stage runs
on the interpreter the environment was made from (its real path: a venv's `python` is a link or
a copy of it), which needs nothing of the environment (`-S`: no site-packages), and only when
none of what it reads lies where a command may write (`exposed`); else bwrap is not used.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path


def base_interpreter() -> str:
    """The interpreter codebelt's environment was made from, by its real path."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _libpython() -> Path | None:
    """The shared libpython this process runs on (None: a static build)."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").partition("/")[2]
                if path and "/libpython" in "/" + path:
                    return Path(os.path.realpath("/" + path))
    except OSError:
        pass
    return None


@cache
def reads(python: str) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(paths whose every ancestor matters, directories whose contents matter) for `python`
    started with `-I -S`: a command that may write a directory above the binary, its prefix,
    the standard library or libpython can replace them (or plant a `pyvenv.cfg`, a `._pth`, a
    `pythonXY.zip` that moves the module path); one that may write inside the standard library
    can replace a module the stage imports (not below site-packages, which `-S` leaves out)."""
    binary = Path(python)
    stdlib = Path(os.path.realpath(os.path.dirname(os.__file__)))
    prefixes = {binary.parent.parent, *(Path(os.path.realpath(p)) for p in (sys.base_prefix, sys.base_exec_prefix))}
    tops = [binary, binary.parent, *prefixes, *(p / "lib" for p in prefixes), stdlib]
    lib = _libpython()
    if lib is not None:
        tops.append(lib)
    return tuple(dict.fromkeys(tops)), (stdlib,)


def exposed(python: str, writable: "list[Path] | tuple[Path, ...]") -> str | None:
    """Why a command that may write `writable` could change what `python -I -S` runs, or None."""
    tops, inside = reads(python)
    for w in writable:
        w = Path(os.path.realpath(w))
        for p in tops:
            if p == w or w in p.parents:
                return f"{p} lies in {w}, where a sandboxed command may write"
        for d in inside:
            if d in w.parents and not {"site-packages", "dist-packages"} & set(w.relative_to(d).parts[:1]):
                return f"{w}, where a sandboxed command may write, is inside {d}"
    return None
