"""Which programs are read-only, and with which flags: the table of flag models (`SPECS`), the
programs with grammars of their own (find, sed, awk, jq, git), and `classify_argv`, the verdict
for one unwrapped argv. Unknown programs are not read-only."""

from __future__ import annotations

from .awk_args import awk_verdict
from .find_args import find_verdict
from .git_args import git_verdict
from .jq_args import jq_verdict
from .sed_args import sed_verdict
from .verdict import Spec, Verdict, generic, no
from .wrappers import command_name

SPECS: dict[str, Spec] = {}


def _add(names: str, spec: Spec) -> None:
    for n in names.split():
        SPECS[n] = spec


_FREE = Spec(any_args=True)
_add("cat head tail stat nl tac rev cut tr column comm cmp diff cksum sum od "
     "readlink realpath", _FREE)
# hexdump -f FILE / -fFILE reads a format file: a value, so it is checked as a path.
_add("hexdump", Spec(any_args=True, short_arg="efns", long_arg=("format", "format-file", "length", "skip")))
# binutils read options from `@FILE` operands (response files): the file named is read.
_add("strings", Spec(any_args=True, short_arg="nteT", long_arg=("bytes", "radix", "encoding", "target", "output-separator"),
                     response_files=True))
# --files0-from reads the names of the files to read from a file we do not see.
_add("wc", Spec(any_args=True, ban_long=("files0-from",), why="reads file names from a file"))
_add("du", Spec(any_args=True, ban_long=("files0-from",), short_arg="BdtX", long_arg=("block-size", "max-depth", "threshold", "exclude-from", "exclude", "time-style"),
                follow_short="L", follow_long=("dereference",), why="reads file names from a file"))
_add("ls dir vdir", Spec(any_args=True, short_arg="ITw", long_arg=("ignore", "hide", "tabsize", "width", "block-size", "format", "sort", "time", "time-style", "quoting-style", "indicator-style"),
                         follow_short="L", follow_long=("dereference",)))
# -c/--check hashes every file named in a list we do not see (anywhere on disk).
_add("md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum", Spec(any_args=True, ban_short="c", ban_long=("check",), why="reads the files named in a checksum list"))
_add("basename dirname which whereis locate true false : pwd type seq expr sleep nproc "
     "whoami id uname printenv groups arch echo exit", Spec(any_args=True, paths="none"))
SPECS["grep"] = SPECS["egrep"] = SPECS["fgrep"] = Spec(
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
# xxd [options] [infile [outfile]]: a second operand is written. -C takes no value.
_add("xxd", Spec(short_arg="cglosnR", max_operands=1, long_arg=("cols", "groupsize", "len", "name", "seek")))
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


def _test(name: str, args: list[str]) -> Verdict:
    """`test` / `[`: `-v NAME` and `-R NAME` evaluate array subscripts (`a[$(id)]` runs id)."""
    if any(a in ("-v", "-R") for a in args):
        return no(f"`{name} -v` evaluates an array subscript, which can run commands")
    return Verdict(True, f"read-only: `{name}`")


def _cd(args: list[str]) -> Verdict:
    # The path check is done by analyze (it knows the workspace); here only the shape.
    ops = [a for a in args if not (a.startswith("-") and a != "-")]
    if len(ops) > 1:
        return no("`cd` with more than one directory")
    return Verdict(True, "read-only: `cd` inside the workspace")


# Programs with no option that writes a file, runs a program or opens a connection, whatever
# the arguments (GNU coreutils and grep; the builtins). Only these stay read-only where no OS
# jail can back the verdict: the others are modelled flag by flag, and a flag model can be wrong.
EXACT_PROGRAMS = frozenset(
    "cat head tail wc nl tac rev cut tr comm cmp cksum sum od stat readlink realpath basename "
    "dirname pwd true false : echo seq sleep nproc whoami id uname groups arch ls dir vdir "
    "grep egrep fgrep md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum test [ cd".split()
)

# Programs that print names, sizes, counts or types of the files they are given, never their
# bytes: what they read in git's object store or a denied file reveals no contents.
NAMES_ONLY = frozenset("ls dir vdir find stat du tree readlink realpath basename dirname pwd cd test [ wc".split())

_SPECIAL = {"find": find_verdict, "sed": sed_verdict, "jq": jq_verdict, "awk": awk_verdict, "gawk": awk_verdict, "mawk": awk_verdict, "nawk": awk_verdict, "cd": _cd}


def classify_argv(argv: list[str], extra_args: bool = False) -> Verdict:
    """Read-only verdict for an unwrapped argv (argv[0] is the command)."""
    v = _classify(argv, extra_args)
    if v.read_only and not extra_args:
        name = command_name(argv[0]) if argv else ":"
        v.exact = name in EXACT_PROGRAMS
    return v


def _classify(argv: list[str], extra_args: bool) -> Verdict:
    if not argv:
        return Verdict(True, "read-only: no command")
    name = command_name(argv[0])
    if name is None:
        if not argv[0].isascii():
            return no(f"`{argv[0]}` has non-ASCII characters in its name")
        return no(f"`{argv[0]}` is not a known read-only program")
    args = argv[1:]
    if name == "git":
        v = git_verdict(argv)
    elif name in ("test", "["):
        v = _test(name, args)
    elif name == "command":
        v = Verdict(True, "read-only: `command -v` lookup") if args and args[0].startswith("-") and set(args[0][1:]) <= set("pvV") and ("v" in args[0] or "V" in args[0]) else no("`command` form not recognised")
        v.read_args = []
    elif name in _SPECIAL:
        v = _SPECIAL[name](args)
    elif name in SPECS:
        spec = SPECS[name]
        v = generic(name, args, spec)
        if v.read_only and extra_args:
            if not spec.any_args:
                return no(f"`xargs {name}`: arguments from stdin could add unsafe flags")
            # file names from stdin: read-only only if they come from a trusted listing (analyze)
            v.stdin_paths = spec.paths != "none"
        return v
    else:
        return no(f"`{name}` is not in the read-only set")
    if v.read_only and extra_args:
        return no(f"`xargs {name}`: arguments from stdin could add unsafe flags")
    return v
