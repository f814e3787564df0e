"""`find`: the predicates that only look (everything else — -exec, -delete, -fprint … — is not read-only)."""

from __future__ import annotations

from .verdict import Verdict, no


def find_verdict(args: list[str]) -> Verdict:
    # -files0-from: starting points listed in a file we do not see
    banned = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf", "-files0-from"}
    for a in args:
        if a in banned:
            return no(f"`find {a}` runs programs or writes files")
        if a.startswith("-") and a.lstrip("-") in {b[1:] for b in banned}:
            return no(f"`find {a}` runs programs or writes files")
    starts = []
    for i, a in enumerate(args):
        if a.startswith("-") or a in ("(", "!", ")"):
            if a in ("-H", "-L", "-P") or a.startswith("-O") or a == "-D":
                continue
            break
        starts.append(i + 1)
    # -newer X, -samefile X … look at another file; -L/-follow walk into linked directories
    values = [args[i + 1] for i, a in enumerate(args[:-1])
              if a in ("-newer", "-anewer", "-cnewer", "-samefile") or (a.startswith("-newer") and len(a) == 8)]
    follows = any(a in ("-L", "-follow") for a in args)
    return Verdict(True, "read-only: `find` without -exec/-delete/-fprint", starts, values, follows)
