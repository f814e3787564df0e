"""`awk`: programs that cannot run commands, write files or read files other than their operands."""

from __future__ import annotations

import re

from .options import any_long, long_is, scan
from .verdict import Verdict, no

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _awk_problem(text: str) -> str | None:
    t = text.replace("||", " ").replace(">=", " ")
    if "system" in t:
        return "`system()` runs a command"
    if "|" in t:
        return "a pipe `|` runs a command"
    if ">" in t:
        return "`>` may write a file"
    if "@" in t:
        return "`@` (gawk @load/@include/indirect call)"
    if "/inet" in t:
        return "a network special file"
    if "getline" in t and "<" in t:
        return "`getline < file` reads a file we cannot see"
    if "ARGV" in t or "ARGC" in t:
        return "changing ARGV/ARGC makes awk read other files"
    return None


def awk_verdict(args: list[str]) -> Verdict:
    opts = scan(args, "Fvf", ("field-separator", "assign", "file", "source", "include", "load", "exec"))
    program_given = False
    for o in opts:
        if o.kind == "short" and o.name in "fiElpdDoMW":
            if o.name == "M":
                continue
            return no(f"`awk -{o.name}` loads a program we cannot see or writes a file")
        if o.kind == "long":
            bad = any_long(o.name, ("file", "include", "load", "exec", "pretty-print", "profile", "dump-variables", "debug"))
            if bad:
                return no(f"`awk --{bad}` loads a program we cannot see or writes a file")
            if long_is(o.name, "source"):
                program_given = True
                p = _awk_problem(o.value or "")
                if p:
                    return no(f"awk program: {p}")
        if o.kind == "short" and o.name == "e":
            program_given = True
    operands = [o for o in opts if o.kind == "operand"]
    # Check every operand as if it were program text: a file named `a>b` is a false alarm, a
    # program we failed to spot would be a hole.
    for o in operands:
        p = _awk_problem(o.name)
        if p:
            return no(f"awk program: {p}")
    for o in opts:
        if o.kind == "short" and o.name == "v" and o.value and _awk_problem(o.value):
            return no("awk -v value contains shell metacharacters")
    files = operands if program_given else operands[1:]
    # awk takes `name=value` as an assignment only when `name` is an identifier; any other
    # operand (`a.b=c`, `../x=y`) is a file it reads.
    return Verdict(True, "read-only: `awk` program without system/pipes/redirection",
                   [o.index + 1 for o in files if not _ASSIGNMENT.match(o.name)])
