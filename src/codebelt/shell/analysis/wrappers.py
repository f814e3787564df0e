"""Wrappers looked through before a command is judged (`timeout`, `nice`, `env A=B`, `command`,
bare `xargs` …), and the command name a word stands for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .options import any_long


@dataclass
class Unwrapped:
    argv: list[str]  # the command that really runs
    offset: int  # where argv starts in the original argv
    env: list[tuple[str, str]] = field(default_factory=list)  # assignments, incl. `env A=B`
    wrappers: list[str] = field(default_factory=list)
    problem: str | None = None  # a wrapper used in a way we do not look through
    extra_args: bool = False  # xargs: the command gets more arguments from stdin


_NICE_SHORT_ARG = "n"
_TIMEOUT_SHORT_ARG = "sk"


def unwrap(argv: list[str], assignments: list[tuple[str, str]] | None = None) -> Unwrapped:
    u = Unwrapped(list(argv), 0, list(assignments or []))
    for _ in range(16):  # wrappers nest; a bound keeps pathological input cheap
        if not u.argv:
            return u
        name = command_name(u.argv[0])
        step = _WRAPPERS.get(name or "")
        if step is None:
            return u
        if u.extra_args:
            # `echo rm x | xargs nice`: the command the wrapper runs comes from stdin
            u.problem = f"`xargs {name}` runs a command taken from its input"
            return u
        skip = step(u.argv, u)
        if u.problem or skip is None:
            return u
        u.wrappers.append(name)  # type: ignore[arg-type]
        u.argv = u.argv[skip:]
        u.offset += skip
    u.problem = "too many nested wrappers"
    return u


def _skip_opts(argv: list[str], short_arg: str, long_ok: tuple[str, ...], long_arg: tuple[str, ...],
               short_ok: str, u: Unwrapped, name: str) -> int | None:
    """Index of the first operand after a wrapper's options; sets u.problem on unknown options."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1
        if a.startswith("--") and len(a) > 2:
            opt, eq, _ = a[2:].partition("=")
            full = any_long(opt, long_ok + long_arg)
            if full is None:
                u.problem = f"`{name} {a}` is not an option we look through"
                return None
            if full in long_arg and not eq:
                i += 1
        elif a.startswith("-") and len(a) > 1 and not (name in ("nice",) and a[1:].lstrip("-").isdigit()):
            for j, c in enumerate(a[1:], 1):
                if c in short_arg:
                    if j == len(a) - 1:
                        i += 1
                    break
                if c not in short_ok:
                    u.problem = f"`{name} -{c}` is not an option we look through"
                    return None
        elif a.startswith("-") and name == "nice":
            pass  # nice -10 cmd
        else:
            return i
        i += 1
    return i


def _w_plain(argv: list[str], u: Unwrapped) -> int | None:  # nohup, builtin
    return 2 if len(argv) > 1 and argv[1] == "--" else 1


def _w_time(argv: list[str], u: Unwrapped) -> int | None:
    # Only bash's keyword form (`-p`); /usr/bin/time -o FILE writes a file.
    return _skip_opts(argv, "", (), (), "p", u, "time")


def _w_nice(argv: list[str], u: Unwrapped) -> int | None:
    return _skip_opts(argv, "n", (), ("adjustment",), "", u, "nice")


def _w_timeout(argv: list[str], u: Unwrapped) -> int | None:
    i = _skip_opts(argv, "sk", ("foreground", "preserve-status", "verbose"), ("signal", "kill-after"), "v", u, "timeout")
    return None if i is None else i + 1  # the duration


def _w_stdbuf(argv: list[str], u: Unwrapped) -> int | None:
    return _skip_opts(argv, "ioe", (), ("input", "output", "error"), "", u, "stdbuf")


def _w_command(argv: list[str], u: Unwrapped) -> int | None:
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        if set(argv[i][1:]) - {"p", "v", "V"}:
            u.problem = f"`command {argv[i]}` is not an option we look through"
            return None
        if "v" in argv[i] or "V" in argv[i]:
            return None  # `command -v x` is a lookup: classified as the command `command`
        i += 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    return i


def _w_env(argv: list[str], u: Unwrapped) -> int | None:
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-i", "--ignore-environment", "-", "-0", "--null"):
            i += 1
        elif a in ("-u", "--unset"):
            i += 2
        elif a.startswith("--unset=") or (a.startswith("-u") and len(a) > 2):
            i += 1
        elif a == "--":
            i += 1
            break
        elif a.startswith("-"):
            # -S/--split-string re-splits a string into a command; -C changes directory; others unknown.
            u.problem = f"`env {a}` is not an option we look through"
            return None
        else:
            break
    while i < len(argv) and "=" in argv[i] and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[i]):
        k, _, v = argv[i].partition("=")
        u.env.append((k, v))
        i += 1
    if i >= len(argv):
        return None  # bare `env` prints the environment: classify `env` itself
    return i


# Options taking the next word as their value. GNU's -l, -i and -e take an optional value only
# when attached (-l5, -i{}, -eEND): in the next word they would swallow the command.
_XARGS_SHORT_ARG = "nLPsdIEa"
_XARGS_LONG = ("null", "no-run-if-empty", "verbose", "exit", "max-args", "max-lines", "max-procs",
               "max-chars", "delimiter", "replace", "eof", "arg-file", "show-limits")
_XARGS_LONG_ARG = ("max-args", "max-procs", "max-chars", "delimiter", "arg-file")  # --max-lines[=N], --eof[=S], --replace[=R]: attached only


def _w_xargs(argv: list[str], u: Unwrapped) -> int | None:
    i = _skip_opts(argv, _XARGS_SHORT_ARG, _XARGS_LONG, _XARGS_LONG_ARG, "0rtxile", u, "xargs")
    if i is None:
        return None
    u.extra_args = True
    if i >= len(argv):
        u.argv = argv + ["echo"]  # xargs with no command runs echo
    return i


_WRAPPERS = {
    "nohup": _w_plain, "builtin": _w_plain, "time": _w_time, "nice": _w_nice,
    "timeout": _w_timeout, "stdbuf": _w_stdbuf, "command": _w_command, "env": _w_env,
    "xargs": _w_xargs,
}

# -- command names ---------------------------------------------------------------------------------
_STANDARD_BIN_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")


def command_name(word: str) -> str | None:
    """The name to classify `word` as, or None if it is not a plain, trusted name.

    `/usr/bin/ls` is `ls`; `./ls` or `~/bin/ls` is someone's program; non-ASCII names
    (Cyrillic `с` in `саt`) are never a built-in set member.
    """
    if not word or not word.isascii() or not word.isprintable():
        return None
    if "/" in word:
        for d in _STANDARD_BIN_DIRS:
            if word.startswith(d) and "/" not in word[len(d):] and word[len(d):]:
                return word[len(d):]
        return None
    return word
