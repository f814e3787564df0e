"""The read-only jail: where commands that run without asking because they were judged
read-only are run, so that a mistake in that judgement costs nothing.

What a jailed command sees and may do, whichever backend builds it:
- nothing on the host is writable, the workspace included; TMPDIR and HOME point at a scratch
  directory that is thrown away after the command;
- readable: the workspace roots, the additional directories, the system directories programs
  need (`SYSTEM_DIRS`, `/etc` without its secrets) and the directories on PATH; not the user's
  home, not /tmp, /run, /var or /sys;
- masked: `SECRETS` and the paths the session's Read deny rules cover (given by the caller);
- no sockets but netlink (seccomp.py) — no TCP, UDP, MPTCP, raw, path or abstract Unix
  sockets — and no io_uring.

bwrap builds it from a fresh mount namespace with only those directories bound read-only (a
masked path is covered by an empty file or directory). Landlock handles every file right and
grants read access beneath the readable paths and write access to the scratch directory only;
it cannot carve a hole inside a readable tree, so Read-deny paths *inside* the workspace stay
readable under Landlock (the classifier's path checks still ask for them), and `/etc` is granted
entry by entry so that its secrets are simply not among the rules.
"""

from __future__ import annotations

import os
from pathlib import Path

# Directories most programs need, read-only. A symlink here (merged /usr) is recreated as one.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix/store")
# Inside /etc: password hashes, sudo policy, host keys, private TLS keys, stored credentials.
SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd", "/etc/credstore", "/etc/credstore.encrypted",
    "/etc/libvirt", "/etc/NetworkManager/system-connections", "/etc/wireguard", "/etc/ipsec.secrets",
    "/etc/krb5.keytab", "/etc/docker/daemon.json",
)
# Devices a program may read or write in the jail (Landlock; bwrap makes a private /dev).
DEVICES_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")


def path_dirs(path_var: str | None, home: str | None) -> list[Path]:
    """Absolute directories on PATH worth binding: existing, not / and not the home directory or
    one of its parents (that would expose the home itself)."""
    out: list[Path] = []
    home_real = Path(os.path.realpath(home)) if home else None
    for entry in (path_var or "").split(":"):
        if not entry.startswith("/"):
            continue  # `.` or a relative entry: resolved against the command's cwd, not bound
        real = Path(os.path.realpath(entry))
        if real == Path("/") or not real.is_dir():
            continue
        if home_real is not None and (real == home_real or real in home_real.parents):
            continue
        if real not in out:
            out.append(real)
    return out


def _covered(p: Path, dirs: list[Path]) -> bool:
    return any(p == d or d in p.parents for d in dirs)


def bwrap_args(roots: list[Path], readable: list[Path], masked: list[Path], scratch_in_jail: str,
               cwd: Path) -> list[str]:
    """bwrap options for the read-only jail (without the binary and the command)."""
    args = [
        "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-net",
        "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL",
        "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
    ]
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
            bound.append(d)
    for p in [*(Path(s) for s in SECRETS), *masked]:
        if not os.path.lexists(p) or os.path.islink(p):
            continue  # a link is resolved at its target, which is masked (or not bound) itself
        if p.is_dir():
            args += ["--tmpfs", str(p), "--remount-ro", str(p)]
        else:
            args += ["--ro-bind", "/dev/null", str(p)]
    args += ["--dir", scratch_in_jail, "--chdir", str(cwd)]
    return args


def landlock_readable(roots: list[Path], readable: list[Path]) -> list[Path]:
    """What the Landlock jail grants read access beneath: system dirs, /etc entry by entry without
    its secrets, the roots, PATH dirs, /proc and the devices."""
    out = [Path(d) for d in SYSTEM_DIRS if os.path.isdir(d)]
    secrets = {Path(s) for s in SECRETS}
    for top in ("/etc",):
        try:
            with os.scandir(top) as entries:
                for e in entries:
                    p = Path(e.path)
                    if p not in secrets:
                        out.append(p)
        except OSError:
            pass
    # a secret below an /etc entry (ssl/private) cannot be carved out: grant that entry's
    # children one by one instead
    for s in secrets:
        parent = s.parent
        if parent != Path("/etc") and parent in out:
            out.remove(parent)
            try:
                out += [Path(e.path) for e in os.scandir(parent) if Path(e.path) != s]
            except OSError:
                pass
    out += [Path("/proc"), *roots, *readable]
    # /dev/stdin and friends lead to /proc/self/fd (granted above); not /dev itself, where a
    # disk device owned by root would be readable by a command running as root
    out += [Path(d) for d in (*DEVICES_RW, "/dev/pts", "/dev/ptmx") if os.path.exists(d)]
    return out
