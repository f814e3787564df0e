"""Hostile inputs against the bounded paths, side by side with what they cost unbounded where that
can still be run (Python's `re` on small inputs). Run from the repository root:

    .venv/bin/python benchmarks/bench_bounded_work.py

Prints one line per case: time, and the peak RSS of the child that ran it where memory is the
point. Numbers go to docs/security.md ("Bounded work, fourth round").
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "files"))


def timed(label: str, fn) -> None:
    start = time.perf_counter()
    fn()
    print(f"{label:<58} {(time.perf_counter() - start) * 1000:10.1f} ms")


def child(label: str, code: str) -> None:
    """Run `code` in a child and report its time and peak RSS (getrusage of the child)."""
    import resource

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{label:<58} {(time.perf_counter() - start) * 1000:10.1f} ms   peak RSS {rss:8.0f} MB (max so far)")


def main() -> None:
    from codebelt import linear_regex
    from codebelt.errors import EditError, PatchApplyError
    from codebelt.files.matching import replace
    from codebelt.patch import apply_patch

    for n in (20, 22, 24):
        timed(f"python re  (a+)+$  on {n} a's + '!'", lambda n=n: re.search(r"(a+)+$", "a" * n + "!"))
    timed("RE2        (a+)+$  on 1,000,000 a's + '!'",
          lambda: linear_regex.compile(r"(a+)+$").search("a" * 1_000_000 + "!"))

    work = Path(tempfile.mkdtemp())
    (work / "r.txt").write_text("x\n" * 40_000)
    patch = "*** Begin Patch\n*** Update File: r.txt\n@@\n" + " x\n" * 5_000 + "-missing\n+added\n*** End Patch\n"

    def failing_patch() -> None:
        try:
            apply_patch(patch, work)
        except PatchApplyError:
            pass

    def failing_edit() -> None:
        try:
            replace("x = 1\n" * 40_000, "    x = 1\n" * 5_000 + "    missing\n", "y")
        except EditError:
            pass

    timed("ApplyPatch failure: 5,000 context lines vs 40,000 equal", failing_patch)
    timed("Edit no-match diagnosis: 5,000 lines vs 40,000 equal", failing_edit)

    from test_media_bombs import png_bomb  # the same generator the tests use

    (work / "bomb.png").write_bytes(png_bomb(19_000, 19_000))
    child("Read of a 19,000 x 19,000 PNG bomb (refused)",
          "from pathlib import Path\nfrom codebelt.files.media import load_image, MediaError\n"
          f"try:\n    load_image(Path({str(work / 'bomb.png')!r}), 'image/png')\nexcept MediaError:\n    pass\n")
    from conftest import make_pdf

    (work / "three.pdf").write_bytes(make_pdf(["one", "two", "three"]))
    from codebelt.files.pdf import read_pdf

    timed("Read of a 3-page PDF in the bounded child (first)", lambda: read_pdf(work / "three.pdf", None, 100_000))
    timed("Read of a 3-page PDF in the bounded child (again)", lambda: read_pdf(work / "three.pdf", None, 100_000))


if __name__ == "__main__":
    main()
