"""Dangerous commands, matched on parsed argv — never on raw strings.

`dangerous(...)` returns a reason or None; dangerous commands are denied even when a rule would
allow them, unless an allow rule names them explicitly. `ask_reason(...)` flags commands that
always need a person's approval (a force push to a protected branch). Wrappers are looked
through, so `timeout 5 sudo …` is `sudo`.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from .readonly import command_name, parse_git, unwrap

PRIVILEGE = frozenset({"sudo", "su", "doas", "pkexec", "runuser", "run0", "sg", "setpriv", "chroot", "nsenter", "unshare"})
POWER = frozenset({"shutdown", "reboot", "halt", "poweroff"})
DISK_TOOLS = frozenset({"mkswap", "fdisk", "sfdisk", "cfdisk", "parted", "wipefs", "blkdiscard", "mke2fs", "sgdisk"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "nc", "ncat", "socat"})
INTERPRETERS = re.compile(r"^(?:(?:ba|z|da|k|c|tc|fi|mk|y|a)?sh|fish|python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|Rscript|osascript|pwsh|powershell|tclsh|wish|source|eval)$")
BLOCK_DEVICES = re.compile(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|md|dm-|mapper/|mem$|kmem$|port$|rdisk)")
PROTECTED_BRANCHES = re.compile(r"^(?:refs/heads/)?(?:main|master|trunk|develop|production|prod|release.*)$")
# Bounded repetitions and a word-start anchor keep these linear on megabyte-long commands.
FORK_BOMB = re.compile(r"(?<![\w:])([A-Za-z_:][\w:]{0,63})\s{0,20}\(\s{0,20}\)\s{0,20}\{[^}]{0,200}\1\s*\|\s*\1\s*&")
# Last-resort text patterns for scripts the parser could not flatten (complex): pipe from a
# downloader into a shell, or a shell fed by a downloader's process/command substitution.
_PIPE_TO_SHELL_TEXT = re.compile(
    r"\b(?:curl|wget|fetch)\b[^\n;&]{0,4000}\|\s{0,20}(?:sudo\s+(?:-\S+\s+){0,10})?(?:env\s+)?(?:/\S{0,200}/)?(?:ba|z|da|k)?sh\b|"
    r"\b(?:ba|z|da|k)?sh\s+(?:-\S+\s+)*<\(\s*(?:curl|wget)\b|"
    r"\b(?:ba|z|da|k)?sh\s+-c\s+[\"']?\$\(\s*(?:curl|wget)\b"
)

def _home() -> Path:
    return Path(os.path.realpath(os.path.expanduser("~")))


def _resolve(arg: str, cwd: Path) -> Path:
    p = Path(os.path.expanduser(arg))
    if not p.is_absolute():
        p = cwd / p
    return Path(os.path.realpath(p))


def _glob_base(arg: str) -> str:
    """The directory a glob pattern lists: `src/*.py` → `src`, `*` → `.`."""
    idx = min((arg.find(c) for c in "*?[" if c in arg), default=-1)
    if idx < 0:
        return arg
    head = arg[:idx]
    return head.rsplit("/", 1)[0] if "/" in head else ("." if not head.startswith("/") else "/")


def _catastrophic_target(arg: str, cwd: Path, workspace, glob: bool) -> str | None:
    """Why deleting/chmodding `arg` recursively is catastrophic, or None."""
    if arg in ("/", "/*", "~", "~/", "*", ".*", ".", "..", "./*", "../*", "~/*", "/.", "//"):
        return f"`{arg}`"
    base = _glob_base(arg) if glob or any(c in arg for c in "*?[") else arg
    if glob and base == "." and not arg.startswith("./") and "/" not in arg:
        # `rm -rf *` / `rm -rf .*`: everything in the current directory
        if arg.strip("*.") == "":
            return f"`{arg}`"
    target = _resolve(base, cwd)
    if target == Path("/") or target == _home():
        return f"`{arg}` ({target})"
    for root in workspace.roots:
        if target == root or target in root.parents:
            return f"`{arg}` (the workspace or a parent of it)"
    if not workspace.is_inside(target):
        return f"`{arg}` outside the workspace ({target})"
    return None


def _split_flags(args: list[str]) -> tuple[set[str], list[str]]:
    flags: set[str] = set()
    operands: list[str] = []
    dd = False
    for a in args:
        if dd or not a.startswith("-") or a == "-":
            operands.append(a)
        elif a == "--":
            dd = True
        elif a.startswith("--"):
            flags.add(a)
        else:
            flags.update("-" + c for c in a[1:])
    return flags, operands


def _rm(args: list[str], cwd: Path, workspace, globs: set[int]) -> str | None:
    flags, operands = _split_flags(args)
    recursive = bool(flags & {"-r", "-R"}) or any(f.startswith("--rec") for f in flags)
    force = "-f" in flags or any(f.startswith("--f") for f in flags)
    tmp = Path(os.path.realpath(tempfile.gettempdir()))
    for i, op in enumerate(operands):
        if op.startswith("\x00"):
            continue  # an expansion we could not read (best-effort scan of a complex script)
        is_glob = any(c in op for c in "*?[")
        bad = _catastrophic_target(op, cwd, workspace, is_glob)
        if bad is None:
            continue
        if not (recursive or force):
            # plain `rm file` outside the workspace: dangerous unless it is a temp file
            target = _resolve(_glob_base(op) if is_glob else op, cwd)
            if tmp in target.parents:
                continue
        kind = "rm " + ("-rf" if recursive and force else "-r" if recursive else "-f" if force else "")
        return f"`{kind.strip()}` of {bad}"
    if any(f.startswith("--no-preserve-root") for f in flags):
        return "`rm --no-preserve-root`"
    return None


def _chmod(name: str, args: list[str], cwd: Path, workspace) -> str | None:
    flags, operands = _split_flags(args)
    recursive = "-R" in flags or any(f.startswith("--rec") for f in flags)
    # the first operand is the mode/owner, unless --reference=FILE gave it
    targets = operands if any(f.startswith("--reference") for f in flags) else operands[1:]
    for t in targets:
        bad = _catastrophic_target(t, cwd, workspace, any(c in t for c in "*?["))
        if bad and (recursive or "outside" in bad or t in ("/", "~")):
            return f"`{name}{' -R' if recursive else ''}` of {bad}"
    return None


def _dd(args: list[str]) -> str | None:
    for a in args:
        if a.startswith("of=/dev/") and a not in ("of=/dev/null", "of=/dev/stdout", "of=/dev/stderr"):
            return f"`dd {a}` writes a device"
    return None


def _git_push(argv: list[str]) -> str | None:
    _, sub, _, _ = parse_git(argv)
    if sub != "push":
        return None
    args = argv[argv.index(sub) + 1:]
    flags, operands = _split_flags(args)
    force = bool(flags & {"-f"}) or any(f.startswith(("--force", "--mirror")) for f in flags)
    deleting = "-d" in flags or any(f.startswith("--delete") for f in flags)
    refspecs = operands[1:]
    forced_refs = [r for r in refspecs if r.startswith("+")]
    if not (force or forced_refs or deleting or any(r.startswith(":") for r in refspecs)):
        return None
    if any(f.startswith("--mirror") for f in flags):
        return "`git push --mirror` overwrites every remote branch"
    if not refspecs:
        return "`git push --force` of the current branch (may be protected)"
    for r in refspecs:
        dst = r.lstrip("+").rsplit(":", 1)[-1]
        if dst in ("HEAD", "@") or PROTECTED_BRANCHES.match(dst) or (r.startswith(":") and PROTECTED_BRANCHES.match(r[1:])):
            what = "deletes" if deleting or r.startswith(":") else "force-pushes"
            return f"`git push` {what} the protected branch `{dst}`"
        if (force or deleting) and dst in ("", "HEAD"):
            return "`git push --force` of the current branch (may be protected)"
    return None


def _find(args: list[str], cwd: Path, workspace) -> str | None:
    if not any(a in ("-delete",) for a in args) and not ("-exec" in args and any(a in ("rm", "/bin/rm", "shred") for a in args)):
        return None
    for a in args:
        if a.startswith("-") or a in ("(", "!"):
            break
        bad = _catastrophic_target(a, cwd, workspace, False)
        if bad and ("outside" in bad or bad.startswith(("`/", "`~"))):
            return f"`find … -delete` under {bad}"
    return None


def _kill(args: list[str]) -> str | None:
    i = 0
    if args and args[0] in ("-s", "-n"):
        i = 2
    elif args and args[0].startswith("-") and args[0] != "--" and len(args) > 1:
        i = 1  # the signal: -9, -KILL, -SIGTERM
    if i < len(args) and args[i] == "--":
        i += 1
    if "-1" in args[i:]:
        return "`kill -1` signals every process"
    return None


def dangerous(argv: list[str], assignments, cwd: Path, workspace, globs: set[int] | None = None,
              inner: list[str] | None = None) -> str | None:
    """The reason `argv` is dangerous, or None. Looks through wrappers (`inner`: already done)."""
    if inner is None:
        inner = unwrap(argv, assignments).argv
    if not inner:
        return None
    name = command_name(inner[0]) or os.path.basename(inner[0])
    args = inner[1:]
    if name in PRIVILEGE:
        return f"`{name}` runs commands with other privileges"
    if name in POWER:
        return f"`{name}` powers off or restarts the machine"
    if name in ("init", "telinit") and args and args[0] in ("0", "6", "1", "s", "S"):
        return f"`{name} {args[0]}` changes the runlevel"
    if name == "systemctl" and any(a in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "rescue", "emergency", "isolate") for a in args):
        return "`systemctl` powers off, restarts or isolates the machine"
    if name.startswith("mkfs") or name in DISK_TOOLS:
        return f"`{name}` can destroy a filesystem or disk"
    if name == "shred" and any(a.startswith("/dev/") for a in args):
        return "`shred` of a device"
    if name == "dd":
        return _dd(args)
    if name == "rm":
        return _rm(args, cwd, workspace, globs or set())
    if name in ("chmod", "chown", "chgrp"):
        return _chmod(name, args, cwd, workspace)
    if name == "find":
        return _find(args, cwd, workspace)
    if name == "kill":
        return _kill(args)
    if name == "crontab" and "-r" in args:
        return "`crontab -r` deletes every scheduled job"
    return None


def redirect_danger(target: str) -> str | None:
    if BLOCK_DEVICES.match(target):
        return f"writing the device {target}"
    return None


def ask_reason(argv: list[str], assignments, inner: list[str] | None = None) -> str | None:
    if inner is None:
        inner = unwrap(argv, assignments).argv
    if inner and (command_name(inner[0]) or "") == "git":
        return _git_push(inner)
    return None


def pipeline_danger(pipeline: list[list[str]]) -> str | None:
    """A downloader piped into an interpreter: `curl … | sh`, `wget -O- … | sudo python3`."""
    seen_download = None
    for argv in pipeline:
        inner = unwrap(argv).argv
        while inner and (command_name(inner[0]) or "") in PRIVILEGE:
            inner = [a for a in inner[1:] if not a.startswith("-")]
        name = os.path.basename(inner[0]) if inner else ""
        if name in DOWNLOADERS:
            seen_download = name
        elif seen_download and INTERPRETERS.match(name):
            return f"`{seen_download} … | {name}` runs code downloaded from the network"
    return None


def text_danger(text: str) -> str | None:
    """Patterns found in the raw text: for scripts the parser could not flatten."""
    if FORK_BOMB.search(text):
        return "a fork bomb"
    if _PIPE_TO_SHELL_TEXT.search(text):
        return "code downloaded from the network piped into a shell"
    return None

