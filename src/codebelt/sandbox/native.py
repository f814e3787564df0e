"""codebelt's side of the resident's compiled request path (`_zygote.c`): which extension the
resident loads, and whether it loads one at all.

The resident runs `python -I -S` inside bwrap with the standard library only, so it cannot import
codebelt's package; it must load exactly the extension codebelt imported, never one a command or
the checkout put in its place. codebelt opens the file it imported itself (checked to be that
very file, by identity, since the import) and hands the resident the descriptor, which loads it
from /proc/self/fd/N: no path is looked up inside the jail. The file must not lie where a
sandboxed command may write (an editable install in the workspace): a command could rewrite it in
place before a resident starts, and the next one would run its code with the jail's capability —
there the resident keeps its Python path, as the stage's interpreter is kept out of such places
(stage_python.exposed).

CODEBELT_RESIDENT_NATIVE=0 in codebelt's environment when a resident starts keeps it on the
Python path (read by codebelt, never by the resident from a command's environment).
"""

from __future__ import annotations

import os
from pathlib import Path

try:
    from . import _zygote
except ImportError:  # not built here (no compiler at install): the Python path
    _zygote = None

_IDENTITY: "tuple[int, int] | None" = None
if _zygote is not None:
    try:
        _st = os.stat(_zygote.__file__)
        _IDENTITY = (_st.st_dev, _st.st_ino)
    except (OSError, TypeError):
        _zygote = None


def available() -> bool:
    """The extension was built and imported here."""
    return _zygote is not None


def why_not(writable: "tuple[Path, ...] | list[Path]") -> str | None:
    """Why a resident should not load the extension (None: it should)."""
    if not available():
        return "the extension is not built"
    if os.environ.get("CODEBELT_RESIDENT_NATIVE", "1") == "0":
        return "CODEBELT_RESIDENT_NATIVE=0"
    here = Path(os.path.realpath(_zygote.__file__))
    for w in writable:
        w = Path(os.path.realpath(w))
        if w == here or w in here.parents:
            return f"{here} lies in {w}, where a sandboxed command may write"
    return None


def open_extension(writable: "tuple[Path, ...] | list[Path]") -> int | None:
    """A read-only descriptor of the extension codebelt imported, for a resident to load (passed
    to bwrap, which keeps it for the resident); None when it should keep its Python path."""
    if why_not(writable) is not None:
        return None
    try:
        fd = os.open(_zygote.__file__, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != _IDENTITY:  # replaced since codebelt imported it
        os.close(fd)
        return None
    return fd
