"""A parse worker process: reads chunks of (path, language) jobs on stdin, answers with each
file's facts on stdout. Started by `pool.Parser` as `python -P -m codebelt.intel.worker`.

Frames both ways are a 4-byte big-endian length and a `marshal` payload (plain tuples, lists,
strings, bytes and ints: no code, no pickle).
"""

from __future__ import annotations

import marshal
import os
import sys

from .frames import read_frame, write_frame

MAX_REQUEST = 64 << 20
MAX_MEMORY = 2 << 30  # address space: a file that makes a grammar balloon kills only this worker


def main() -> int:
    from .pool import Job, parse_one

    try:
        os.nice(5)  # a background build yields to the commands the agent runs
    except OSError:
        pass
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MAX_MEMORY, MAX_MEMORY))
    except (ImportError, OSError, ValueError):
        pass
    # The index that started this worker may die mid-chunk (killed, or its session ended): a
    # chunk can take many seconds under load, so the parent is looked at between files and an
    # orphan stops at once instead of parsing for nobody.
    parent = os.getppid()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        frame = read_frame(stdin, MAX_REQUEST)
        if frame is None:
            return 0
        max_bytes, jobs = marshal.loads(frame)
        out = []
        for path, language, size, mtime_ns in jobs:
            if os.getppid() != parent:
                return 0
            o = parse_one(Job("", path, language, size, mtime_ns), max_bytes)
            rows = o.rows
            out.append((o.mtime_ns, o.size, o.error,
                        rows.symbols if rows else None, rows.refs if rows else None,
                        bool(rows and rows.truncated)))
        write_frame(stdout, marshal.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
