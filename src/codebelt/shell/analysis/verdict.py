"""A read-only verdict, and the generic flag model: a `Spec` names the flags that write or run
(banned), the flags that take values, how many operands and which are files read."""

from __future__ import annotations

from dataclasses import dataclass, field

from .options import Opt, any_long, scan


@dataclass
class Verdict:
    read_only: bool
    reason: str
    # Which operands are paths the command reads (indexes into the unwrapped argv).
    read_args: list[int] = field(default_factory=list)
    # Option values that look like paths (`-f /etc/x`, `--file=~/x`): read too.
    read_values: list[str] = field(default_factory=list)
    # Follows symlinks while walking directories (`grep -R`, `rg -L`, `find -L`): links in the
    # walked trees that point outside the workspace are reads too.
    follows_links: bool = False
    # Under xargs: the command gets file operands from stdin (checked against the producer).
    stdin_paths: bool = False
    # The program is one of EXACT_PROGRAMS: no argument of it writes, runs or connects, so the
    # verdict needs no OS jail behind it.
    exact: bool = False


def no(reason: str) -> Verdict:
    return Verdict(False, reason)


@dataclass(frozen=True)
class Spec:
    ban_short: str = ""
    ban_long: tuple[str, ...] = ()
    short_arg: str = ""
    long_arg: tuple[str, ...] = ()
    max_operands: int | None = None
    any_args: bool = False  # stays read-only whatever arguments xargs adds
    paths: str = "all"  # "all" operands are paths, "none", or "after_pattern"/"after_program"
    follow_short: str = ""  # flags that make it follow symlinks while recursing
    follow_long: tuple[str, ...] = ()
    why: str = "can write files or run programs"
    response_files: bool = False  # `@FILE` operands are files of options it reads (binutils)


def generic(name: str, args: list[str], spec: Spec) -> Verdict:
    opts = scan(args, spec.short_arg, spec.long_arg)
    operands: list[Opt] = []
    follows = False
    for o in opts:
        if (o.kind == "short" and o.name in spec.follow_short) or (
                o.kind == "long" and spec.follow_long and any_long(o.name, spec.follow_long)):
            follows = True
        if o.kind == "short" and o.name in spec.ban_short:
            return no(f"`{name} -{o.name}` {spec.why}")
        if o.kind == "long":
            banned = any_long(o.name, spec.ban_long)
            if banned:
                return no(f"`{name} --{banned}` {spec.why}")
        if o.kind == "operand":
            operands.append(o)
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return no(f"`{name}` with {len(operands)} file operands writes the last one")
    read_args: list[int] = []
    if spec.paths != "none":
        ops = operands
        if spec.paths == "after_pattern" and not any(
            (o.kind == "short" and o.name in "ef") or (o.kind == "long" and any_long(o.name, ("regexp", "file")))
            for o in opts
        ):
            ops = operands[1:]
        read_args = [o.index + 1 for o in ops]
        # option values that name files (`--file=/x`, `-f /x`) count too
        read_args += [i + 1 for i, a in enumerate(args) if a.startswith("-") and ("=/" in a or "=~" in a or "=.." in a)]
    # Every option value is a candidate: analyze reads the ones that name existing files
    # (`grep -f link-to-etc-passwd`), and those that start like a path.
    values = [o.value for o in opts if o.value]
    if spec.response_files:
        values += [o.name[1:] for o in operands if o.name.startswith("@") and len(o.name) > 1]
    return Verdict(True, f"read-only: `{name}`", read_args, values, follows)
