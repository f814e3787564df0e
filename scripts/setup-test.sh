#!/usr/bin/env bash
# Install everything the test suite needs (system packages, venv, Python deps), then run it.
# Works on a fresh Debian/Ubuntu machine with Python 3.11; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v git >/dev/null 2>&1 || need+=(git)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv)
if [ "${#need[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
