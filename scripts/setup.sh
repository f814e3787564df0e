#!/usr/bin/env bash
# Install codebelt into ./.venv on a fresh Debian/Ubuntu machine with Python 3.11; safe to re-run.
#   bash scripts/setup.sh          the package (codebelt, apply_patch)
#   bash scripts/setup.sh --test   plus the test dependencies (and the MCP Inspector, if npm exists)
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)       # the Bash sandbox
command -v git >/dev/null 2>&1 || need+=(git)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || need+=(python3-venv)
# the resident jail's request path in C (src/codebelt/sandbox/_zygote.c; optional: without them the
# install still works and the resident uses its Python path)
command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
python3 -c "import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
  >/dev/null 2>&1 || need+=(python3-dev)
if [ "${#need[@]}" -gt 0 ]; then
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "${1:-}" = "--test" ]; then
  .venv/bin/python -m pip install -q -e '.[test]'
  # The MCP Inspector test installs this itself when missing; doing it here keeps it out of the test's time.
  inspector="${CODEBELT_INSPECTOR_DIR:-$HOME/.cache/codebelt-test/inspector-0.15.0}"
  if command -v npm >/dev/null 2>&1 && [ ! -d "$inspector/node_modules/@modelcontextprotocol/inspector" ]; then
    npm install --no-audit --no-fund --silent --prefix "$inspector" @modelcontextprotocol/inspector@0.15.0 >/dev/null 2>&1 \
      || echo "note: npm could not install the MCP Inspector; its test will say so and skip"
  fi
  # The TypeScript language server for the code-intelligence tests (they install it themselves when missing).
  tsls="${CODEBELT_TSLS_DIR:-$HOME/.cache/codebelt-test/tsls}"
  if command -v npm >/dev/null 2>&1 && [ ! -x "$tsls/node_modules/.bin/typescript-language-server" ]; then
    npm install --no-audit --no-fund --silent --prefix "$tsls" typescript-language-server@4 typescript@5 >/dev/null 2>&1 \
      || echo "note: npm could not install typescript-language-server; its tests will say so and skip"
  fi
else
  .venv/bin/python -m pip install -q -e .
fi
