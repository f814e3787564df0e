"""Unified diffs of a patch's changes, built from its line edits (linear: no matching on big files)."""

from __future__ import annotations

from .text import Edit

MAX_DIFF_CHARS = 100_000


def _range(start: int, count: int) -> str:
    if count == 1:
        return f"{start + 1}"
    return f"{start + 1 if count else start},{count}"


def unified_diff(old_name: str, new_name: str, old: list[str], edits: list[Edit], context: int = 3) -> str:
    if not edits:
        return ""
    groups: list[list[Edit]] = [[edits[0]]]
    for e in edits[1:]:
        if e[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(e)
        else:
            groups.append([e])
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    delta = 0
    for g in groups:
        a0 = max(0, g[0][0] - context)
        a1 = min(len(old), g[-1][1] + context)
        body: list[str] = [" " + s for s in old[a0:g[0][0]]]
        removed = added = 0
        for i, (s, e, new) in enumerate(g):
            body.extend("-" + x for x in old[s:e])
            body.extend("+" + x for x in new)
            removed += e - s
            added += len(new)
            nxt = g[i + 1][0] if i + 1 < len(g) else a1
            body.extend(" " + x for x in old[e:nxt])
        old_count = a1 - a0
        new_count = old_count - removed + added
        out.append(f"@@ -{_range(a0, old_count)} +{_range(a0 + delta, new_count)} @@\n")
        out.extend(x + "\n" for x in body)
        delta += added - removed
    return "".join(out)


def cap(diff: str) -> tuple[str, bool]:
    if len(diff) <= MAX_DIFF_CHARS:
        return diff, False
    cut = diff.rfind("\n", 0, MAX_DIFF_CHARS) + 1
    rest = diff[cut:].count("\n")
    return diff[:cut] + f"… diff truncated ({rest} more lines)\n", True


def whole_file_diff(old_name: str, new_name: str, old: list[str], new: list[str]) -> str:
    if not old and not new:
        return ""
    return unified_diff(old_name, new_name, old, [(0, len(old), new)], context=0)
