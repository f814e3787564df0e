"""Which read-only git commands can print the contents of git's objects, and which paths that
output is limited to.

A Read deny rule hides a file from the tools and masks it in the read-only jail, but git's object
store keeps every committed, staged and stashed version of it: `git show HEAD:.env`, `git log -p`,
`git cat-file --batch-all-objects --batch` print them. This module states the facts for one git
argv — can it print object contents, and if its output is limited to some paths (pathspecs,
`HEAD:path`), which; the permission layer decides what a deny rule makes of them.

The model follows git's own grammar (revision.c, diff.c, builtin/log.c, grep.c, blame.c of git
2.39–2.51) and errs towards "contents, anywhere": an option we do not know never makes the output
smaller, an operand we cannot place counts as any object, and a pathspec counts only where git
itself would take the word as one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .git_args import parse_git, parse_git_at
from .options import any_long, long_takes_value

# Options that make a log-like command print file contents: patches, and the lines or commits
# that pickaxe (-S/-G) and line-log (-L) pick by content. Revision and diff options take no
# abbreviations (`git log --pat` is an error), so long names are compared whole.
PATCH_SHORT = frozenset("puUcmWSGL")
PATCH_LONG = frozenset({
    "patch", "patch-with-stat", "patch-with-raw", "unified", "binary", "cc", "dd", "remerge-diff",
    "diff-merges", "word-diff", "word-diff-regex", "color-words", "function-context", "check",
    "pickaxe-all", "pickaxe-regex", "combined-all-paths",
})
# Options that turn the default patch of `git diff`/`git show` into names or numbers.
LIMIT_SHORT = frozenset("sX")
LIMIT_LONG = frozenset({
    "stat", "numstat", "shortstat", "name-only", "name-status", "raw", "dirstat", "dirstat-by-file",
    "compact-summary", "summary", "no-patch", "quiet",
})
# Options after which a pathspec no longer bounds what is printed: renames followed out of it,
# the whole diff of every commit that touches it, every file of a pickaxe hit, line ranges that
# carry their own path.
UNBOUND_SHORT = frozenset("L")
UNBOUND_LONG = frozenset({"follow", "full-diff", "pickaxe-all"})
# Revision, diff and log options whose value may be the next word (git's parse_long_opt and
# parse-options entries with a required argument). Listing one that takes no value would hide an
# operand, so only those read in git's sources are here; one missing only makes us ask more.
REV_VALUE_SHORT = "nlISGOL"
REV_VALUE_LONG = frozenset({
    "max-count", "max-count-oldest", "skip", "max-age", "since", "since-as-filter", "after",
    "min-age", "before", "until", "date", "author", "committer", "grep-reflog", "grep", "encoding",
    "glob", "exclude", "exclude-hidden", "stat-width", "stat-name-width", "stat-graph-width",
    "stat-count", "ws-error-highlight", "src-prefix", "dst-prefix", "line-prefix",
    "inter-hunk-context", "output-indicator-new", "output-indicator-old", "output-indicator-context",
    "ignore-matching-lines", "diff-algorithm", "anchored", "word-diff-regex", "color-moved-ws",
    "rotate-to", "skip-to", "find-object", "diff-filter", "max-depth", "output", "decorate-refs",
    "decorate-refs-exclude",
})
# `--default REV` names the revision used when none is given: its value is a revision.
REV_DEFAULT = "default"
GREP_VALUE_SHORT = "efABCm"
GREP_VALUE_LONG = ("max-depth", "context", "before-context", "after-context", "threads", "max-count")
BLAME_VALUE_SHORT = "LS"
BLAME_VALUE_LONG = ("ignore-rev", "ignore-revs-file", "contents", "diff-algorithm", "date")
# cat-file modes and options that print no object contents (type, size, existence, ids).
CATFILE_META_SHORT = frozenset("tsezZ")
CATFILE_META_LONG = ("batch-check", "batch-all-objects", "buffer", "follow-symlinks", "unordered",
                     "allow-unknown-type", "use-mailmap", "mailmap", "no-use-mailmap", "no-mailmap")
CATFILE_CONTENT_LONG = ("batch", "batch-command", "textconv", "filters")
CATFILE_TYPES = frozenset({"blob", "tree", "commit", "tag"})


@dataclass(frozen=True)
class GitContent:
    """How one read-only subcommand relates to object contents.

    `kind`: "log" prints contents only with a patch option; "diff" prints a patch unless an
    option limits it to names or numbers; "always" prints file contents whatever the options.
    `operands`: "commits" (revisions walked: any object name is a commit or an error), "objects"
    (a blob named prints itself; a tree's paths are relative to that tree), "files" (blame: any
    operand may be the file whose lines are printed), "pathspecs" (status), "stash", "pattern"
    (grep: a pattern first, then objects; no pathspec means the current directory).
    """

    kind: str
    operands: str
    note: str
    blobs: bool = False  # a blob named prints itself whatever the options (show)


GIT_CONTENT: dict[str, GitContent] = {
    "log": GitContent("log", "commits", "prints patches with -p and the like"),
    "whatchanged": GitContent("log", "commits", "prints patches with -p and the like"),
    "reflog": GitContent("log", "commits", "prints patches with -p and the like"),
    "show": GitContent("diff", "objects", "prints a commit's patch or a blob", blobs=True),
    "diff": GitContent("diff", "objects", "prints a patch"),
    "diff-tree": GitContent("log", "objects", "prints patches with -p and the like"),
    "diff-index": GitContent("log", "objects", "prints patches with -p and the like"),
    "diff-files": GitContent("log", "objects", "prints patches with -p and the like"),
    "status": GitContent("log", "pathspecs", "prints the staged patch with -v"),
    "grep": GitContent("always", "pattern", "prints matching lines"),
    "blame": GitContent("always", "files", "prints the lines of a file"),
    "annotate": GitContent("always", "files", "prints the lines of a file"),
}
# Subcommands with a grammar of their own here: cat-file (modes), stash (list/show), the
# ref-listing commands (a `%(raw)` format atom prints the object a ref points at, blobs
# included) and config (`--blob` reads configuration out of any blob and prints it).
REF_LISTERS = frozenset({"for-each-ref", "branch", "tag"})


@dataclass
class ContentRead:
    """A git command that can print object contents. `paths` bounds what it prints: each
    (base, path) is relative to the directory git runs in ("cwd") or to the top of the working
    tree ("top"); None means any file of the repository."""

    reason: str
    paths: list[tuple[str, str]] | None


_COMMIT_SUFFIX = re.compile(r"(?:~\d*|\^\d*|\^\{commit\}|\^@|\^!|\^-\d*|@\{[^{}]*\})$")


def _commit(rev: str) -> bool:
    """Does this revision name a commit whatever the repository holds? HEAD and branches must
    point at commits; ancestry (`~N`, `^N`, `^@` …), `^{commit}` and reflog entries (`@{…}`) peel
    to one or fail; `:/text` searches commits. A plain name may be a tag pointing at a blob, or
    a blob's id."""
    if rev in ("HEAD", "@") or rev.startswith(":/"):
        return True
    if ".." in rev:
        sides = rev.replace("...", "..").split("..")
        return len(sides) == 2 and all(s == "" or _commit(s) for s in sides)
    if rev.startswith("^") and len(rev) > 1:
        return _commit(rev[1:])
    return _COMMIT_SUFFIX.search(rev) is not None


def _split_object_path(rev: str) -> tuple[str, str] | None:
    """`TREEISH:path` → (treeish, path), the colon outside `@{…}`/`^{…}`; None without one."""
    depth = 0
    for i, ch in enumerate(rev):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0:
            return rev[:i], rev[i + 1:]
    return None


def classify_revision(rev: str) -> tuple[str, tuple[str, str] | None]:
    """("commit" | "tree" | "path" | "object", (base, path) for "path").

    "tree" prints names only; "path" is the object at one path of a commit or of the index;
    "object" may be anything, a blob included (a tag can point at a blob, a hex id can be one)."""
    if rev.startswith(":/"):
        return "commit", None
    split = _split_object_path(rev)
    if split is not None:
        treeish, path = split
        if treeish == "":  # the index: `:path`, `:N:path`
            stage = re.match(r"^[0-3]:", path)
            path = path[2:] if stage else path
        elif not (_commit(treeish) or (treeish.endswith("^{tree}") and _commit(treeish[:-7]))):
            return "object", None  # a subtree's paths are not the repository's
        if path == "":
            return "tree", None
        base = "cwd" if path.startswith(("./", "../")) or path in (".", "..") else "top"
        return "path", (base, path)
    if rev.endswith("^{tree}"):
        return "tree", None
    return ("commit", None) if _commit(rev) else ("object", None)


def _pathspec_prefix(spec: str) -> str | None:
    """The literal directory part of a pathspec (what it can match lies beneath), or None when it
    has magic (`:(exclude)`, `:/`, `:!`) whose reach we do not model."""
    if spec.startswith(":"):
        return None
    parts = []
    for part in spec.split("/"):
        if any(ch in part for ch in "*?[\\"):
            break
        parts.append(part)
    return "/".join(parts) or "."


@dataclass
class _Words:
    flags: list[str]  # option words as given
    operands: list[str]  # before `--`
    after: list[str]  # after `--`
    default_rev: list[str]  # values of --default


def _split(args: list[str], short_value: str, long_value, abbrev: bool) -> _Words:
    """Options (with the values they take), operands before `--`, pathspecs after it."""
    w = _Words([], [], [], [])
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            w.after = args[i + 1:]
            break
        if a.startswith("--") and len(a) > 2:
            w.flags.append(a)
            name, eq, _ = a[2:].partition("=")
            if name == REV_DEFAULT and not eq and i + 1 < len(args):
                w.default_rev.append(args[i + 1])
                i += 1
            elif not eq and i + 1 < len(args) and (
                    long_takes_value(name, tuple(long_value)) if abbrev else name in long_value):
                i += 1
        elif a.startswith("-") and len(a) > 1:
            w.flags.append(a)
            for j, c in enumerate(a[1:], 1):
                if c in short_value:
                    if j == len(a) - 1 and i + 1 < len(args):
                        i += 1  # the value is the next word
                    break
        else:
            w.operands.append(a)
        i += 1
    return w


def _has(flags: list[str], short: frozenset[str], long: frozenset[str], abbrev: bool = False,
         short_value: str = "") -> str | None:
    """The first flag among `short`/`long`, as written, or None. A short cluster counts up to the
    first letter that takes a value (`-n5p` is `-n 5p`)."""
    for f in flags:
        if f.startswith("--"):
            name = f[2:].partition("=")[0]
            if name in long or (abbrev and any_long(name, long)):
                return f
        else:
            for c in f[1:]:
                if c in short:
                    return f
                if c in short_value:
                    break
    return None


def git_object_reads(argv: list[str], is_path: Callable[[str], bool]) -> ContentRead | None:
    """Whether `git …` (read-only, already judged so) can print object contents, and where.
    `is_path(word)`: does the word name an existing file or directory, relative to the directory
    git runs in (git takes such an operand before `--` as a pathspec, or refuses it as ambiguous)."""
    globals_, sub, _, problem, at = parse_git_at(argv)
    if problem or sub is None:
        return None
    args = argv[at + 1:]
    icase = any(g.startswith("--icase-pathspecs") for g in globals_)
    if sub == "cat-file":
        return _cat_file(args)
    if sub == "stash":
        if args[:1] == ["list"]:
            return _model("stash list", GitContent("log", "commits", "prints patches with -p"), args[1:], is_path, icase)
        if args[:1] == ["show"]:
            # a patch when stash.showPatch is set, which we do not read
            return _model("stash show", GitContent("diff", "stash", "prints a stash's patch"), args[1:], is_path, icase)
        return None
    if sub in REF_LISTERS:
        if any("%(raw" in a or "%(*raw" in a for a in args):
            return ContentRead(f"`git {sub}` with a %(raw) format prints the objects refs point at, blobs included", None)
        return None
    if sub == "config":
        if any(a.startswith("--") and any_long(a[2:].partition("=")[0], ("blob",)) for a in args):
            return ContentRead("`git config --blob` reads configuration out of any blob and prints it", None)
        return None
    model = GIT_CONTENT.get(sub)
    if model is None:
        return None
    return _model(sub, model, args, is_path, icase)


def _model(sub: str, m: GitContent, args: list[str], is_path: Callable[[str], bool], icase: bool) -> ContentRead | None:
    if m.operands == "files":
        w = _split(args, BLAME_VALUE_SHORT, BLAME_VALUE_LONG, True)
    elif m.operands == "pattern":
        w = _split(args, GREP_VALUE_SHORT, GREP_VALUE_LONG, True)
    else:
        w = _split(args, REV_VALUE_SHORT, REV_VALUE_LONG, sub == "status")
    if m.kind == "always":
        patch, reason = True, f"`git {sub}` {m.note}"
    else:
        if sub == "status":
            trigger = _has(w.flags, frozenset("v"), frozenset({"verbose"}), abbrev=True)
        else:
            trigger = _has(w.flags, PATCH_SHORT, PATCH_LONG, short_value=REV_VALUE_SHORT)
        limited = m.kind == "diff" and trigger is None and _has(
            w.flags, LIMIT_SHORT, LIMIT_LONG, short_value=REV_VALUE_SHORT) is not None
        patch = trigger is not None or (m.kind == "diff" and not limited)
        reason = f"`git {sub} {trigger}` prints file contents" if trigger else f"`git {sub}` {m.note}"
    if not patch and not m.blobs:
        return None
    if m.operands == "files":
        # blame prints the lines of the one file it is given; a revision taken for a file only
        # adds a path to check
        return ContentRead(reason, [("cwd", p) for p in (*w.operands, *w.after)])
    if m.operands == "stash":
        return ContentRead(reason, None)
    operands = list(w.operands)
    if m.operands == "pattern" and not _has(w.flags, frozenset("ef"), frozenset({"regexp", "file"}), abbrev=True):
        operands = operands[1:]  # the pattern
    if sub == "reflog" and operands[:1] == ["show"]:
        operands = operands[1:]
    if sub == "diff" and "--no-index" in w.flags:
        return ContentRead(reason, [("cwd", p) for p in (*operands, *w.after)])
    specs: list[str] = list(w.after)
    bounded: list[tuple[str, str]] = []  # objects at one path (`HEAD:x`)
    commits = trees = 0
    anything = False
    seen_path = False  # git takes operands as revisions until one names a file; the rest are paths
    for op in operands:
        if m.operands == "pathspecs" or seen_path or is_path(op):
            seen_path = True
            specs.append(op)
            continue
        kind = _place(op, m, bounded)
        anything |= kind == "object"
        commits += kind == "commit"
        trees += kind == "tree"
    for rev in w.default_rev:  # `--default REV`: the revision when none is given
        kind = _place(rev, m, bounded)
        anything |= kind == "object"
        commits += kind == "commit"
    if anything and (patch or m.blobs):
        return ContentRead(reason, None)
    if not patch:  # `git show --stat`: only the objects named print themselves
        return ContentRead("`git show` prints a blob it names, whatever the options", bounded) if bounded else None
    if sub == "show" and not (commits or trees or bounded):
        commits = 1  # `git show` alone shows HEAD
    if commits or not (trees or bounded or sub == "show"):
        # a commit's patch, or the index and working tree (diff, status, grep), over the pathspecs
        if specs and not icase and _has(w.flags, UNBOUND_SHORT, UNBOUND_LONG, short_value=REV_VALUE_SHORT) is None:
            prefixes = [_pathspec_prefix(s) for s in specs]
            if any(p is None for p in prefixes):
                return ContentRead(reason, None)
            bounded += [("cwd", p) for p in prefixes if p is not None]
        elif specs or m.operands != "pattern":
            return ContentRead(reason, None)
        else:
            bounded.append(("cwd", "."))  # git grep searches beneath the directory it runs in
    return ContentRead(reason, bounded) if bounded else None


def _place(rev: str, m: GitContent, bounded: list[tuple[str, str]]) -> str:
    """Classify one revision operand for model `m`; a path-bounded object joins `bounded`."""
    kind, where = classify_revision(rev)
    if m.operands == "commits":
        kind = "commit"  # a walk: anything else is an error, not output
    elif kind == "path" and where is not None:
        bounded.append(where)
    elif kind == "tree" and not m.blobs:
        kind = "object"  # a tree compared with another: every file under it
    return kind


def _cat_file(args: list[str]) -> ContentRead | None:
    w = _split(args, "", ("path",), True)
    content_flag = None
    for f in w.flags:
        if f.startswith("--"):
            name = f[2:].partition("=")[0]
            exact = name in CATFILE_META_LONG or name in CATFILE_CONTENT_LONG
            if (name in CATFILE_CONTENT_LONG) or (not exact and not any_long(name, CATFILE_META_LONG)) or (
                    not exact and any_long(name, CATFILE_CONTENT_LONG)):
                content_flag = content_flag or f
        elif set(f[1:]) - CATFILE_META_SHORT:
            content_flag = content_flag or f
    objects = [*w.operands, *w.after]
    if content_flag is None and len(objects) <= 1:
        return None
    reason = "`git cat-file` prints objects"
    if content_flag is not None and content_flag.startswith("--batch"):
        return ContentRead(f"`git cat-file {content_flag}` prints the objects named on its input, or every object", None)
    if objects and objects[0] in CATFILE_TYPES:
        objects = objects[1:]
    bounded: list[tuple[str, str]] = []
    for o in objects:
        kind, where = classify_revision(o)
        if kind == "path" and where is not None:
            bounded.append(where)
        elif kind == "object":
            return ContentRead(reason, None)
    return ContentRead(reason, bounded) if bounded else None


__all__ = ["ContentRead", "GIT_CONTENT", "classify_revision", "git_object_reads", "parse_git"]
