"""`sed`: scripts whose every command only prints (no `w`, `e`, `s///w|e`, `r`/`R` of other files)."""

from __future__ import annotations

import re

from .verdict import Verdict, no

_SED_LONG = ("quiet", "silent", "expression", "file", "in-place", "line-length", "null-data",
             "zero-terminated", "regexp-extended", "separate", "sandbox", "debug", "posix",
             "follow-symlinks", "unbuffered", "binary", "help", "version", "unbuffered")


def sed_verdict(args: list[str]) -> Verdict:
    scripts: list[str] = []
    operands: list[int] = []
    i = 0
    after_dd = False
    while i < len(args):
        a = args[i]
        if after_dd or not a.startswith("-") or a == "-":
            operands.append(i)
        elif a == "--":
            after_dd = True
        elif a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            full = [n for n in _SED_LONG if n.startswith(name)]
            if name in _SED_LONG:
                full = [name]
            if len(set(full)) != 1:
                return no(f"`sed {a}` is not an option we recognise")
            full_name = full[0]
            if full_name in ("in-place", "file"):
                return no(f"`sed --{full_name}` edits files or runs a script we cannot see")
            if full_name in ("expression", "line-length"):
                if not eq:
                    i += 1
                    value = args[i] if i < len(args) else ""
                if full_name == "expression":
                    scripts.append(value)
        else:
            j = 1
            while j < len(a):
                c = a[j]
                if c in "if":
                    return no(f"`sed -{c}` edits files in place or runs a script we cannot see")
                if c in "el":
                    value = a[j + 1:]
                    if not value:
                        i += 1
                        value = args[i] if i < len(args) else ""
                    if c == "e":
                        scripts.append(value)
                    break
                if c not in "nErsuzb":
                    return no(f"`sed -{c}` is not an option we recognise")
                j += 1
        i += 1
    if not scripts:
        if not operands:
            return no("`sed` without a script")
        scripts.append(args[operands.pop(0)])
    for s in scripts:
        bad = sed_script_problem(s)
        if bad:
            return no(f"sed script: {bad}")
    return Verdict(True, "read-only: `sed` script only prints", [k + 1 for k in operands])


_SED_ADDR = re.compile(r"\s*(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(?P<d>.)(?:(?!(?P=d))[^\\\n]|\\.)*(?P=d)[IM]*)")
_SED_SIMPLE = set("pPlq=QnNdDgGhHxzF")


def sed_script_problem(script: str) -> str | None:
    """None if the sed script only prints/transforms its input; else what makes it unsafe.

    A strict grammar: addresses, then one of p P l = q Q n N d D g G h H x z F { } ! b t T :
    s///flags (flags g p i I m M and digits) y/// a i c (text). w W r R e and s///w,e refuse.
    """
    i, n = 0, len(script)
    while i < n:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            break
        if script[i] == "#":
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        # up to two addresses
        for k in range(2):
            m = _SED_ADDR.match(script, i)
            if m and m.end() > i and script[i:m.end()].strip():
                i = m.end()
            elif k == 1 and script[i - 1:i] == "," and i < n and script[i] in "+~":
                m2 = re.match(r"[+~]\d+", script[i:])
                if not m2:
                    return "an address we do not recognise"
                i += m2.end()
            if i < n and script[i] == "," and k == 0:
                i += 1
                continue
            break
        while i < n and script[i] in " \t":
            i += 1
        while i < n and script[i] in "! \t":
            i += 1
        if i >= n:
            return "an address without a command"
        c = script[i]
        i += 1
        if c in _SED_SIMPLE or c in "{}":
            if c in "qQlL" :
                m = re.match(r"\s*\d*", script[i:])
                i += m.end() if m else 0
            continue
        if c in "btT:":
            # GNU sed ends a label at whitespace or `;`: `:x e id` is the label x, then `e id`.
            j = i
            while j < n and script[j] in " \t":
                j += 1
            while j < n and script[j] not in " \t;\n}":
                j += 1
            i = j
            continue
        if c in "aic":
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "sy":
            if i >= n or script[i] in "\\\n":
                return f"`{c}` with a delimiter we do not recognise"
            d = script[i]
            i += 1
            for _ in range(2):
                while i < n and script[i] != d:
                    if script[i] == "\\":
                        i += 1
                    elif script[i] == "\n" and c == "s":
                        pass
                    i += 1
                if i >= n:
                    return f"an unterminated `{c}` command"
                i += 1
            if c == "s":
                m = re.match(r"[gpiImM0-9]*", script[i:])
                i += m.end() if m else 0
                if i < n and script[i] in "we":
                    return "`s///w` writes a file" if script[i] == "w" else "`s///e` runs a command"
                if i < n and script[i] not in " \t\n;}":
                    return f"the s flag `{script[i]}` is not allowed"
            continue
        if c in "wW":
            return f"`{c}` writes a file"
        if c in "rR":
            return f"`{c}` reads a file into the output"
        if c == "e":
            return "`e` runs a command"
        if c == "v":
            continue
        return f"the sed command `{c}` is not allowed"
    return None
