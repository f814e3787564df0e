"""Which language server serves which files: from settings, else found on this machine.

Settings (`lsp.servers`, the user's own files only: a server is a program codebelt runs) map a
name to `{"command", "args", "extensions", "env", "initializationOptions", "settings"}`. Claude
Code's `.lsp.json` plugin shape is accepted too: `{"command", "args", "extensionToLanguage":
{".py": "python"}}`. Found without settings: `basedpyright-langserver` (next to the running
interpreter, then on PATH) for Python, `typescript-language-server` on PATH for JavaScript and
TypeScript. Never from the workspace (its `node_modules/.bin` is the repository's code).

`runs_workspace_programs`: whether the server executes programs the workspace supplies.
basedpyright runs the workspace's interpreter (`.venv/bin/python`, or the one its config names)
to learn the search paths; typescript-language-server left alone loads the workspace's own
TypeScript; a server from settings is not known, so it is assumed to. Such a server starts only
in the read-only jail.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# File extension → LSP languageId.
LANGUAGE_IDS = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascriptreact", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "typescriptreact", ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".kt": "kotlin", ".swift": "swift", ".sh": "shellscript", ".bash": "shellscript",
}


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    extensions: dict[str, str] = field(default_factory=dict)  # ".py" → "python"
    env: dict[str, str] = field(default_factory=dict)
    initialization_options: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    runs_workspace_programs: bool = True
    # When its answers are whole (manager.py): "answered" — once it answered a first request;
    # "loaded" — once the project loading it reports by progress has ended (or it published
    # the first document's diagnostics); "quiet" — answered, then no progress under way.
    ready_when: str = "quiet"

    def argv(self) -> list[str]:
        return [self.command, *self.args]


# Servers whose readiness codebelt knows, by program name; any other server is "quiet".
READY_WHEN = {"basedpyright-langserver": "answered", "pyright-langserver": "answered",
              "typescript-language-server": "loaded"}


def from_settings(servers: dict[str, Any]) -> list[ServerSpec]:
    """Specs from the `lsp.servers` setting (already validated by the settings schema)."""
    out: list[ServerSpec] = []
    for name, raw in servers.items():
        ext_map: dict[str, str] = {}
        for ext in raw.get("extensions") or []:
            e = ext if ext.startswith(".") else "." + ext
            ext_map[e] = LANGUAGE_IDS.get(e, e.lstrip("."))
        for e, lang in (raw.get("extensionToLanguage") or {}).items():
            ext_map[e if e.startswith(".") else "." + e] = lang
        out.append(ServerSpec(
            name=name, command=raw["command"], args=tuple(raw.get("args") or ()), extensions=ext_map,
            env=dict(raw.get("env") or {}), initialization_options=raw.get("initializationOptions"),
            settings=dict(raw.get("settings") or {}),
            ready_when=READY_WHEN.get(os.path.basename(raw["command"]), "quiet"),
        ))
    return out


def _near_interpreter(name: str) -> str | None:
    for d in (Path(sys.prefix) / "bin", Path(sys.executable).parent):
        p = d / name
        if os.access(p, os.X_OK):
            return str(p)
    return None


def detected() -> list[ServerSpec]:
    """Servers installed on this machine that codebelt knows how to run."""
    out: list[ServerSpec] = []
    pyright = _near_interpreter("basedpyright-langserver") or shutil.which("basedpyright-langserver")
    if pyright:
        out.append(ServerSpec(
            "basedpyright", pyright, ("--stdio",), {".py": "python", ".pyi": "python"},
            settings={"basedpyright": {"analysis": {"diagnosticMode": "openFilesOnly", "typeCheckingMode": "standard"}}},
            # pyright analyses what a request needs when it is asked (its first answer waits for its
            # configuration and search paths); it reports no loading by progress
            ready_when="answered",
        ))
    tsls = shutil.which("typescript-language-server")
    if tsls:
        out.append(typescript_server(tsls))
    return out


TS_EXTENSIONS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def typescript_server(tsls: str, name: str = "typescript-language-server") -> ServerSpec:
    """typescript-language-server, pointed at the TypeScript installed next to it when there is
    one: left alone it prefers the workspace's own `node_modules/typescript`, which is the
    repository's code running on this machine unasked."""
    init: dict[str, Any] | None = None
    pkg = Path(os.path.realpath(tsls)).parent  # …/node_modules/typescript-language-server/lib
    for modules in (pkg.parent.parent, pkg.parent.parent.parent / "node_modules"):
        tsserver = modules / "typescript" / "lib" / "tsserver.js"
        if tsserver.is_file():
            # and no automatic type acquisition: it runs npm to install packages
            init = {"tsserver": {"path": str(tsserver)}, "disableAutomaticTypingAcquisition": True}
            break
    exts = {e: LANGUAGE_IDS[e] for e in TS_EXTENSIONS}
    # tsserver loads the project of the first opened file in the background, reported as
    # progress ("Initializing JS/TS language features"); until then its answers cover the open
    # files only (no references elsewhere, definitions in the wrong place)
    return ServerSpec(name, tsls, ("--stdio",), exts, initialization_options=init,
                      runs_workspace_programs=init is None, ready_when="loaded")


def for_extension(specs: list[ServerSpec], ext: str) -> ServerSpec | None:
    return next((s for s in specs if ext in s.extensions), None)
