"""`jq`: jq's own option grammar; no module imports or file arguments read outside the operands."""

from __future__ import annotations

import re

from .verdict import Verdict, no

_JQ_MODULES = re.compile(r"\b(?:import|include)\b")


def jq_verdict(args: list[str]) -> Verdict:
    """jq cannot run programs, but it reads files: operands, `--rawfile/--slurpfile NAME FILE`,
    `-f FILE`, and modules (`import`, `-L DIR`)."""
    files: list[int] = []
    values: list[str] = []
    filter_text: str | None = None
    from_file = positional_args = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a == "--":
            for j in range(i + 1, n):
                if filter_text is None and not from_file:
                    filter_text = args[j]
                elif not positional_args:
                    files.append(j)
            break
        if a in ("--rawfile", "--slurpfile"):
            values += args[i + 2:i + 3]
            i += 3
            continue
        if a in ("--arg", "--argjson"):
            i += 3
            continue
        if a in ("--indent",):
            i += 2
            continue
        if a in ("--args", "--jsonargs"):
            positional_args = True
        elif a in ("--from-file",):
            from_file = True
        elif a == "--library-path" or a.startswith("-L"):
            values.append(a[2:] if a.startswith("-L") and len(a) > 2 else (args[i + 1] if i + 1 < n else ""))
            i += 1 if a.startswith("-L") and len(a) > 2 else 2
            continue
        elif a.startswith("--library-path="):
            values.append(a.partition("=")[2])
        elif a.startswith("-") and len(a) > 1:
            if not a.startswith("--") and "L" in a[1:]:
                return no("`jq -L` in a flag cluster (a module directory we cannot see)")
            if not a.startswith("--") and "f" in a[1:]:
                from_file = True
        elif filter_text is None and not from_file:
            filter_text = a
        elif not positional_args:
            files.append(i)
        i += 1
    if filter_text is not None and _JQ_MODULES.search(filter_text):
        return no("`jq` import/include loads modules or data files we cannot see")
    if values and any(v == "" for v in values):
        return no("`jq` option without its file")
    return Verdict(True, "read-only: `jq`", [k + 1 for k in files], values)
