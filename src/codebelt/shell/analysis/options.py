"""A small getopt-style scanner for classifying argv: short clusters, long options, `--`.

It errs on the side of seeing more flags, never fewer: an option is assumed to take no value
unless listed, so a value that looks like a flag is still inspected; long options are matched
the way GNU getopt_long does (any unambiguous prefix: `--outp` is `--output`), and a given
prefix of a banned name counts as that banned name.
"""

from __future__ import annotations

from typing import NamedTuple


class Opt(NamedTuple):
    kind: str  # "short" | "long" | "operand"
    name: str  # the letter, the long name as given (without `--`), or the operand text
    value: str | None = None
    index: int = 0  # position in the scanned args


def scan(args: list[str], short_arg: str = "", long_arg: tuple[str, ...] = (),
         permute: bool = True) -> list[Opt]:
    """Split args into options and operands. `long_arg` names options taking a value."""
    out: list[Opt] = []
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a == "--":
            out.extend(Opt("operand", x, None, j) for j, x in enumerate(args[i + 1:], i + 1))
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, value = a[2:].partition("=")
            if not eq and long_takes_value(name, long_arg) and i + 1 < n:
                value, eq = args[i + 1], "="
                i += 1
            out.append(Opt("long", name, value if eq else None, i))
        elif a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                if c in short_arg:
                    value = a[j + 1:]
                    if not value and i + 1 < n:
                        value = args[i + 1]
                        i += 1
                    out.append(Opt("short", c, value, i))
                    break
                out.append(Opt("short", c, None, i))
                j += 1
        else:
            out.append(Opt("operand", a, None, i))
            if not permute:
                out.extend(Opt("operand", x, None, j) for j, x in enumerate(args[i + 1:], i + 1))
                break
        i += 1
    return out


def long_takes_value(given: str, names: tuple[str, ...]) -> bool:
    matches = [x for x in names if x.startswith(given)] if given else []
    return given in names or len(matches) == 1


def long_is(given: str, name: str, min_len: int = 1) -> bool:
    """Could `--given` mean `--name`? (exact, or a prefix of it as getopt_long accepts)."""
    return len(given) >= min_len and name.startswith(given)


def any_long(given: str, names) -> str | None:
    for name in names:
        if long_is(given, name):
            return name
    return None
