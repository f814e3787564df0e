"""`git`: global options and the read-only subcommands with their flag rules."""

from __future__ import annotations

import os

from .options import any_long, long_is, scan
from .verdict import Verdict, no

_GIT_GLOBAL_ARG = ("git-dir", "work-tree", "namespace", "super-prefix", "config-env", "exec-path", "attr-source", "list-cmds")
_GIT_GLOBAL_BANNED = ("config-env", "exec-path", "git-dir", "work-tree", "paginate", "super-prefix", "help", "attr-source")
_GIT_RO_SUBCOMMANDS = {
    "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "grep", "branch", "shortlog",
    "describe", "rev-list", "ls-tree", "show-ref", "remote", "tag", "config", "stash", "worktree",
    "reflog", "merge-base", "name-rev", "for-each-ref", "count-objects", "check-ignore", "whatchanged",
    "cat-file", "version", "diff-tree", "diff-files", "diff-index", "annotate", "cherry", "var",
}
# Flags that write a file or run a configured program (diff drivers, textconv, pagers).
_GIT_BANNED_LONG = ("output", "ext-diff", "textconv", "open-files-in-pager", "paginate", "help", "exec",
                    "upload-pack", "receive-pack", "filters", "edit")


def parse_git(argv: list[str]) -> tuple[list[str], str | None, str | None, str | None]:
    """(global options, subcommand, -C dir, problem) for `git …` argv (argv[0] is git)."""
    globals_, sub, cdir, problem, _ = parse_git_at(argv)
    return globals_, sub, cdir, problem


def git_subcommand_args(argv: list[str]) -> list[str]:
    """The words after git's subcommand (by position: a `-C` value may equal the subcommand)."""
    _, sub, _, _, at = parse_git_at(argv)
    return argv[at + 1:] if sub is not None else []


def parse_git_at(argv: list[str]) -> tuple[list[str], str | None, str | None, str | None, int]:
    """parse_git, and the index of the subcommand in argv."""
    globals_: list[str] = []
    i = 1
    cdir = None
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            return globals_, a, cdir, None, i
        globals_.append(a)
        if a == "-c":
            return globals_, None, cdir, "`git -c` sets configuration that can run programs (core.pager, diff drivers …)", i
        if a.startswith("-c") and len(a) > 2:
            return globals_, None, cdir, "`git -c` sets configuration that can run programs", i
        if a in ("-p", "--paginate"):
            return globals_, None, cdir, "`git --paginate` runs the configured pager", i
        if a.startswith("--") and len(a) > 3 and "bare".startswith(a[2:]):
            # the current directory becomes the repository: its config is whatever is there
            return globals_, None, cdir, "`git --bare` uses the current directory as the repository (and its config)", i
        if a == "-C" or a.startswith("-C"):
            if a == "-C":
                i += 1
            given = a[2:] if a != "-C" else (argv[i] if i < len(argv) else "")
            # each later relative -C is taken from the one before (`-C .. -C x` is ../x)
            if given:
                cdir = given if cdir is None or given.startswith("/") else os.path.join(cdir, given)
        elif a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            bad = any_long(name, _GIT_GLOBAL_BANNED)
            if bad:
                return globals_, None, cdir, f"`git --{bad}` can point git at configuration or programs we cannot see", i
            if not eq and any_long(name, _GIT_GLOBAL_ARG):
                i += 1
        i += 1
    return globals_, None, cdir, None, i


def git_verdict(argv: list[str]) -> Verdict:
    _, sub, _, problem = parse_git(argv)
    if problem:
        return no(problem)
    if sub is None:
        return no("`git` without a subcommand")
    if sub not in _GIT_RO_SUBCOMMANDS:
        return no(f"`git {sub}` is not read-only")
    args = git_subcommand_args(argv)
    opts = scan(args, "", ())
    for o in opts:
        if o.kind == "long":
            bad = any_long(o.name, _GIT_BANNED_LONG)
            if bad and not (bad == "edit" and sub != "config"):
                return no(f"`git {sub} --{bad}` writes a file or runs a program")
            if bad == "edit":
                return no(f"`git {sub} --edit` opens an editor")
    short = {o.name for o in opts if o.kind == "short"}
    flags = [a for a in args if a.startswith("-")]
    operands = [a for a in args if not a.startswith("-")]
    if sub == "grep" and "O" in short:
        return no("`git grep -O` opens files in a pager")
    if sub == "cat-file" and any(long_is(a[2:], "textconv") or long_is(a[2:], "filters") for a in flags if a.startswith("--")):
        return no("`git cat-file --textconv/--filters` runs configured programs")
    if sub == "branch":
        return _git_list_form(sub, args, ("list",), "l", ("contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format"),
                              ("all", "remotes", "verbose", "list", "show-current", "contains", "no-contains", "merged",
                               "no-merged", "points-at", "sort", "format", "color", "no-color", "column", "no-column",
                               "ignore-case", "abbrev", "no-abbrev", "omit-empty"), "arvi")
    if sub == "tag":
        return _git_list_form(sub, args, ("list",), "l", ("contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format"),
                              ("list", "contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format",
                               "color", "column", "no-column", "ignore-case", "omit-empty"), "in0123456789")
    if sub == "remote":
        if operands or any(f not in ("-v", "--verbose") for f in flags):
            return no("`git remote` is read-only only as `git remote [-v]`")
    if sub == "stash" and (not operands or operands[0] not in ("list", "show")):
        return no("`git stash` is read-only only as `git stash list|show`")
    if sub == "worktree" and (not operands or operands[0] != "list"):
        return no("`git worktree` is read-only only as `git worktree list`")
    if sub == "reflog" and operands and operands[0] not in ("show",) and operands[0] in ("expire", "delete", "drop", "exists", "write"):
        return no(f"`git reflog {operands[0]}` is not read-only")
    if sub == "config":
        readers = ("get", "get-all", "get-regexp", "get-urlmatch", "list", "show-origin", "show-scope",
                   "name-only", "null", "global", "local", "system", "worktree", "type", "bool", "int",
                   "path", "includes", "no-includes", "default", "file", "blob", "get-color", "get-colorbool")
        for f in flags:
            if f.startswith("--"):
                if not any_long(f[2:].partition("=")[0], readers):
                    return no(f"`git config {f}` is not read-only")
            elif set(f[1:]) - set("lz"):
                return no(f"`git config {f}` is not read-only")
        reading = any(f in ("-l",) or (f.startswith("--") and any_long(f[2:].partition("=")[0], ("get", "get-all", "get-regexp", "get-urlmatch", "list", "get-color", "get-colorbool"))) for f in flags)
        if not reading and not (operands and operands[0] in ("get", "list")):
            return no("`git config` is read-only only with --get/--list (or `get`/`list`)")
    return Verdict(True, f"read-only: `git {sub}`")


def _git_list_form(sub: str, args: list[str], list_long: tuple[str, ...], list_short: str,
                   valued: tuple[str, ...], allowed_long: tuple[str, ...], allowed_short: str) -> Verdict:
    listing = False
    operands = 0
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            full = any_long(name, allowed_long)
            if full is None or name not in allowed_long and len([x for x in allowed_long if x.startswith(name)]) > 1:
                return no(f"`git {sub} {a}` is not a listing option")
            if full in list_long:
                listing = True
            if full in valued and not eq and full not in ("contains", "no-contains", "merged", "no-merged", "points-at"):
                i += 1
            elif full in valued and not eq and i + 1 < len(args) and not args[i + 1].startswith("-"):
                i += 1  # the commit these take (optional for some)
        elif a.startswith("-") and len(a) > 1:
            for c in a[1:]:
                if c in list_short:
                    listing = True
                elif c not in allowed_short:
                    return no(f"`git {sub} -{c}` is not a listing option")
        else:
            operands += 1
        i += 1
    if operands and not listing:
        return no(f"`git {sub} NAME` creates or changes a {sub}")
    return Verdict(True, f"read-only: `git {sub}` (list form)")
