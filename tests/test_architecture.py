"""The layering in docs/architecture.md, as import-linter contracts (pyproject.toml): engines
never import the session, tools or permissions; imports only point down; no cycles."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is a test dependency (pip install -e '.[test]')"
    out = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert re.search(r"Contracts: \d+ kept, 0 broken", out.stdout), out.stdout[-2000:]
