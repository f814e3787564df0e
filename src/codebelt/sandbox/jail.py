"""The read-only jail: where commands that run without asking because they were judged
read-only are run, so that a mistake in that judgement costs nothing.

What a jailed command sees and may do, whichever backend builds it:
- nothing on the host is writable, the workspace included; TMPDIR and HOME point at a scratch
  directory that is thrown away after the command;
- readable: the workspace roots, the additional directories, the system directories programs
  need (`SYSTEM_DIRS`, `/etc` without its secrets) and the directories on PATH (none reached
  through a directory a command may write: `path_dirs`); not the user's home, not /tmp, /run,
  /var or /sys;
- masked: `SECRETS` and the paths the session's Read deny rules cover (given by the caller);
- no other process's /proc entries (their command lines and environments);
- no sockets but netlink routing (seccomp.py) — no TCP, UDP, MPTCP, raw, path or abstract Unix
  sockets, no other netlink protocol — no io_uring, no System V IPC, message queues or keyrings.

bwrap builds it from a fresh mount namespace with only those directories bound read-only (a
masked path is covered by an empty file or directory) and a /proc of its own pid namespace.
Landlock handles every file right and grants read access beneath the readable paths and write
access to the scratch directory only. A rule covers everything beneath its directory, so a
masked path is left out by granting its parent's entries one by one instead of the parent
(`Grant`), which leaves the parent listable; `/etc` is granted entry by entry the same way, and
/proc only by its entries that describe the machine, none of the numbered process directories.

A helper (ripgrep, a language server) gets the same jail with its own needs (`system`: the
devices and /proc an interpreter uses; ripgrep needs neither).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from .landlock import Grant

# Directories most programs need, read-only. A symlink here (merged /usr) is recreated as one.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store")
# Inside /etc: password hashes, sudo policy, host keys, private TLS keys, stored credentials.
SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd", "/etc/credstore", "/etc/credstore.encrypted",
    "/etc/libvirt", "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ipsec.secrets",
    "/etc/krb5.keytab", "/etc/docker/daemon.json",
)
# Devices a program may read or write in the jail (Landlock; bwrap makes a private /dev). No
# terminal: /dev/pts holds the user's own terminals, whose input a reader would take.
DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# Writable inside a bwrap jail once the Landlock layer (stage.py) is on, besides its /tmp.
SYSTEM_PATHS = tuple(Path(d) for d in SYSTEM_DIRS)
SECRET_PATHS = tuple(Path(s) for s in SECRETS)
STAGE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
# What of /proc a jailed program may read under Landlock: the machine's description, which
# runtimes read (CPU count, memory, load, kernel settings), and none of the numbered process
# directories, where other processes' command lines are world-readable. Under bwrap the jail's
# /proc is its own pid namespace's.
PROC_ENTRIES = ("cpuinfo", "meminfo", "stat", "uptime", "loadavg", "version", "filesystems", "sys",
                "cgroups", "diskstats", "vmstat", "zoneinfo", "buddyinfo", "pressure", "swaps",
                "crypto", "devices", "partitions", "interrupts", "softirqs", "cmdline")


def path_dirs(path_var: str | None, home: str | None, untrusted: "Iterable[Path | str]" = (),
              consult: "Callable[[str], None] | None" = None) -> list[Path]:
    """Absolute directories on PATH worth binding: existing, not / and not the home directory or
    one of its parents (that would expose the home itself), and reached through none of
    `untrusted` — the directories a command may write (workspace roots, additional directories,
    the session's TMPDIR). What lies there is visible through its root already; a link there is
    the repository's to aim anywhere (an activated `.venv/bin` replaced by a link to ~/.ssh, a
    parent `tools -> ~`, `link/..`), and binding its target would show what the jail hides. A
    relative entry (`.`, `bin`) is resolved against the command's directory: never bound.
    `consult`: told each directory the answer depends on, before it is looked in (watched.py)."""
    out: dict[Path, None] = {}  # in order, each once
    if consult is not None and home:
        _outside_walk(home, (), consult=consult)
    home_real = _real_dir(home) if home else None
    avoid = tuple(str(u).rstrip("/") or "/" for u in untrusted)
    for entry in (path_var or "").split(":"):
        if not entry.startswith("/"):
            continue
        if consult is not None:
            # the directories its resolution looks in, up to a writable one: an entry whose walk
            # reaches one is left out whatever lies beyond (and those change all the time)
            _outside_walk(entry, avoid, consult=consult)
        real = _real_dir(entry)
        if real is None or real == "/":
            continue
        if avoid and (real != os.path.normpath(entry) or "/../" in f"{entry}/"):
            # a link or `..` on the way: walk it, refusing a step through a writable directory
            real = _outside_walk(entry, avoid)
            if real is None or real == "/":
                continue
        if _covered(real, avoid):
            continue
        if home_real is not None and (real == home_real or home_real.startswith(real + "/")):
            continue
        out[Path(real)] = None
    return list(out)


def _real_dir(path: str) -> str | None:
    """The real path of directory `path` (None: not a directory), from the kernel's own
    resolution: os.path.realpath walks it in Python, one lstat per component, and this runs as
    every jailed command starts."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)  # no /proc here
    finally:
        os.close(fd)
    return real if real.startswith("/") else None  # "(deleted)" or a path outside this root


def resolved_outside(entry: str, avoid: "Iterable[Path | str]", directory: bool = True,
                     consult: "Callable[[str], None] | None" = None) -> str | None:
    """The real path of `entry` (a directory, unless not `directory`), resolved one component at
    a time as the kernel does (a link's target read and walked in its place, `..` the parent of
    where the walk is), or None when a step lands in one of `avoid` (where a command may plant a
    link, or swap a directory for one), it does not exist, or links loop. `consult`: told each
    directory (a real path) before an entry of it is looked at."""
    return _outside_walk(entry, tuple(str(u).rstrip("/") or "/" for u in avoid), directory, consult)


def _outside_walk(entry: str, avoid: tuple[str, ...], directory: bool = True,
                  consult: "Callable[[str], None] | None" = None) -> str | None:
    todo = entry.split("/")[::-1]  # a stack: the next component last
    here = ""  # "" is /
    links = 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            here = here.rpartition("/")[0]  # a parent of a path outside `avoid` is outside too
            continue
        step = f"{here}/{name}"
        if _covered(step, avoid):
            return None
        if consult is not None:
            consult(here or "/")
        try:
            mode = os.lstat(step).st_mode
            if stat.S_ISLNK(mode):
                links += 1
                target = os.readlink(step)
                if links > 40 or not target:
                    return None
                if target.startswith("/"):
                    here = ""
                todo.extend(target.split("/")[::-1])
                continue
        except OSError:
            return None
        if not stat.S_ISDIR(mode) and (directory or todo):
            return None
        here = step
    return here or "/"


def scratch_in_jail(visible: list[Path]) -> str:
    """The writable scratch directory inside a bwrap jail: its /tmp (a tmpfs of its own), or a
    directory within it when a workspace or other visible directory lies under /tmp — a write
    right on a directory covers every path beneath it, mount points included, so the scratch
    must not be the parent of a read-only tree (a FIFO there would be writable again)."""
    if any(_covered(p, ("/tmp",)) for p in visible):  # by string: this runs for every command
        return "/tmp/.codebelt-scratch"
    return "/tmp"


def _covered(p: "Path | str", dirs: "list[Path] | tuple[Path | str, ...]") -> bool:
    """`p` is one of `dirs` or beneath one (absolute paths; by string: `d in p.parents` costs a
    Path per parent, and this runs for every mask of every command)."""
    s = str(p)
    for d in dirs:
        t = str(d)
        if s == t or s.startswith(t if t.endswith("/") else t + "/"):
            return True
    return False


def mask_targets(masked: "list[Path] | tuple[Path, ...]") -> list[Path]:
    """The paths to cover for `masked`: each one as it really is, every link on its way followed
    (a mount lands on the target; a name through the link then leads to the cover). Not only a
    link at the end: the jail shows only some directories, and `~/.aws/credentials` with `~/.aws`
    a link into the workspace (a dotfiles manager folding the directory) is visible in the jail
    at the link's target alone. A link into the system directories is left alone: nothing there
    is a secret of the user's, and covering a library a planted link names would only break every
    program."""
    out: dict[Path, None] = {}  # in order, each once
    for p in masked:
        p = p if isinstance(p, Path) else Path(p)
        real = os.path.realpath(p)
        if real != str(p):
            if not os.path.lexists(real) or _covered(real, SYSTEM_PATHS) or real == "/":
                continue
            p = Path(real)
        out[p] = None
    return list(out)


def cover_where(path: Path, writable: "Iterable[Path]") -> list[int]:
    """For a resident's mask step (resident.mask): [st_dev, st_ino] of the directory holding
    `path` when it lies where a command may rename a directory above it (`writable`), so that the
    cover is checked to land in that very directory; [-1, -1] (never a match: the command is
    refused) when that directory is gone already; [] elsewhere (no command can move it)."""
    if not _covered(path, list(writable)):
        return []
    try:
        st = os.stat(path.parent)
    except OSError:
        return [-1, -1]
    return [st.st_dev, st.st_ino]


def mask_plan(masked: "list[Path] | tuple[Path, ...]", visible: "list[Path] | None" = None) -> list[tuple[Path, bool]]:
    """(path, is a directory) to cover for `masked`, in mount order (shallowest first), leaving
    out what does not exist, links and what a covered directory already hides. `visible`: only
    paths beneath these (None: all)."""
    out: list[tuple[Path, bool]] = []
    covered: list[Path] = []  # directories already covered: what is inside is gone with them
    for p in sorted(mask_targets(masked), key=lambda q: len(q.parts)):
        try:
            mode = os.lstat(p).st_mode  # one lstat: this runs for every mask of every command
        except OSError:
            continue
        if stat.S_ISLNK(mode) or _covered(p, covered):
            continue
        if visible is not None and not _covered(p, visible):
            continue  # not in the jail at all: a cover would only create its parents there
        is_dir = stat.S_ISDIR(mode)
        out.append((p, is_dir))
        if is_dir:
            covered.append(p)
    return out


def mask_args(masked: "list[Path] | tuple[Path, ...]", visible: "list[Path] | None" = None) -> list[str]:
    """bwrap options covering each masked path (after every other bind: mount order): an empty
    read-only tmpfs on a directory, /dev/null bound read-only on anything else."""
    args: list[str] = []
    for p, is_dir in mask_plan(masked, visible):
        args += ["--tmpfs", str(p), "--remount-ro", str(p)] if is_dir else ["--ro-bind", "/dev/null", str(p)]
    return args


def write_sandbox_reads(masked: "list[Path] | tuple[Path, ...]") -> tuple[list[Grant], list[Path]]:
    """Landlock read grants for the write sandbox with masked paths: everything, around the
    masked ones (their parents granted entry by entry), and the directories so split."""
    out: list[Grant] = []
    split: list[Path] = []
    _around(Path("/"), set(mask_targets(masked)), out, split, follow=True)
    return out, split


def bwrap_args(roots: list[Path], readable: list[Path], masked: list[Path], scratch_in_jail: str,
               cwd: Path, system: bool = True, markers: "list[Path] | tuple[Path, ...]" = ()) -> list[str]:
    """bwrap options for the read-only jail (without the binary and the command). `system`:
    a private /dev and /proc (False: neither exists in the jail). `markers`: empty directories
    to create where a directory's existence is all a program needs to see."""
    args = [
        "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-net",
        "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
    ]
    if system:
        args += ["--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp"]
    bound: list[Path] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
            bound.append(Path(d))
    if os.path.isdir("/etc"):
        args += ["--ro-bind", "/etc", "/etc"]
    for d in [*roots, *readable]:
        if not _covered(d, bound) and d.exists():
            args += ["--ro-bind", str(d), str(d)]
            if d.is_dir():
                bound.append(d)
    args += mask_args(SECRET_PATHS)
    args += mask_args(masked, [*bound, Path("/etc")])
    for m in markers:
        if not _covered(Path(m), bound):
            args += ["--dir", str(m)]
    args += ["--dir", scratch_in_jail, "--chdir", str(cwd)]
    return args


def landlock_readable(roots: list[Path], readable: list[Path], masked: "list[Path] | tuple[Path, ...]" = (),
                      system: bool = True) -> tuple[list[Grant], list[Path]]:
    """What the Landlock jail grants read access beneath — system dirs, /etc entry by entry
    without its secrets, the roots and `readable` around the masked paths, and with `system`
    the devices and /proc's machine entries — and the directories split around masked paths
    (their modification times tell when the rules must be built again)."""
    out = [Grant(Path(d)) for d in SYSTEM_DIRS if os.path.isdir(d)]
    secrets = {Path(s) for s in SECRETS}
    etc: list[Path] = []
    try:
        with os.scandir("/etc") as entries:
            etc = [Path(e.path) for e in entries if Path(e.path) not in secrets]
    except OSError:
        pass
    # a secret below an /etc entry (ssl/private) cannot be carved out: grant that entry's
    # children one by one instead
    for s in secrets:
        parent = s.parent
        if parent != Path("/etc") and parent in etc:
            etc.remove(parent)
            try:
                etc += [Path(e.path) for e in os.scandir(parent) if Path(e.path) != s]
            except OSError:
                pass
    # /etc/mtab and friends point into /proc/self: a rule would land on codebelt's own entries
    out += [Grant(p) for p in etc if not os.path.realpath(p).startswith("/proc/")]
    if system:
        out += [Grant(Path("/proc", name)) for name in PROC_ENTRIES if os.path.exists(f"/proc/{name}")]
        # /dev/stdin and friends lead to /proc/self/fd, whose pipes Landlock does not check;
        # not /dev itself, where a disk device owned by root would be readable to root
        out += [Grant(Path(d)) for d in DEVICES_RW if os.path.exists(d)]
    masks = set(mask_targets(masked))
    split: list[Path] = []
    for top in dict.fromkeys([*roots, *readable]):
        _around(Path(top), masks, out, split, follow=True)
    return out, split


def _around(top: Path, masks: set[Path], out: list[Grant], split: list[Path], follow: bool) -> None:
    """Grant `top` whole, or — when a masked path lies beneath it — its entries one by one,
    leaving the masked ones out."""
    if top in masks:
        return
    if not any(top in m.parents for m in masks):
        out.append(Grant(top, follow=follow))
        return
    out.append(Grant(top, list_only=True, follow=follow))
    split.append(top)
    try:
        with os.scandir(top) as entries:
            children = [Path(e.path) for e in entries if not e.is_symlink()]
    except OSError:
        return
    for child in children:
        _around(child, masks, out, split, follow=False)
