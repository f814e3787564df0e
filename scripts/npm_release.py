"""A release of a program from the npm registry, installed once into a cache folder per version
(what the recorders of Claude Code and Codex run). Standard library only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def cache_dir(name: str) -> Path:
    """~/.cache/codebelt/NAME (XDG_CACHE_HOME honoured): one folder per installed version."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "codebelt" / name


def install(package: str, version: str, command: str, cache: Path) -> Path:
    """node_modules/.bin/COMMAND of PACKAGE@VERSION, installed into CACHE/VERSION on first use,
    checked to say VERSION when asked `--version`."""
    prefix = cache / version
    binary = prefix / "node_modules" / ".bin" / command
    if not binary.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"{package}@{version}"],
                       check=True)
    got = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    if version not in got.replace("(", " ").split():
        raise SystemExit(f"installed {package} says {got.strip()!r}, expected {version}")
    return binary
