"""Claude Code's LSP operations asked of a language server, answered in codebelt's model.

`ask()` returns None when no server can answer now (with the reason in `why`), so the caller
answers from tree-sitter instead and says so. A request never waits longer than the
manager's request timeout; a timeout or crash is reported to the manager (which restarts a
stuck server) and turns into the same fallback.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import IntelError
from ..model import Answer
from ..navigate import rank_symbols
from . import convert
from . import methods as lsp
from .client import LspClient, LspCrashed, LspError, LspTimeout
from .documents import Unreadable, read_document
from .manager import LspManager

METHODS = {
    "goToDefinition": (lsp.TEXT_DOCUMENT_DEFINITION, "definitionProvider"),
    "goToImplementation": (lsp.TEXT_DOCUMENT_IMPLEMENTATION, "implementationProvider"),
    "findReferences": (lsp.TEXT_DOCUMENT_REFERENCES, "referencesProvider"),
    "hover": (lsp.TEXT_DOCUMENT_HOVER, "hoverProvider"),
    "documentSymbol": (lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL, "documentSymbolProvider"),
    "workspaceSymbol": (lsp.WORKSPACE_SYMBOL, "workspaceSymbolProvider"),
    "prepareCallHierarchy": (lsp.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY, "callHierarchyProvider"),
    "incomingCalls": (lsp.CALL_HIERARCHY_INCOMING_CALLS, "callHierarchyProvider"),
    "outgoingCalls": (lsp.CALL_HIERARCHY_OUTGOING_CALLS, "callHierarchyProvider"),
}


class Unanswered(Exception):
    """No server answered; `str()` says why (the tool shows it as a note)."""


def ask(manager: LspManager, operation: str, path: Path, line: int | None, character: int | None,
        query: str | None, limit: int, name_at=None, timeout: float | None = None,
        client: LspClient | None = None) -> Answer:
    """One operation through the server for `path`'s language (or `client`). Positions are
    1-based; with `character` None, `name_at(path, line)` names the identifier the position falls
    on. Each request waits at most `timeout` (default: the manager's). Raises Unanswered when no
    server can answer now."""
    if client is None:
        client, why = manager.server_for(path)
        if client is None:
            raise Unanswered(why)
    wait = manager.request_timeout if timeout is None else max(0.05, timeout)
    method, capability = METHODS[operation]
    if not client.capabilities.get(capability):
        raise Unanswered(f"the {client.name} language server does not support {operation}")
    try:
        _resync_open(manager, client, path)
        text = _sync(manager, client, path) if operation != "workspaceSymbol" else ""
        lines = convert.Lines()
        if operation == "workspaceSymbol":
            result = _request(manager, client, method, {"query": query or ""}, wait)
            # servers order matches their own way (fuzzy scores): exact names first, before the cut
            symbols = rank_symbols(convert.symbols(lines, result), query or "")
            return _answer(client, symbols=symbols, limit=limit)
        doc = {"uri": path.as_uri()}
        if operation == "documentSymbol":
            result = _request(manager, client, method, {"textDocument": doc}, wait)
            return _answer(client, symbols=convert.symbols(lines, result, path), limit=limit)
        position = _position(text, line, character, name_at, path)
        params = {"textDocument": doc, "position": position}
        if operation == "findReferences":
            params["context"] = {"includeDeclaration": True}
        if operation in ("incomingCalls", "outgoingCalls"):
            items = _request(manager, client, lsp.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY, params, wait)
            if not items:
                return _answer(client, limit=limit)
            result = _request(manager, client, method, {"item": items[0]}, wait)
            key = "from" if operation == "incomingCalls" else "to"
            return _answer(client, symbols=convert.call_items(lines, result, key), limit=limit)
        result = _request(manager, client, method, params, wait)
        if operation == "hover":
            a = _answer(client, limit=limit)
            a.hover = convert.hover_text(result)
            return a
        if operation == "prepareCallHierarchy":
            return _answer(client, symbols=convert.call_items(lines, result), limit=limit)
        return _answer(client, locations=convert.locations(lines, result), limit=limit)
    except (LspTimeout, LspCrashed) as e:
        raise Unanswered(str(e)) from None
    except LspError as e:
        raise Unanswered(str(e)) from None


def _request(manager: LspManager, client: LspClient, method: str, params: dict, timeout: float):
    try:
        result = client.request(method, params, timeout)
    except (LspTimeout, LspCrashed) as e:
        manager.report(client, e)
        raise
    manager.report(client, None)
    return result


def _sync(manager: LspManager, client: LspClient, path: Path) -> str:
    try:
        text = read_document(path)
    except Unreadable as e:
        raise Unanswered(str(e)) from None
    client.sync(path, text, manager.language_id(path))
    return text


def _resync_open(manager: LspManager, client: LspClient, asked: Path) -> None:
    """Documents opened by earlier calls may have changed on disk since (Bash, another editor):
    the server would answer from the text we gave it. Send what the files hold now; close those
    that are gone or grew past the size cap (the server then reads the disk itself)."""
    for path in client.open_documents():
        if path == asked:
            continue  # synced next, with errors reported
        try:
            _sync(manager, client, path)
        except Unanswered:
            client.close_document(path)


def _position(text: str, line: int | None, character: int | None, name_at, path: Path) -> dict:
    lines = text.split("\n")
    if line is None or line < 1 or line > len(lines):
        raise IntelError(f"line {line} is outside {path.name} (1..{len(lines)})")
    src = lines[line - 1].rstrip("\r")
    if character is None:
        name = name_at(path, line) if name_at else None
        m = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", src) if name else None
        col = m.start() if m else -1
        if col < 0:
            raise IntelError(f"no identifier on line {line} of {path.name}; give character")
    else:
        if character < 1 or character > len(src) + 1:
            raise IntelError(f"character {character} is outside line {line} (1..{len(src) + 1})")
        col = character - 1
    return {"line": line - 1, "character": convert.chars_to_utf16(src, col)}


def _answer(client: LspClient, *, locations=None, symbols=None, limit: int) -> Answer:
    locations = locations or []
    symbols = symbols or []
    return Answer(backend=f"lsp:{client.name}", locations=locations[:limit], symbols=symbols[:limit],
                  total=max(len(locations), len(symbols)),
                  truncated=len(locations) > limit or len(symbols) > limit, note=client.caveat or None)
