"""bubblewrap: run a command in fresh mount, pid, ipc (and network) namespaces.

The view inside: `/` bound read-only, a private /dev and /proc, the writable roots and the
session TMPDIR bound read-write on top, then the protected paths of each root bound read-only
on top of those (bind order is mount order). `--cap-drop ALL` matters when codebelt runs as
root: bwrap keeps root's capabilities otherwise, and with CAP_SYS_ADMIN a command could simply
`mount -o remount,rw /`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .config import SandboxConfig
from .jail import mask_args
from .protected import in_mount_order, protected_paths

DEFAULT_PATHS = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")


def find_bwrap() -> str | None:
    """The bwrap binary: on PATH, else the usual install locations."""
    found = shutil.which("bwrap")
    if found:
        return found
    return next((p for p in DEFAULT_PATHS if os.access(p, os.X_OK)), None)


def protected_binds(config: SandboxConfig) -> list[tuple[Path, str]]:
    """The protected paths of every writable root as they are now, in mount order."""
    return in_mount_order([pk for root in config.writable_roots for pk in protected_paths(root, config.writable)])


def sandbox_args(config: SandboxConfig, cwd: Path, protect: bool = True,
                 masked: "list[Path] | tuple[Path, ...]" = (),
                 overlays: "list[tuple[Path, Path]] | tuple[()]" = (),
                 binds: "list[tuple[Path, str]] | None" = None) -> list[str]:
    """bwrap options (without the binary and the command) for one command run in `cwd`;
    `protect=False` leaves out the protected paths (the probe only asks whether bwrap runs).
    `masked`: paths the command may not read (covered last, over every other bind).
    `overlays`: (file, path) pairs — `file` shown read-only at `path`, over its mask.
    `binds`: the protected paths when the caller listed them already (`protected_binds`)."""
    args = [
        "--die-with-parent",  # the runner killing bwrap kills the whole sandbox
        "--new-session",  # no controlling terminal: no TIOCSTI keystroke injection
        "--unshare-pid",
        "--unshare-ipc",
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
    ]
    if not config.network:
        args.append("--unshare-net")
    for d in config.writable:
        args += ["--bind", str(d), str(d)]
    if binds is None:
        binds = protected_binds(config) if protect else []
    for p, kind in binds:
        args += ["--bind-try" if kind == "pin" else "--ro-bind-try", str(p), str(p)]
    args += mask_args(masked)
    for src, dest in overlays:
        args += ["--ro-bind", str(src), str(dest)]
    args += ["--chdir", str(cwd)]
    return args


def explain_failure(stderr: str, returncode: int) -> str:
    """A sentence for a bwrap probe that did not run `true`."""
    text = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {returncode}"
    low = stderr.lower()
    if "namespace" in low or "uid map" in low or "setting up uid" in low:
        return (
            f"bubblewrap cannot create namespaces here ({text}): user namespaces are disabled "
            "(sysctl kernel.unprivileged_userns_clone or user.max_user_namespaces, an AppArmor "
            "userns restriction) or the container forbids them"
        )
    if "operation not permitted" in low or "permission denied" in low:
        return f"bubblewrap is not permitted to set up its sandbox here ({text})"
    return f"bubblewrap failed to run `true` ({text})"
