"""Recognise a command that failed because the sandbox blocked it, and say what would allow it.

Heuristic by design: the sandbox does not report its denials, so the failing command's own
error messages (EROFS, EACCES, EPERM, DNS and connect failures, SIGXFSZ) are matched on a
non-zero exit. The sentence says "blocked by the sandbox" only when such a message is present.
"""

from __future__ import annotations

import re

FILESYSTEM = re.compile(
    r"read-only file system|EROFS|permission denied|EACCES|operation not permitted|EPERM"
    r"|\[Errno (?:1|13|30)\]",
    re.IGNORECASE,
)
NETWORK = re.compile(
    r"network is unreachable|ENETUNREACH|temporary failure in name resolution"
    r"|could(?:n't| not) resolve host|name or service not known|name resolution"
    r"|getaddrinfo|failed to connect|connection refused|ECONNREFUSED|\[Errno (?:101|111|-2|-3)\]"
    r"|could not connect|unable to connect|no route to host",
    re.IGNORECASE,
)
FILE_SIZE = re.compile(r"file size limit exceeded|SIGXFSZ|EFBIG|file too large", re.IGNORECASE)
# With Landlock a refused TCP connect is a bare "Permission denied": look for socket context.
SOCKET_CONTEXT = re.compile(r"connect|socket|curl|wget|https?://|urlopen|ssh", re.IGNORECASE)
PROCESSES = re.compile(
    r"resource temporarily unavailable|cannot fork|fork: retry|EAGAIN", re.IGNORECASE
)


def explain(
    output_tail: str,
    exit_code: int | None,
    *,
    backend: str,
    network: bool,
    temp_dir: str | None,
    domains: bool = False,
) -> str | None:
    if not exit_code or not output_tail:
        return None
    tail = output_tail[-8000:]
    where = f"the sandbox ({backend})"
    # Landlock refuses a TCP connect with EACCES ("Permission denied"); without the network,
    # a network-looking failure explains a permission error better than the filesystem does.
    network_blocked = NETWORK.search(tail) or (
        FILESYSTEM.search(tail) and SOCKET_CONTEXT.search(tail)
    )
    if not network and network_blocked and domains:
        if backend != "bwrap":
            return (f"The command appears to have been blocked by {where}: it has no network. Domain filtering "
                    "(sandbox.network's domain lists) needs bubblewrap's network namespace; under Landlock the "
                    "network stays off. Install bubblewrap, or set `sandbox.network: true` to allow every connection.")
        return (f"The command appears to have been blocked by {where}: its only way out is codebelt's proxy "
                "(HTTP_PROXY / HTTPS_PROXY / ALL_PROXY), to the names in `sandbox.network.allowedDomains`. A program "
                "that connects or looks names up by itself, ignoring those variables, has no network; nor does UDP "
                "(DNS included).")
    if not network and network_blocked:
        return (
            f"The command appears to have been blocked by {where}: network access is off for "
            "sandboxed commands. Set `sandbox.network: true` in the settings to allow it, or "
            "`sandbox.mode: off` to run commands without the sandbox."
        )
    if FILE_SIZE.search(tail):
        return (
            f"The command hit the file-size limit of {where}. Raise "
            "`sandbox.limits.fileSizeMB` in the settings (0 turns the limit off)."
        )
    if FILESYSTEM.search(tail):
        tmp = f" and $TMPDIR ({temp_dir})" if temp_dir else " and $TMPDIR"
        protected = (
            "; protected paths (.git/hooks, .git/config, .codebelt, .claude, .env*) stay read-only"
            if backend == "bwrap"
            else ""
        )
        return (
            f"The command appears to have been blocked by {where}: it may write only inside the "
            f"workspace, the additional directories{tmp}{protected}. Add the directory to "
            "`permissions.additionalDirectories` to make it writable, or set `sandbox.mode: off` "
            "to run commands without the sandbox."
        )
    if PROCESSES.search(tail):
        return (
            f"The command ran out of processes under {where}'s process limit. Raise "
            "`sandbox.limits.processes` in the settings (0 turns the limit off)."
        )
    return None
