"""PDF text for Read, extracted in a child process bounded in memory, CPU and wall time.

pypdf is pure Python and a PDF is a program of sorts: a page whose content stream inflates to
gigabytes, a page tree of millions of pages, objects nested thousands deep. In the server's own
process nothing could stop such a parse (a thread cannot be interrupted) and nothing could cap
its memory. So the parse runs in `python -m codebelt.files.pdf` under RLIMIT_AS, RLIMIT_CPU and
a wall-clock timeout, in its own process group, and answers with one JSON document on stdout;
whatever goes wrong there, the caller gets a MediaError that says what. Measured cost: one
interpreter start and pypdf import per Read of a PDF, about 0.3 s on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import MediaError
from .media import MAX_PDF_PAGES_PER_CALL, PDF_PAGES_WITHOUT_RANGE, parse_pages

MEMORY_BYTES = 1 << 30  # address space of the child (Python and pypdf take ~60 MB of it)
CPU_SECONDS = 30
WALL_SECONDS = 60
OUTPUT_BYTES = 8 << 20  # the child's answer is read up to this much


@dataclass
class PdfText:
    """What Read shows of a PDF: its page count and the text of the pages asked for, in order,
    until `max_chars` was reached (`wanted` lists every page asked for)."""

    page_count: int
    wanted: list[int] = field(default_factory=list)
    texts: dict[int, str] = field(default_factory=dict)
    too_many_pages: bool = False  # no range given and more than PDF_PAGES_WITHOUT_RANGE pages


def read_pdf(source: Any, pages: str | None, max_chars: int,
             cancelled: Callable[[], bool] | None = None) -> PdfText:
    """Page count and page texts (pages "3", "1-5", "1,3-4", or None for all of a short PDF) of
    `source`: an open file (`files.beneath.Opened`: the child reads that very file, as its
    standard input, never the path again) or a path. Read in a bounded child process; raises
    MediaError."""
    opened = hasattr(source, "fd")
    where = "-" if opened else str(source)
    argv = [sys.executable, "-I", "-m", __name__, where, pages if pages is not None else "", str(max_chars)]
    try:
        proc = subprocess.Popen(
            argv, stdin=source.fd if opened else subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"}, close_fds=True, start_new_session=True,
            preexec_fn=_limits(),
        )
    except OSError as e:
        raise MediaError(f"could not start the PDF reader ({e.strerror or e})") from None
    out = _collect(proc, cancelled)
    if proc.returncode != 0 or not out:
        raise MediaError(_failure(proc.returncode))
    try:
        answer = json.loads(out)
    except ValueError:
        raise MediaError("the PDF reader gave no usable answer") from None
    if "error" in answer:
        raise MediaError(answer["error"])
    return PdfText(answer["count"], answer["wanted"], {int(k): v for k, v in answer["texts"].items()},
                   answer["too_many"])


def _limits() -> Callable[[], None]:
    """The child's limits, set between fork and exec: prepared here, in the parent, so that the
    child imports and looks up nothing (a module another thread was importing at fork time stays
    locked in the child forever)."""
    pairs = ((resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES)), (resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1)),
             (resource.RLIMIT_FSIZE, (0, 0)), (resource.RLIMIT_CORE, (0, 0)))
    setrlimit = resource.setrlimit

    def apply() -> None:
        for which, pair in pairs:
            setrlimit(which, pair)

    return apply


def _collect(proc: subprocess.Popen, cancelled: Callable[[], bool] | None) -> bytes:
    """The child's stdout (at most OUTPUT_BYTES), waiting at most WALL_SECONDS; a cancelled call
    or a child over time is killed with its group."""
    chunks: list[bytes] = []

    def drain() -> None:
        assert proc.stdout is not None
        total = 0
        while True:
            data = proc.stdout.read(65536)
            if not data:
                return
            if total < OUTPUT_BYTES:
                chunks.append(data[:OUTPUT_BYTES - total])
            total += len(data)

    reader = threading.Thread(target=drain, name="codebelt-pdf-read", daemon=True)
    reader.start()
    waited = 0.0
    try:
        while True:
            try:
                proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                waited += 0.1
                if waited >= WALL_SECONDS or (cancelled is not None and cancelled()):
                    _kill(proc)
                    proc.wait()
                    if waited >= WALL_SECONDS:
                        raise MediaError(f"reading the PDF took longer than {WALL_SECONDS} s; it was stopped") from None
                    raise MediaError("reading the PDF was cancelled") from None
    finally:
        reader.join(5)
        if proc.stdout is not None:
            proc.stdout.close()
    return b"".join(chunks)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _failure(code: int | None) -> str:
    if code in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"reading the PDF needed more than {CPU_SECONDS} s of CPU time; it was stopped"
    if code == 3:
        return f"reading the PDF needed more than {MEMORY_BYTES >> 20} MB of memory; it was stopped"
    if code is not None and code < 0:
        return f"the PDF reader crashed on this file (signal {-code})"
    return f"the PDF reader failed on this file (exit code {code})"


# -- the child -------------------------------------------------------------------------------

def _extract(path: str, pages: str, max_chars: int) -> dict:
    from pypdf import PdfReader

    try:
        # "-": the file the parent opened, handed over as standard input (a regular file: seekable).
        reader = PdfReader(os.fdopen(0, "rb", closefd=False) if path == "-" else path)
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:
                return {"error": "the PDF is encrypted with a password"}
        count = len(reader.pages)
    except RecursionError:
        return {"error": "cannot parse the PDF: its objects are nested too deeply"}
    except Exception as e:
        return {"error": f"cannot parse the PDF ({type(e).__name__}: {e})"}
    if not pages and count > PDF_PAGES_WITHOUT_RANGE:
        return {"count": count, "wanted": [], "texts": {}, "too_many": True}
    try:
        wanted = parse_pages(pages, count) if pages else list(range(1, count + 1))
    except MediaError as e:
        return {"error": str(e)}
    texts: dict[int, str] = {}
    used = 0
    for p in wanted[:MAX_PDF_PAGES_PER_CALL]:
        if used > max_chars:
            break
        try:
            text = (reader.pages[p - 1].extract_text() or "").strip()
        except RecursionError:
            text = "(text extraction failed on this page: its objects are nested too deeply)"
        except MemoryError:
            raise
        except Exception as e:
            text = f"(text extraction failed on this page: {type(e).__name__})"
        text = text[:max_chars + 1] or "(no extractable text on this page; it may be a scanned image)"
        texts[p] = text
        used += len(text)
    return {"count": count, "wanted": wanted, "texts": texts, "too_many": False}


def main(argv: list[str]) -> int:
    path, pages, max_chars = argv[0], argv[1], int(argv[2])
    try:
        answer = _extract(path, pages, max_chars)
    except MemoryError:
        return 3
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
