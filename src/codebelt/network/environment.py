"""The variables that send a command's traffic to the proxy inside its sandbox.

Programs find a proxy by convention, each its own: curl, wget, Python (urllib, requests, pip),
Go, Rust (reqwest, cargo through CARGO_HTTP_PROXY), git (libcurl, and `http.proxy`) and npm read
HTTP(S)_PROXY or their own names; node's built-in fetch only with NODE_USE_ENV_PROXY. ALL_PROXY
is SOCKS5 with names resolved by the proxy (`socks5h`): the command never looks a name up
itself — it has no DNS. NO_PROXY keeps the sandbox's own loopback direct: it leads nowhere but
the sandbox itself. A program that ignores all of these has no network (its namespace is empty).

The port is only known inside the sandbox (the stage binds it), so values carry a placeholder
the stage replaces (stage.py).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from .stage import PLACEHOLDER

LOCAL = "localhost,127.0.0.1,::1"


def proxy_environment(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """`env` with the proxy variables set, and the names whose values hold the placeholder."""
    http = f"http://127.0.0.1:{PLACEHOLDER}"
    socks = f"socks5h://127.0.0.1:{PLACEHOLDER}"
    values = {
        "HTTP_PROXY": http, "HTTPS_PROXY": http, "http_proxy": http, "https_proxy": http,
        "ALL_PROXY": socks, "all_proxy": socks,
        "npm_config_proxy": http, "npm_config_https_proxy": http,
        "YARN_HTTP_PROXY": http, "YARN_HTTPS_PROXY": http,
        "PIP_PROXY": http, "CARGO_HTTP_PROXY": http,
    }
    out = dict(env)
    for name in [k for k in out if k.upper() in {n.upper() for n in values} or k.upper() in ("NO_PROXY",)]:
        out.pop(name)  # a proxy of codebelt's own environment would not be reachable from inside
    out.update(values)
    out["NO_PROXY"] = out["no_proxy"] = LOCAL
    out["NODE_USE_ENV_PROXY"] = "1"
    # git reads http.proxy from its configuration; GIT_CONFIG_COUNT adds entries after the files'
    try:
        n = int(out.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        n = 0
    out[f"GIT_CONFIG_KEY_{n}"] = "http.proxy"
    out[f"GIT_CONFIG_VALUE_{n}"] = http
    out["GIT_CONFIG_COUNT"] = str(n + 1)
    names = [*values, f"GIT_CONFIG_VALUE_{n}"]
    return out, names


STAGE_PYTHON = os.path.realpath(sys.executable)


@functools.cache
def _stage_source() -> str:
    return (Path(__file__).parent / "stage.py").read_text()


def stage_command(channel_fd: int, names: list[str], argv: list[str]) -> list[str]:
    """`argv` run through the stage (codebelt's own interpreter, isolated from the environment
    and the current directory: `-I -S`)."""
    return [STAGE_PYTHON, "-I", "-S", "-c", _stage_source(), str(channel_fd), ",".join(names), "--", *argv]
