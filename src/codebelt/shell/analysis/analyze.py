"""analyze(command, cwd, workspace) → Analysis: what a shell command line would do.

The contract other parts use: the Bash tool reads `.read_only` (concurrency safety), the
permission engine (permissions/bash.py) decides from the per-command verdicts, and
`codebelt check` prints them. No decision is made here — only facts: parsed commands,
read-only or not and why, dangerous or not, files written by redirections, files read,
directory changes.
"""

from __future__ import annotations

import fnmatch
import glob as _glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...files.gitrepo import GIT_ELSEWHERE, find_repository
from . import danger as _danger
from .parse import Script, SimpleCommand, parse, word_value
from .git_objects import git_object_reads
from .programs import NAMES_ONLY
from .readonly import classify_argv, command_name, dangerous_env, parse_git, unwrap

MAX_COMMAND_CHARS = 10_000  # longer commands always ask: too long to review
_MAX_PARSE_CHARS = 200_000  # beyond this we do not even parse; only text patterns are checked
# Redirect targets that are not files.
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"})
_HOME_WORD = re.compile(r"""["']?\$\{?HOME\}?/?\*?["']?""")
_HARMLESS_READS = frozenset({"/dev/null", "/dev/stdin", "/dev/zero", "/dev/urandom", "/dev/random", "-"})
_MAX_GLOB_MATCHES = 2_000  # matches of one glob that are resolved and checked
_MAX_GLOB_LEVELS = 4  # wildcard path components of one glob the analyzer expands
# Paths that name the running process's view of the system, not files of their own.
_PROCESS_VIEWS = ("/proc/", "/dev/fd/", "/dev/stdin", "/dev/stdout", "/dev/stderr")
_MAX_LINK_SCAN = 50_000  # directory entries looked at for symlinks leading out of the workspace
# Pipeline stages whose output is file names from the workspace (for `… | xargs cat`), and
# filters that only select or reorder whole lines.
_NAME_PRODUCERS = frozenset({"find", "ls", "rg", "grep", "egrep", "fgrep", "git"})
_LINE_FILTERS = frozenset({"grep", "egrep", "fgrep", "head", "tail", "sort", "uniq"})
_ODD_NAME = re.compile(r"[\s'\"\\]")


def _may_be_git_dir(p: Path) -> bool:
    """Whether git could take `p` for a repository directory. Git's own test is looser than it
    looks: `objects` and `refs` need only be accessible (an executable *file* will do), a HEAD
    that is a symlink into refs/ may dangle, and a `commondir` file moves objects and refs
    elsewhere. This answers yes whenever each name merely exists — a superset of git's rule, so
    it can only ask more often, never less."""
    if not os.path.lexists(p / "HEAD"):
        return False
    common = p
    try:
        text = (p / "commondir").read_text(errors="replace").strip()
        if text:
            common = p / text
    except OSError:
        pass
    return all(os.path.lexists(common / n) or os.path.lexists(p / n) for n in ("objects", "refs"))


@dataclass
class ObjectRead:
    """A command that can print contents of git's object store — every committed, staged or
    stashed version of the repository's files, those a Read deny rule covers included.
    `paths`: what its output is limited to (None: any file of the repository whose working
    tree is `top`)."""

    reason: str
    paths: list[Path] | None
    top: Path


@dataclass
class CommandVerdict:
    argv: list[str]
    rule_text: str  # argv without assignments and wrappers, joined by spaces: what rules match
    read_only: bool  # the whole simple command, redirections included
    reason: str
    dangerous: str | None = None
    ask_reason: str | None = None
    writes: list[Path] = field(default_factory=list)  # resolved output-redirect targets
    cd: Path | None = None  # where a `cd` goes
    # Extra facts for the permission decision and `codebelt check`.
    argv_read_only: bool = False  # the program and its flags, ignoring redirections
    full_text: str = ""  # argv joined (assignments stripped, wrappers kept)
    reads: list[Path] = field(default_factory=list)  # files a read-only command reads
    cwd: Path | None = None  # the directory it runs in
    op: str = ""  # the operator after it
    heredoc: bool = False
    stdin_paths: bool = False  # xargs: takes file names from stdin
    unwrapped: list[str] = field(default_factory=list)  # argv without wrappers and assignments
    # A variable that can make the program load or run other code, set for this command (a
    # prefix assignment, `env X=…`) or earlier in the script (`PATH=.; npm test`). Then only a
    # rule naming the whole text (`env_text`, assignments included) may allow it.
    env_risk: str | None = None
    env_text: str = ""  # the command as written: assignments, wrappers and arguments
    # Directories whose files the command reads, all of them (`grep -r`, `rg`, `git grep`,
    # `diff -r`): a Read deny rule for any file beneath them concerns it.
    recursive_reads: list[Path] = field(default_factory=list)
    # The program's verdict is exact (programs.EXACT_PROGRAMS): it needs no OS jail behind it.
    exact: bool = False
    # `git show HEAD:.env`, `git log -p`, `cat .git/objects/…`: contents of git's object store
    object_reads: list[ObjectRead] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "argv": self.argv, "rule_text": self.rule_text, "read_only": self.read_only,
            "reason": self.reason, "dangerous": self.dangerous, "ask_reason": self.ask_reason,
            "writes": [str(p) for p in self.writes], "reads": [str(p) for p in self.reads],
            "cd": str(self.cd) if self.cd else None, "op": self.op,
            "object_reads": [{"reason": o.reason, "top": str(o.top),
                              "paths": None if o.paths is None else [str(p) for p in o.paths]}
                             for o in self.object_reads],
        }


@dataclass
class Analysis:
    command: str
    complex: str | None
    commands: list[CommandVerdict]
    read_only: bool
    reason: str
    too_long: bool
    dangerous: str | None = None  # danger found anywhere (also inside complex scripts)
    # For complex scripts: the literal commands found inside (best effort), for deny rules.
    inner_commands: list[str] = field(default_factory=list)


# `bash -lc SCRIPT` as models trained on Codex send it: judged by SCRIPT. Only these exact flag
# forms, nothing after the script (that would set $0 …), no assignments or redirections around
# it, and one level deep.
_SHELLS = {"bash": "bash", "sh": "sh", "zsh": "zsh"}
_SHELL_FLAGS = (("-c",), ("-lc",), ("-cl",), ("-l", "-c"))
_ZSH_UNSAFE = re.compile(r"[*?\[\]()=~^#<>{}$`!]")  # zsh expands these differently (glob qualifiers run code)


def _shell_c(script: Script) -> tuple[str, str] | None:
    """(shell, inner script) when the whole command is one `bash -lc SCRIPT`-style call."""
    if script.complex or len(script.commands) != 1:
        return None
    c = script.commands[0]
    if c.assignments or c.redirects or c.op not in ("", ";") or len(c.argv) < 3:
        return None
    shell = _SHELLS.get(os.path.basename(c.argv[0])) if c.argv[0] in ("bash", "sh", "zsh") or c.argv[0] in (
        "/bin/bash", "/usr/bin/bash", "/bin/sh", "/usr/bin/sh", "/bin/zsh", "/usr/bin/zsh") else None
    if shell is None or tuple(c.argv[1:-1]) not in _SHELL_FLAGS or 1 in c.globs or len(c.argv) - 1 in c.globs:
        return None
    return shell, c.argv[-1]


def analyze(command: str | Script, cwd: Path | None, workspace, _nested: bool = False) -> Analysis:
    """Facts about `command` (text, or the `Script` it was already parsed into) run from `cwd`
    in `workspace`.

    `workspace=None` analyses against a workspace rooted at `/`: path containment is then not
    judged, only the commands; `cwd=None` means the workspace root.
    """
    script = command if isinstance(command, Script) else None
    command = script.text if script is not None else command
    judge_paths = workspace is not None
    if workspace is None:  # e.g. the concurrency check: commands only, no scans of the disk
        from ...workspace import Workspace

        workspace = Workspace(Path("/"))
    if cwd is None:
        cwd = workspace.root
    too_long = len(command) > MAX_COMMAND_CHARS
    if len(command) > _MAX_PARSE_CHARS:
        reason = f"the command is {len(command):,} characters long, too long to analyse"
        return Analysis(command, reason, [], False, reason, True, _danger.text_danger(command))
    if script is None:
        script = parse(command)
    wrapped = None if _nested else _shell_c(script)
    if wrapped is not None:
        shell, inner_text = wrapped
        inner = analyze(inner_text, cwd, workspace if judge_paths else None, _nested=True)
        inner.command = command
        inner.too_long = inner.too_long or too_long
        if shell == "zsh" and inner.read_only and _ZSH_UNSAFE.search(inner_text):
            inner.read_only = False
            inner.reason = "`zsh -c`: the script has characters zsh expands differently from bash (globs, `=`, `~`, qualifiers)"
            for v in inner.commands:
                v.read_only = v.argv_read_only = False
                v.reason = inner.reason
        elif inner.read_only:
            inner.reason = f"{inner.reason} (inside `{shell} -c`)"
        return inner
    if script.complex:
        inner: list[str] = []
        found = _complex_danger(script, Path(cwd), workspace, inner)
        reason = f"complex command: {script.complex}"
        return Analysis(command, script.complex, [], False, reason, too_long, found, inner)
    walker = _Walker(Path(cwd), workspace)
    walker.skip_reads = too_long or not judge_paths
    verdicts = walker.run(script)
    complex_reason = None
    for v in verdicts:
        if v.heredoc and not v.argv_read_only and command_name(v.argv[0] if v.argv else "") != "apply_patch":
            complex_reason = f"a heredoc into `{v.rule_text.split(' ')[0] if v.rule_text else '?'}`"
            break
    found = next((v.dangerous for v in verdicts if v.dangerous), None) or _danger.text_danger(command)
    read_only = complex_reason is None and all(v.read_only for v in verdicts)
    if complex_reason:
        reason = f"complex command: {complex_reason}"
    elif read_only:
        reason = "read-only: " + (", ".join(dict.fromkeys(v.rule_text.split(" ")[0] for v in verdicts if v.rule_text)) or "no command")
    else:
        reason = next(v.reason for v in verdicts if not v.read_only)
    return Analysis(command, complex_reason, verdicts, read_only, reason, too_long, found)


class _Walker:
    def __init__(self, cwd: Path, workspace):
        self.cwd = Path(os.path.realpath(cwd))
        self.logical = Path(os.path.normpath(os.path.abspath(cwd)))  # what bash's `cd ..` works from
        self.ws = workspace
        self._links: dict[Path, list[tuple[Path, Path]] | None] = {}
        self._odd_names: set[Path] = set()  # trees with names xargs would split (spaces, quotes)
        self.env_tainted: str | None = None
        self._dash_names: dict[Path, list[str]] = {}
        self._resolved: dict[tuple[Path, str], Path] = {}
        self._bare: dict[Path, bool] = {}  # directories git would take for a bare repository
        self._tops: dict[Path, Path] = {}  # the working tree git finds from a directory
        # Over 10,000 characters the command asks anyway: files it reads cannot change that.
        self.skip_reads = False
        self.prev_op = ""  # the operator before the command being looked at

    def run(self, script: Script) -> list[CommandVerdict]:
        out: list[CommandVerdict] = []
        seg_start = 0
        for i, c in enumerate(script.commands):
            self.prev_op = script.commands[i - 1].op if i else ""
            v = self.command(c)
            if v.stdin_paths and v.argv_read_only:
                problem = self._xargs_source(out[seg_start:i], c)
                if problem:
                    v.read_only = v.argv_read_only = False
                    v.reason = problem
                elif not self.skip_reads and command_name(v.unwrapped[0] if v.unwrapped else "") not in NAMES_ONLY:
                    # `find . | xargs cat`: the names listed can be any file of the workspace,
                    # those a Read deny rule covers included
                    v.recursive_reads = [*v.recursive_reads, *self.ws.roots]
            out.append(v)
            if c.op not in ("|", "|&"):
                seg_start = i + 1
        # pipelines: downloader | interpreter
        start = 0
        for i, c in enumerate(script.commands):
            if c.op not in ("|", "|&"):
                seg = script.commands[start:i + 1]
                if len(seg) > 1:
                    d = _danger.pipeline_danger([s.argv for s in seg])
                    if d:
                        out[i].dangerous = out[i].dangerous or d
                        out[i].read_only = out[i].argv_read_only = False
                        out[i].reason = f"dangerous: {out[i].dangerous}"
                start = i + 1
        return out

    def resolve(self, arg: str, base: Path | None = None) -> Path:
        key = (base or self.cwd, arg)
        hit = self._resolved.get(key)
        if hit is None:
            joined = os.path.normpath(os.path.join(key[0], arg))
            if joined.startswith(_PROCESS_VIEWS):
                # /proc/self, /dev/fd … name the *command's* process: resolving them here would
                # answer for codebelt's own. Kept as written: outside the workspace, so it asks.
                hit = Path(joined)
            else:
                hit = Path(os.path.realpath(joined))
            self._resolved[key] = hit
        return hit

    def command(self, c: SimpleCommand) -> CommandVerdict:
        u = unwrap(c.argv, c.assignments)
        rule_text = " ".join(c.argv if u.problem else u.argv)
        v = CommandVerdict(c.argv, rule_text, False, "", full_text=" ".join(c.argv), cwd=self.cwd, op=c.op, heredoc=c.heredoc)
        v.env_text = " ".join([*(f"{n}={val}" for n, val in c.assignments), *c.argv])
        v.env_risk = next((n for n, val in u.env if dangerous_env(n, val)), None) or (self.env_tainted if c.argv else None)
        globs = {i - u.offset for i in c.globs if i >= u.offset}
        v.dangerous = _danger.dangerous(c.argv, c.assignments, self.cwd, self.ws, set(c.globs), u.argv)
        v.ask_reason = _danger.ask_reason(c.argv, c.assignments, u.argv)
        verdict_reason = self._argv_verdict(c, u, globs, v)
        v.argv_read_only = verdict_reason is None
        # redirections
        write_reason = None
        for r in c.redirects:
            if r.kind == "write" and r.target is not None:
                if r.target in _HARMLESS_TARGETS:
                    continue
                d = _danger.redirect_danger(r.target)
                if d:
                    v.dangerous = v.dangerous or d
                try:
                    path = self.resolve(r.target)
                except (OSError, ValueError):
                    path = Path(r.target)
                v.writes.append(path)
                write_reason = write_reason or f"`{r.op} {r.target}` writes {self.ws.relative(path)}"
            elif r.kind == "read" and r.target and r.target not in _HARMLESS_READS:
                v.reads.append(self.resolve(r.target))
        if verdict_reason:
            v.reason = verdict_reason
        elif write_reason:
            v.reason = write_reason
        else:
            v.read_only = True
        if v.dangerous:
            v.read_only = v.argv_read_only = False
            v.reason = f"dangerous: {v.dangerous}"
        return v

    def _argv_verdict(self, c: SimpleCommand, u, globs: set[int], v: CommandVerdict) -> str | None:
        """None when the program and its arguments are read-only, else why not."""
        for name, value in u.env:
            if dangerous_env(name, value):
                if not c.argv:
                    self.env_tainted = name  # `PATH=/x; ls`: later commands see it
                return f"sets {name}, which can make programs load or run other code"
        if self.env_tainted and c.argv:
            return f"runs after {self.env_tainted} was changed"
        if u.problem:
            return u.problem
        if not u.argv:
            v.exact = True  # harmless assignments only
            return None
        verdict = classify_argv(u.argv, u.extra_args)
        if not verdict.read_only:
            return verdict.reason
        v.exact = verdict.exact
        v.stdin_paths = verdict.stdin_paths
        v.unwrapped = list(u.argv)
        name = command_name(u.argv[0]) or ""
        if name == "cd":
            if c.op in ("|", "|&", "&") or self.prev_op in ("|", "|&"):
                # a subshell: later commands stay where they were, so our model of the cwd would lie
                return "`cd` in a pipeline or in the background does not change the directory for later commands"
            return self._cd(u.argv[1:], v)
        if name == "git":
            problem = self._git(u.argv)
            if problem:
                return problem
            if not self.skip_reads:
                self._git_objects(u.argv, v)
            # `git diff --no-index /etc/shadow x`, `git blame --contents ~/x`: paths outside
            # (also relative names of links: `git diff --no-index link-to-etc/passwd x`)
            for a in u.argv[1:]:
                value = a.partition("=")[2] if a.startswith("-") else a
                if value and value not in _HARMLESS_READS and self._names_file(value):
                    v.reads.append(self.resolve(os.path.expanduser(value)))
        for i in sorted(globs):
            if i < len(u.argv) and _glob_too_costly(u.argv[i]):
                return f"the glob `{u.argv[i]}` is too costly to expand and check (a wildcard before `..`, or over {_MAX_GLOB_LEVELS} wildcard levels)"
            if i < len(u.argv) and self._glob_may_be_option(u.argv[i]):
                return f"the glob `{u.argv[i]}` matches a file whose name starts with `-` (it would be read as an option)"
        for i in ([] if self.skip_reads else verdict.read_args):
            if i < len(u.argv):
                arg = u.argv[i]
                if arg.startswith("-"):
                    arg = arg.partition("=")[2]
                if not arg or arg in _HARMLESS_READS:
                    continue
                try:
                    if i in globs:
                        v.reads.extend(self._glob_paths(arg))
                    else:
                        v.reads.append(self.resolve(arg))
                except (OSError, ValueError):
                    return f"cannot resolve the path {arg!r}"
        for value in verdict.read_values:
            if value not in _HARMLESS_READS and self._names_file(value):
                v.reads.append(self.resolve(os.path.expanduser(value)))
        if not self.skip_reads:
            v.recursive_reads = self._recursive_reads(u.argv, v.reads)
            if name not in NAMES_ONLY and name != "git":
                self._store_reads(name, v)
        if verdict.follows_links and not self.skip_reads:
            problem = self._follow_links(v)
            if problem:
                return problem
        v.reason = verdict.reason
        return None

    def _recursive_reads(self, argv: list[str], reads: list[Path]) -> list[Path]:
        """The directories a content-reading walker reads everything under."""
        name = command_name(argv[0]) if argv else None
        args = argv[1:]
        dirs = [p for p in reads if os.path.isdir(p)]
        if name in ("grep", "egrep", "fgrep"):
            recursive = any(a in ("--recursive", "--dereference-recursive", "--directories=recurse", "-drecurse")
                            or (a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a)) for a in args)
            return (dirs or [self.cwd]) if recursive else []
        if name == "rg":
            if any(a in ("--files", "--type-list") for a in args):
                return []  # names, not contents
            files_only = reads and not dirs
            return [] if files_only else (dirs or [self.cwd])
        if name == "diff":
            return dirs
        return []

    def _git_objects(self, argv: list[str], v: CommandVerdict) -> None:
        """What of git's object store this git command can print (git_objects), as paths."""
        _, _, cdir, _ = parse_git(argv)
        where = self.resolve(cdir) if cdir is not None else self.cwd
        top = self._tops.get(where)
        if top is None:
            top = self._tops[where] = _worktree_top(where)

        def is_path(word: str) -> bool:
            try:
                return os.path.lexists(os.path.join(where, word))
            except (OSError, ValueError):
                return False

        found = git_object_reads(argv, is_path)
        if found is None:
            return
        elsewhere = _git_elsewhere()
        if elsewhere is not None:
            # the paths may be another repository's: any file anywhere
            v.object_reads.append(ObjectRead(f"{found.reason} ({elsewhere} is set: git may read another "
                                             "repository)", None, Path("/")))
            return
        paths = None if found.paths is None else [
            Path(os.path.normpath(os.path.join(where if base == "cwd" else top, p))) for base, p in found.paths]
        v.object_reads.append(ObjectRead(found.reason, paths, top))

    def _store_reads(self, name: str, v: CommandVerdict) -> None:
        """`cat .git/objects/…`, `grep -r x .git`: files in a git directory hold every committed
        version of the repository's files (compressed in objects and packs, plain in rebase and
        rerere state); a reader of their bytes is a reader of those."""
        for p in [*v.reads, *v.recursive_reads]:
            top = self._store_top(p)
            if top is not None:
                v.object_reads.append(ObjectRead(
                    f"`{name}` reads {self.ws.relative(p)}, inside a git directory", None, top))
                return

    def _store_top(self, path: Path) -> Path | None:
        """The working tree whose git directory holds `path`: the parent of a `.git` component,
        or for a bare repository inside the workspace the workspace root (its history could be
        any copy of the workspace's)."""
        if ".git" in str(path).casefold():
            parts = path.parts
            for i, part in enumerate(parts):
                if part.casefold() == ".git":
                    return Path(*parts[:i]) if i else Path("/")
        root = self.ws.root_of(path)
        p = path
        while root is not None and p != root:
            bare = self._bare.get(p)
            if bare is None:
                bare = self._bare[p] = _may_be_git_dir(p)
            if bare:
                return root
            p = p.parent
        return None

    def _names_file(self, value: str) -> bool:
        """Does an option value or operand name a file? (path-like, or an existing name)"""
        if value.startswith(("/", "~", "..")) or "/../" in value or value.endswith("/.."):
            return True
        try:
            return os.path.lexists(os.path.join(self.cwd, value))
        except (OSError, ValueError):
            return False

    def _glob_paths(self, pattern: str) -> list[Path]:
        """What an unquoted glob reads: its base directory and every match, resolved like the
        kernel would (`s*/../../etc/passwd` matches `sublink/../../etc/passwd`)."""
        out = [self.resolve(_danger._glob_base(pattern))]
        py = re.sub(r"\[\^", "[!", pattern)  # bash accepts [^…] for negation, Python [!…]
        try:
            it = _glob.iglob(py, root_dir=self.cwd)
            for k, m in enumerate(it):
                if k >= _MAX_GLOB_MATCHES:
                    break
                out.append(self.resolve(m))
        except (OSError, ValueError, re.error):
            pass
        if len(out) == 1 and ".." in pattern:
            out.append(self.resolve(pattern))
        return out

    def _outside_links(self, top: Path) -> list[tuple[Path, Path]] | None:
        """(link, target) for symlinks under `top` that lead outside the workspace; None if the
        tree is too big to look through."""
        if top in self._links:
            return self._links[top]
        found: list[tuple[Path, Path]] = []
        stack = [top]
        seen = 0
        while stack:
            d = stack.pop()
            try:
                with os.scandir(d) as it:
                    for e in it:
                        seen += 1
                        if _ODD_NAME.search(e.name):
                            self._odd_names.add(top)
                        if seen > _MAX_LINK_SCAN:
                            self._links[top] = None
                            return None
                        if e.is_symlink():
                            target = Path(os.path.realpath(e.path))
                            if not self.ws.is_inside(target):
                                found.append((Path(e.path), target))
                        elif e.is_dir(follow_symlinks=False) and e.name != ".git":
                            stack.append(Path(e.path))
            except OSError:
                continue
        self._links[top] = found
        return found

    def _follow_links(self, v: CommandVerdict) -> str | None:
        """`grep -R`, `rg -L`, `find -L`: symlinks inside the walked trees are followed, so
        their targets outside the workspace are reads too."""
        dirs = [r for r in v.reads if r.is_dir() and self.ws.is_inside(r)]
        if not v.reads:
            dirs = [self.cwd] if self.ws.is_inside(self.cwd) else []
        for d in dirs:
            links = self._outside_links(d)
            if links is None:
                return f"follows symlinks through {self.ws.relative(d)}, too many files to check where they lead"
            v.reads.extend(t for _, t in links)
        return None

    def _xargs_source(self, before: list[CommandVerdict], c: SimpleCommand) -> str | None:
        """`… | xargs cat`: the file names come from stdin. Read-only only when the pipeline
        starts with a listing of workspace files (find, ls, rg -l/--files, grep -l, git
        ls-files), passes them through line filters only, and no symlink there leads outside."""
        why = "`xargs` gives it file names we cannot see (they could be outside the workspace)"
        if any(r.kind in ("read", "heredoc", "herestring") for r in c.redirects):
            return why
        head = c.argv[:len(c.argv) - len(unwrap(c.argv).argv)]
        if any(a.startswith(("-a", "--a")) or (a.startswith("-") and not a.startswith("--") and "a" in a) for a in head[1:]):
            return "`xargs -a` reads the file names from a file we cannot see"
        if not before or not all(b.argv_read_only for b in before):
            return why
        producer, filters = before[0], before[1:]
        if not _trusted_producer(producer.unwrapped):
            return why
        for f in filters:
            if not _line_filter(f):
                return why
        if self.skip_reads:
            return None  # paths are not judged (no workspace, or the command asks anyway)
        # names may come from anywhere in the workspace (`find ..`, `git ls-files` from the top)
        links: list[tuple[Path, Path]] = []
        for root in self.ws.roots:
            found = self._outside_links(root)
            if found is None:
                return why
            links += found
        if links:
            # xargs splits names at blanks and quotes (`a pw .py` gives `pw`), and -d at anything
            null = any(a in ("-0", "--null") or (a.startswith("-") and not a.startswith("--") and "0" in a) for a in head[1:])
            custom = any(a.startswith(("-d", "--d")) for a in head[1:])
            if custom or (not null and any(r in self._odd_names for r in self.ws.roots)):
                return f"`xargs` could split a file name into the name of the symlink {self.ws.relative(links[0][0])} (to {links[0][1]})"
        links = [(ln, t) for ln, t in links if _may_list_link(producer.unwrapped, ln)]
        if links:
            return f"`xargs` could be given {self.ws.relative(links[0][0])}, a symlink to {links[0][1]} outside the workspace"
        return None

    def _cd(self, args: list[str], v: CommandVerdict) -> str | None:
        ops = [a for a in args if not (a.startswith("-") and a != "-")]
        physical = any(a.startswith("-") and a != "-" and "P" in a for a in args)
        if not ops:
            target = logical = Path(os.path.realpath(os.path.expanduser("~")))
        elif ops[0] == "-":
            v.cd = None
            return "`cd -` goes to a directory we cannot see"
        else:
            # bash's cd is logical: `cd link/..` is the link's directory, and `cd ../..` after
            # `cd link` climbs the link's path, not its target's.
            logical = Path(os.path.normpath(os.path.join(self.logical, os.path.expanduser(ops[0]))))
            via_target = self.resolve(os.path.expanduser(ops[0]))
            target = via_target if physical else Path(os.path.realpath(logical))
            if self.ws.is_inside(target) and not self.ws.is_inside(via_target):
                target = via_target
            if "*" in ops[0] or "?" in ops[0] or "[" in ops[0]:
                for m in self._glob_paths(ops[0]):
                    if not self.ws.is_inside(m):
                        target = m
        v.cd = target
        self.cwd = target
        self.logical = target if physical else logical
        if not self.ws.is_inside(target):
            return f"`cd` to {target}, outside the workspace"
        return None

    def _git(self, argv: list[str]) -> str | None:
        _, _, cdir, _ = parse_git(argv)
        d = self.cwd
        if cdir is not None:
            d = self.resolve(cdir)
            if not self.ws.is_inside(d):
                return f"`git -C {cdir}` runs git outside the workspace"
        # A repository nested inside the workspace has a config the agent could have written
        # (core.fsmonitor, core.pager … run programs): only the workspace's own repo is trusted.
        p = d
        while True:
            if os.path.lexists(p / ".git"):
                if p not in self.ws.roots and self.ws.is_inside(p):
                    return f"git would use the repository at {self.ws.relative(p)}, not the workspace's own"
                return None
            # git also takes a directory that looks like a bare repository
            if (_may_be_git_dir(p) and self.ws.is_inside(p)
                    and not any(p == r / ".git" for r in self.ws.roots)):
                return f"git would use {self.ws.relative(p)} as a (bare) repository, not the workspace's own"
            if p in self.ws.roots or p.parent == p:
                return None
            p = p.parent

    def _glob_may_be_option(self, pattern: str) -> bool:
        if pattern.startswith("-"):
            return True  # `-*` expands to options (or stays one when nothing matches)
        if not pattern or pattern[0] not in "*?[":
            return False
        first = pattern.split("/", 1)[0]
        names = self._dash_names.get(self.cwd)
        if names is None:
            try:
                with os.scandir(self.cwd) as it:
                    names = [e.name for e in it if e.name.startswith("-")]
            except OSError:
                names = []
            self._dash_names[self.cwd] = names
        return any(fnmatch.fnmatchcase(n, first) for n in names)


def _worktree_top(start: Path) -> Path:
    """The top of the working tree git finds from `start`, by git's own discovery (gitrepo: it
    stops where git stops); `start` itself when there is none. A repository git would refuse
    keeps its top: git then prints nothing, and its paths are mapped as if it did."""
    found = find_repository(start)
    return found.top if found is not None else start


def _git_elsewhere() -> str | None:
    """A variable of codebelt's environment under which git reads another repository, index,
    object store or configuration than discovery finds (a command a person approved keeps it;
    an unasked one runs without it)."""
    return next((k for k in sorted(os.environ) if k in GIT_ELSEWHERE), None)


def _glob_too_costly(pattern: str) -> bool:
    """A glob whose expansion the analyzer will not attempt: `..` after a wildcard component
    (`*/../*/../x` multiplies at every level) or too many wildcard levels."""
    parts = pattern.split("/")
    wild = [any(ch in p for ch in "*?[") for p in parts]
    if sum(wild) > _MAX_GLOB_LEVELS:
        return True
    seen_wild = False
    for p, w in zip(parts, wild):
        seen_wild = seen_wild or w
        if seen_wild and p == "..":
            return True
    return False


def _complex_danger(script: Script, cwd: Path, workspace, inner: list[str]) -> str | None:
    """Best-effort danger scan of a script we could not flatten: every literal command in the
    tree (inside subshells, functions, substitutions, loops) is checked on its own."""
    text = script.text
    if script.tree is None:
        return _danger.text_danger(text)
    src, root = script.src, script.tree.root_node
    stack = [root]
    seen = 0
    pipelines: list = []
    found: str | None = _danger.text_danger(text)
    while stack and seen < 20_000:
        node = stack.pop()
        seen += 1
        if node.type == "command":
            argv: list[str] = []
            for ch in node.children:
                if ch.type == "variable_assignment":
                    continue
                target = ch.children[0] if ch.type == "command_name" and ch.children else ch
                if not target.is_named or target.type.endswith("redirect"):
                    continue
                try:
                    argv.append(word_value(target, src).value)
                except Exception:  # noqa: BLE001 - an expansion: unknown word
                    raw = src[target.start_byte:target.end_byte].decode("utf-8", "replace")
                    # "$HOME", ${HOME}/ … count as ~; other unknown words are skipped by danger checks
                    argv.append("~" if _HOME_WORD.fullmatch(raw) else "\x00?")
            if argv and argv[0] != "\x00?":
                inner.append(" ".join(a for a in argv if a != "\x00?"))
                u = unwrap(argv)
                if u.argv and u.argv != argv:
                    inner.append(" ".join(a for a in u.argv if a != "\x00?"))
                found = found or _danger.dangerous(argv, [], cwd, workspace)
        if node.type == "pipeline":
            pipelines.append(node)
        stack.extend(node.children)
    for p in pipelines:
        names = []
        for ch in p.children:
            cmd = ch if ch.type == "command" else None
            if cmd is not None and cmd.child_by_field_name("name") is not None:
                names.append([cmd.child_by_field_name("name").text.decode("utf-8", "replace")])
        found = found or _danger.pipeline_danger(names)
    return found



def _trusted_producer(argv: list[str]) -> bool:
    """Does this pipeline stage print only names of files it found (no free text)?"""
    name = command_name(argv[0]) if argv else None
    args = argv[1:]
    if name not in _NAME_PRODUCERS:
        return False
    if name == "find":
        return not any(a in ("-printf", "-fprintf", "-ls", "-fls") for a in args)
    if name == "ls":
        return True
    if name == "rg":
        return any(a in ("--files", "--files-with-matches", "--files-without-match") or _short_has(a, "l", "ABCEMTdefgjmrt") for a in args) and not any(
            a.startswith(("--json", "--replace", "-r", "--path-separator")) for a in args)
    if name in ("grep", "egrep", "fgrep"):
        return any(a in ("--files-with-matches", "--files-without-match") or _short_has(a, "lL", "efABCdDm") for a in args) and not any(
            a.startswith("--label") for a in args)
    if name == "git":
        _, sub, _, _ = parse_git(argv)
        if any(a.startswith(("--format", "--pretty", "--output")) for a in args):
            return False
        return sub == "ls-files" or (sub in ("diff", "show", "log") and "--name-only" in args)
    return False


def _line_filter(v: CommandVerdict) -> bool:
    """A stage that only selects or reorders whole lines of its input (no file operands)."""
    argv = v.unwrapped
    name = command_name(argv[0]) if argv else None
    if name not in _LINE_FILTERS or v.reads:
        return False
    for a in argv[1:]:
        if name in ("grep", "egrep", "fgrep") and (a.startswith("--only") or a.startswith("--file") or
                                                    (a.startswith("-") and not a.startswith("--") and ("o" in a or "f" in a))):
            return False
        if name in ("head", "tail") and (a.startswith("--b") or (a.startswith("-") and not a.startswith("--") and "c" in a)):
            return False
        if name == "sort" and (a.startswith("-m") or a.startswith("--m")):
            return False
    return True


def _may_list_link(argv: list[str], link: Path) -> bool:
    """Could this producer print the name of `link`? rg and grep -r skip symlinks they meet
    while walking; `find -type f` skips them; `find -name PAT` only prints matching names."""
    name = command_name(argv[0]) if argv else None
    args = argv[1:]
    if name in ("rg", "grep", "egrep", "fgrep"):
        return any(a in ("-L", "--follow", "-R", "--dereference-recursive") for a in args)
    if name != "find":
        return True
    if any(a in ("!", "-not", "-o", "-or", ",", "-L", "-follow", "-xtype") for a in args):
        return True
    for i, a in enumerate(args[:-1]):
        if a == "-type" and not set(args[i + 1].replace(",", "")) & {"l"}:
            return False
        if a in ("-name", "-iname"):
            pat, nm = args[i + 1], link.name
            if a == "-iname":
                pat, nm = pat.lower(), nm.lower()
            if not fnmatch.fnmatchcase(nm, pat):
                return False
    return True


def _short_has(arg: str, letters: str, takes_value: str) -> bool:
    """A short-flag cluster (`-rl`) with one of `letters` before any flag that takes a value
    (`-elx` is `-e lx`, a pattern, not `-l`)."""
    if not arg.startswith("-") or arg.startswith("--"):
        return False
    for c in arg[1:]:
        if c in letters:
            return True
        if c in takes_value:
            return False
    return False
