"""Is one simple command read-only? Names alone are not safe, so each command has flag rules.

The question asked of every flag: can it write a file, run a program, or make the command read
configuration that runs a program? If yes (or if we cannot tell), the command is not read-only.
Wrappers (`timeout`, `nice`, `env A=B`, bare `xargs` …) are looked through first (`unwrap`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .options import Opt, any_long, long_is, scan

# -- dangerous environment -----------------------------------------------------------------------
# Variables that make a program load code, run a program, or read config that does.
_DANGEROUS_ENV = re.compile(
    r"""^(
      LD_\w* | DYLD_\w* | GIT_\w* | PYTHON\w* | PERL\w* | RUBY\w* | NODE_\w* | NPM_CONFIG_\w* |
      BASH_\w* | BASH | ENV | SHELLOPTS | BASHOPTS | PS4 | PROMPT_COMMAND | IFS | CDPATH | GLOBIGNORE |
      \w*PATH | \w*_OPTIONS | \w*OPTS | \w*OPT | HOME | XDG_\w* | SHELL | \w*PAGER | EDITOR | VISUAL |
      BROWSER | LESS\w* | GCONV_PATH | LOCPATH | GLIBC_TUNABLES | MALLOC_\w* | RIPGREP_CONFIG_PATH |
      \w*_CONFIG\w* | \w*RC | JAVA_TOOL_OPTIONS | _JAVA_OPTIONS | TERMINFO\w* | MAGIC | SSH_\w* |
      HOSTALIASES | RES_OPTIONS | TMPDIR | JQ_\w* | AWK\w* | SED\w* | TAR_\w* | XARGS\w* |
      TEXTDOMAINDIR | NLSPATH | ACK\w* | TZDIR
    )$""",
    re.X | re.I,
)


# Locale variables whose value may be a path: glibc loads locale data / message catalogs from it.
_LOCALE_ENV = re.compile(r"^(?:LANG|LANGUAGE|LC_\w+)$", re.I)


def dangerous_env(name: str, value: str = "") -> bool:
    if _LOCALE_ENV.match(name):
        return "/" in value or ".." in value
    return bool(_DANGEROUS_ENV.match(name))


# -- wrappers -------------------------------------------------------------------------------------
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


_XARGS_SHORT_ARG = "nLPsdIEal"
_XARGS_LONG = ("null", "no-run-if-empty", "verbose", "exit", "max-args", "max-lines", "max-procs",
               "max-chars", "delimiter", "replace", "eof", "arg-file", "show-limits")
_XARGS_LONG_ARG = ("max-args", "max-lines", "max-procs", "max-chars", "delimiter", "arg-file", "eof")


def _w_xargs(argv: list[str], u: Unwrapped) -> int | None:
    i = _skip_opts(argv, _XARGS_SHORT_ARG, _XARGS_LONG, _XARGS_LONG_ARG, "0rtxi", u, "xargs")
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


# -- verdicts -------------------------------------------------------------------------------------
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


def _no(reason: str) -> Verdict:
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


def _generic(name: str, args: list[str], spec: Spec) -> Verdict:
    opts = scan(args, spec.short_arg, spec.long_arg)
    operands: list[Opt] = []
    follows = False
    for o in opts:
        if (o.kind == "short" and o.name in spec.follow_short) or (
                o.kind == "long" and spec.follow_long and any_long(o.name, spec.follow_long)):
            follows = True
        if o.kind == "short" and o.name in spec.ban_short:
            return _no(f"`{name} -{o.name}` {spec.why}")
        if o.kind == "long":
            banned = any_long(o.name, spec.ban_long)
            if banned:
                return _no(f"`{name} --{banned}` {spec.why}")
        if o.kind == "operand":
            operands.append(o)
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return _no(f"`{name}` with {len(operands)} file operands writes the last one")
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
    return Verdict(True, f"read-only: `{name}`", read_args, values, follows)


_SPECS: dict[str, Spec] = {}


def _add(names: str, spec: Spec) -> None:
    for n in names.split():
        _SPECS[n] = spec


_FREE = Spec(any_args=True)
_add("cat head tail stat nl tac rev cut tr column comm cmp diff cksum sum od hexdump strings "
     "readlink realpath", _FREE)
# --files0-from reads the names of the files to read from a file we do not see.
_add("wc", Spec(any_args=True, ban_long=("files0-from",), why="reads file names from a file"))
_add("du", Spec(any_args=True, ban_long=("files0-from",), short_arg="BdtX", long_arg=("block-size", "max-depth", "threshold", "exclude-from", "exclude", "time-style"),
                follow_short="L", follow_long=("dereference",), why="reads file names from a file"))
_add("ls dir vdir", Spec(any_args=True, short_arg="ITw", long_arg=("ignore", "hide", "tabsize", "width", "block-size", "format", "sort", "time", "time-style", "quoting-style", "indicator-style"),
                         follow_short="L", follow_long=("dereference",)))
# -c/--check hashes every file named in a list we do not see (anywhere on disk).
_add("md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum", Spec(any_args=True, ban_short="c", ban_long=("check",), why="reads the files named in a checksum list"))
_add("basename dirname which whereis locate true false : pwd type test [ seq expr sleep nproc "
     "whoami id uname printenv groups arch echo exit", Spec(any_args=True, paths="none"))
_SPECS["grep"] = _SPECS["egrep"] = _SPECS["fgrep"] = Spec(
    any_args=True, paths="after_pattern", short_arg="efABCdDm", follow_short="R", follow_long=("dereference-recursive",),
    long_arg=("regexp", "file", "exclude-from", "after-context", "before-context", "context", "max-count", "devices", "directories", "label", "binary-files"))
# -z/-Z: libmagic runs external decompressors (gzip, xz, zstd …) on the file
_add("file", Spec(ban_short="CfzZ", ban_long=("compile", "files-from", "uncompress", "uncompress-noreport"), short_arg="mfFeP", long_arg=("magic-file", "files-from", "separator"),
                  why="writes a compiled magic file, runs decompressors or reads file names from a file"))
_add("sort", Spec(ban_short="o", ban_long=("output", "compress-program", "files0-from"), short_arg="kotST",
                  long_arg=("key", "field-separator", "buffer-size", "temporary-directory", "parallel", "files0-from", "sort", "random-source", "batch-size")))
_add("uniq", Spec(short_arg="fsw", long_arg=("skip-fields", "skip-chars", "check-chars"), max_operands=1))
_add("tree", Spec(ban_short="oR", ban_long=("output",), short_arg="LPIoH", long_arg=("filelimit", "timefmt", "sort", "charset", "infofile"), follow_short="l"))
_add("base64 base32 basenc", Spec(ban_short="o", ban_long=("output",), short_arg="w", long_arg=("wrap",)))
_add("xxd", Spec(short_arg="cglosnCR", max_operands=1, long_arg=("cols", "groupsize", "len", "name", "seek")))
_add("rg", Spec(ban_short="z", ban_long=("pre", "hostname-bin", "search-zip"), short_arg="ABCEMTdefgjmrt", follow_short="L", follow_long=("follow",),
                long_arg=("regexp", "file", "glob", "iglob", "type", "type-not", "type-add", "type-clear", "max-count",
                          "max-depth", "replace", "encoding", "threads", "context", "before-context", "after-context",
                          "max-columns", "sort", "sortr", "colors", "pre-glob", "ignore-file", "path-separator", "field-match-separator",
                          "field-context-separator", "context-separator", "max-filesize", "dfa-size-limit", "regex-size-limit", "engine"),
                paths="after_pattern"))
_add("ag", Spec(ban_long=("pager",), paths="after_pattern", short_arg="ABCGgmp", long_arg=("after", "before", "context", "file-search-regex", "ignore", "max-count", "path-to-ignore", "depth")))
_add("ack", Spec(ban_long=("pager", "output", "regex"), paths="after_pattern"))
_add("date", Spec(ban_short="s", ban_long=("set",), short_arg="dfr", long_arg=("date", "file", "reference"), paths="none"))
_add("printf", Spec(ban_short="v", paths="none", why="assigns a shell variable"))
_add("hostname", Spec(max_operands=0, ban_short="bF", ban_long=("boot", "file"), paths="none"))
_add("env", Spec(max_operands=0, ban_short="SC", ban_long=("split-string", "chdir"), paths="none"))


# -- special commands -----------------------------------------------------------------------------
def _find(args: list[str]) -> Verdict:
    # -files0-from: starting points listed in a file we do not see
    banned = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf", "-files0-from"}
    for a in args:
        if a in banned:
            return _no(f"`find {a}` runs programs or writes files")
        if a.startswith("-") and a.lstrip("-") in {b[1:] for b in banned}:
            return _no(f"`find {a}` runs programs or writes files")
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


_SED_LONG = ("quiet", "silent", "expression", "file", "in-place", "line-length", "null-data",
             "zero-terminated", "regexp-extended", "separate", "sandbox", "debug", "posix",
             "follow-symlinks", "unbuffered", "binary", "help", "version", "unbuffered")


def _sed(args: list[str]) -> Verdict:
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
                return _no(f"`sed {a}` is not an option we recognise")
            full_name = full[0]
            if full_name in ("in-place", "file"):
                return _no(f"`sed --{full_name}` edits files or runs a script we cannot see")
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
                    return _no(f"`sed -{c}` edits files in place or runs a script we cannot see")
                if c in "el":
                    value = a[j + 1:]
                    if not value:
                        i += 1
                        value = args[i] if i < len(args) else ""
                    if c == "e":
                        scripts.append(value)
                    break
                if c not in "nErsuzb":
                    return _no(f"`sed -{c}` is not an option we recognise")
                j += 1
        i += 1
    if not scripts:
        if not operands:
            return _no("`sed` without a script")
        scripts.append(args[operands.pop(0)])
    for s in scripts:
        bad = sed_script_problem(s)
        if bad:
            return _no(f"sed script: {bad}")
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
            j = i
            while j < n and script[j] not in ";\n}":
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


def _awk(args: list[str]) -> Verdict:
    opts = scan(args, "Fvf", ("field-separator", "assign", "file", "source", "include", "load", "exec"))
    program_given = False
    for o in opts:
        if o.kind == "short" and o.name in "fiElpdDoMW":
            if o.name == "M":
                continue
            return _no(f"`awk -{o.name}` loads a program we cannot see or writes a file")
        if o.kind == "long":
            bad = any_long(o.name, ("file", "include", "load", "exec", "pretty-print", "profile", "dump-variables", "debug"))
            if bad:
                return _no(f"`awk --{bad}` loads a program we cannot see or writes a file")
            if long_is(o.name, "source"):
                program_given = True
                p = _awk_problem(o.value or "")
                if p:
                    return _no(f"awk program: {p}")
        if o.kind == "short" and o.name == "e":
            program_given = True
    operands = [o for o in opts if o.kind == "operand"]
    # Check every operand as if it were program text: a file named `a>b` is a false alarm, a
    # program we failed to spot would be a hole.
    for o in operands:
        p = _awk_problem(o.name)
        if p:
            return _no(f"awk program: {p}")
    for o in opts:
        if o.kind == "short" and o.name == "v" and o.value and _awk_problem(o.value):
            return _no("awk -v value contains shell metacharacters")
    files = operands if program_given else operands[1:]
    return Verdict(True, "read-only: `awk` program without system/pipes/redirection", [o.index + 1 for o in files if "=" not in o.name])


_JQ_MODULES = re.compile(r"\b(?:import|include)\b")


def _jq(args: list[str]) -> Verdict:
    """jq cannot run programs, but it reads files: operands, `--rawfile/--slurpfile NAME FILE`,
    `-f FILE`, and modules (`import`, `-L DIR`)."""
    files: list[int] = []
    values: list[str] = []
    filter_text: str | None = None
    from_file = positional_args = False
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        if a == "--":
            for j in range(i + 1, n):
                if filter_text is None and not from_file:
                    filter_text = args[j]
                elif not positional_args:
                    files.append(j)
            break
        if a in ("--rawfile", "--slurpfile"):
            values += args[i + 2:i + 3]
            i += 3
            continue
        if a in ("--arg", "--argjson"):
            i += 3
            continue
        if a in ("--indent",):
            i += 2
            continue
        if a in ("--args", "--jsonargs"):
            positional_args = True
        elif a in ("--from-file",):
            from_file = True
        elif a == "--library-path" or a.startswith("-L"):
            values.append(a[2:] if a.startswith("-L") and len(a) > 2 else (args[i + 1] if i + 1 < n else ""))
            i += 1 if a.startswith("-L") and len(a) > 2 else 2
            continue
        elif a.startswith("--library-path="):
            values.append(a.partition("=")[2])
        elif a.startswith("-") and len(a) > 1:
            if not a.startswith("--") and "L" in a[1:]:
                return _no("`jq -L` in a flag cluster (a module directory we cannot see)")
            if not a.startswith("--") and "f" in a[1:]:
                from_file = True
        elif filter_text is None and not from_file:
            filter_text = a
        elif not positional_args:
            files.append(i)
        i += 1
    if filter_text is not None and _JQ_MODULES.search(filter_text):
        return _no("`jq` import/include loads modules or data files we cannot see")
    if values and any(v == "" for v in values):
        return _no("`jq` option without its file")
    return Verdict(True, "read-only: `jq`", [k + 1 for k in files], values)


def _cd(args: list[str]) -> Verdict:
    # The path check is done by analyze (it knows the workspace); here only the shape.
    ops = [a for a in args if not (a.startswith("-") and a != "-")]
    if len(ops) > 1:
        return _no("`cd` with more than one directory")
    return Verdict(True, "read-only: `cd` inside the workspace")


# -- git ------------------------------------------------------------------------------------------
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
    globals_: list[str] = []
    i = 1
    cdir = None
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            return globals_, a, cdir, None
        globals_.append(a)
        if a == "-c":
            return globals_, None, cdir, "`git -c` sets configuration that can run programs (core.pager, diff drivers …)"
        if a.startswith("-c") and len(a) > 2:
            return globals_, None, cdir, "`git -c` sets configuration that can run programs"
        if a in ("-p", "--paginate"):
            return globals_, None, cdir, "`git --paginate` runs the configured pager"
        if a.startswith("--") and len(a) > 3 and "bare".startswith(a[2:]):
            # the current directory becomes the repository: its config is whatever is there
            return globals_, None, cdir, "`git --bare` uses the current directory as the repository (and its config)"
        if a == "-C":
            i += 1
            cdir = argv[i] if i < len(argv) else None
        elif a.startswith("-C"):
            cdir = a[2:]
        elif a.startswith("--"):
            name, eq, _ = a[2:].partition("=")
            bad = any_long(name, _GIT_GLOBAL_BANNED)
            if bad:
                return globals_, None, cdir, f"`git --{bad}` can point git at configuration or programs we cannot see"
            if not eq and any_long(name, _GIT_GLOBAL_ARG):
                i += 1
        i += 1
    return globals_, None, cdir, None


def _git(argv: list[str]) -> Verdict:
    _, sub, _, problem = parse_git(argv)
    if problem:
        return _no(problem)
    if sub is None:
        return _no("`git` without a subcommand")
    if sub not in _GIT_RO_SUBCOMMANDS:
        return _no(f"`git {sub}` is not read-only")
    args = argv[argv.index(sub) + 1:]
    opts = scan(args, "", ())
    for o in opts:
        if o.kind == "long":
            bad = any_long(o.name, _GIT_BANNED_LONG)
            if bad and not (bad == "edit" and sub != "config"):
                return _no(f"`git {sub} --{bad}` writes a file or runs a program")
            if bad == "edit":
                return _no(f"`git {sub} --edit` opens an editor")
    short = {o.name for o in opts if o.kind == "short"}
    flags = [a for a in args if a.startswith("-")]
    operands = [a for a in args if not a.startswith("-")]
    if sub == "grep" and "O" in short:
        return _no("`git grep -O` opens files in a pager")
    if sub == "cat-file" and any(long_is(a[2:], "textconv") or long_is(a[2:], "filters") for a in flags if a.startswith("--")):
        return _no("`git cat-file --textconv/--filters` runs configured programs")
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
            return _no("`git remote` is read-only only as `git remote [-v]`")
    if sub == "stash" and (not operands or operands[0] not in ("list", "show")):
        return _no("`git stash` is read-only only as `git stash list|show`")
    if sub == "worktree" and (not operands or operands[0] != "list"):
        return _no("`git worktree` is read-only only as `git worktree list`")
    if sub == "reflog" and operands and operands[0] not in ("show",) and operands[0] in ("expire", "delete", "drop", "exists", "write"):
        return _no(f"`git reflog {operands[0]}` is not read-only")
    if sub == "config":
        readers = ("get", "get-all", "get-regexp", "get-urlmatch", "list", "show-origin", "show-scope",
                   "name-only", "null", "global", "local", "system", "worktree", "type", "bool", "int",
                   "path", "includes", "no-includes", "default", "file", "blob", "get-color", "get-colorbool")
        for f in flags:
            if f.startswith("--"):
                if not any_long(f[2:].partition("=")[0], readers):
                    return _no(f"`git config {f}` is not read-only")
            elif set(f[1:]) - set("lz"):
                return _no(f"`git config {f}` is not read-only")
        reading = any(f in ("-l",) or (f.startswith("--") and any_long(f[2:].partition("=")[0], ("get", "get-all", "get-regexp", "get-urlmatch", "list", "get-color", "get-colorbool"))) for f in flags)
        if not reading and not (operands and operands[0] in ("get", "list")):
            return _no("`git config` is read-only only with --get/--list (or `get`/`list`)")
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
                return _no(f"`git {sub} {a}` is not a listing option")
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
                    return _no(f"`git {sub} -{c}` is not a listing option")
        else:
            operands += 1
        i += 1
    if operands and not listing:
        return _no(f"`git {sub} NAME` creates or changes a {sub}")
    return Verdict(True, f"read-only: `git {sub}` (list form)")


_SPECIAL = {"find": _find, "sed": _sed, "jq": _jq, "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk, "cd": _cd}


def classify_argv(argv: list[str], extra_args: bool = False) -> Verdict:
    """Read-only verdict for an unwrapped argv (argv[0] is the command)."""
    if not argv:
        return Verdict(True, "read-only: no command")
    name = command_name(argv[0])
    if name is None:
        if not argv[0].isascii():
            return _no(f"`{argv[0]}` has non-ASCII characters in its name")
        return _no(f"`{argv[0]}` is not a known read-only program")
    args = argv[1:]
    if name == "git":
        v = _git(argv)
    elif name == "command":
        v = Verdict(True, "read-only: `command -v` lookup") if args and args[0].startswith("-") and set(args[0][1:]) <= set("pvV") and ("v" in args[0] or "V" in args[0]) else _no("`command` form not recognised")
        v.read_args = []
    elif name in _SPECIAL:
        v = _SPECIAL[name](args)
    elif name in _SPECS:
        spec = _SPECS[name]
        v = _generic(name, args, spec)
        if v.read_only and extra_args:
            if not spec.any_args:
                return _no(f"`xargs {name}`: arguments from stdin could add unsafe flags")
            # file names from stdin: read-only only if they come from a trusted listing (analyze)
            v.stdin_paths = spec.paths != "none"
        return v
    else:
        return _no(f"`{name}` is not in the read-only set")
    if v.read_only and extra_args:
        return _no(f"`xargs {name}`: arguments from stdin could add unsafe flags")
    return v
