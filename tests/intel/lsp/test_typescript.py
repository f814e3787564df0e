"""The LSP tool with a real typescript-language-server (installed with npm by
`scripts/setup.sh --test`, or here when npm exists); skipped with the reason where neither."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from codebelt import Session
from codebelt.intel.lsp.servers import typescript_server

FIXTURE = Path(__file__).parents[2] / "fixtures" / "lsp" / "typescript"
INSTALL = Path(os.environ.get("CODEBELT_TSLS_DIR", Path.home() / ".cache" / "codebelt-test" / "tsls"))
BIN = INSTALL / "node_modules" / ".bin" / "typescript-language-server"


@pytest.fixture(scope="module")
def tsls() -> Path:
    if not BIN.exists():
        if shutil.which("npm") is None or shutil.which("node") is None:
            pytest.skip("typescript-language-server is not installed and npm is not available to install it")
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(INSTALL),
                               "typescript-language-server@4", "typescript@5"], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not BIN.exists():
            pytest.skip(f"npm could not install typescript-language-server: {proc.stderr[-300:]}")
    return BIN


@pytest.fixture(scope="module")
def session(tsls, tmp_path_factory):
    root = (tmp_path_factory.mktemp("ts") / "proj").resolve()
    shutil.copytree(FIXTURE, root)
    spec = typescript_server(str(tsls), "tsls")
    servers = {"tsls": {"command": spec.command, "args": list(spec.args), "extensions": list(spec.extensions),
                        "initializationOptions": spec.initialization_options}}
    # the most time the settings give a server for its diagnostics after an edit (2 s by
    # default): tsserver on a machine at load 18 took longer, and the edit then has none to show
    with Session(root, mode="acceptEdits", settings={"lsp": {"autoDetect": False, "servers": servers,
                                                              "requestTimeoutMs": 30_000},
                                                      "intel": {"diagnosticsWaitMs": 10_000}}) as s:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = s.call("LSP", {"operation": "goToDefinition", "filePath": "src/main.ts", "line": 5, "character": 10})
            # tsserver loads the project in the background: until then it knows one file only
            if "lsp:tsls" in r.text and any(loc["path"] == "src/geometry.ts" for loc in r.data["locations"]):
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"typescript-language-server did not answer within 60 s: {r.text}")
        yield s


def test_definition_across_files(session):
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "src/main.ts", "line": 5, "character": 10})
    assert [f"{loc['path']}:{loc['line']}" for loc in r.data["locations"]] == ["src/geometry.ts:12"], r.text
    r = session.call("LSP", {"operation": "goToDefinition", "filePath": "src/main.ts", "line": 1, "character": 18})
    assert [f"{loc['path']}:{loc['line']}" for loc in r.data["locations"]] == ["src/geometry.ts:12"], r.text


def test_references_and_implementations(session):
    r = session.call("LSP", {"operation": "findReferences", "filePath": "src/geometry.ts", "line": 12, "character": 17})
    paths = {loc["path"] for loc in r.data["locations"]}
    assert paths == {"src/geometry.ts", "src/main.ts"}, r.text
    r = session.call("LSP", {"operation": "goToImplementation", "filePath": "src/geometry.ts", "line": 1, "character": 18})
    assert any(loc["line"] == 5 for loc in r.data["locations"]), r.text  # class Square implements Shape


def test_symbols(session):
    r = session.call("LSP", {"operation": "documentSymbol", "filePath": "src/geometry.ts"})
    names = {s["name"] for s in r.data["symbols"]}
    assert {"Shape", "Square", "totalArea", "area"} <= names, r.text


def test_diagnostics_after_an_edit(session):
    session.call("Read", {"file_path": "src/main.ts"})
    r = session.call("Edit", {"file_path": "src/main.ts", "old_string": "return totalArea(squares).toFixed(1);",
                              "new_string": "return totalArea(squares);"})
    assert not r.is_error, r.text
    diags = r.data.get("diagnostics") or []
    assert any(d["severity"] == "error" and d["line"] == 5 for d in diags), r.text
