"""`codebelt call Read` on a text file stays import-light: no MCP SDK, Pillow or pypdf."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("mcp", "PIL", "pypdf", "charset_normalizer")


def test_read_text_does_not_import_heavy_modules(ws):
    (ws / "a.txt").write_text("hello\n")
    code = (
        "import sys, json\n"
        "from codebelt.cli import main\n"
        "try:\n"
        "    main(['call', '--root', sys.argv[1], 'Read', json.dumps({'file_path': 'a.txt'})])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(ws)], capture_output=True, text=True, timeout=60)
    assert "hello" in res.stdout, res.stderr
    loaded = json.loads(res.stderr.strip().splitlines()[-1])
    assert loaded == []
