"""The LSP method names codebelt uses, as plain strings.

They are lsprotocol's own constants (`tests/intel/lsp/test_methods.py` checks every one against
`lsprotocol.types`), spelled out here because importing `lsprotocol.types` takes about half a
second: paid only by code that needs its types, not by every session that never asks a server.
"""

CALL_HIERARCHY_INCOMING_CALLS = "callHierarchy/incomingCalls"
CALL_HIERARCHY_OUTGOING_CALLS = "callHierarchy/outgoingCalls"
CANCEL_REQUEST = "$/cancelRequest"
EXIT = "exit"
INITIALIZE = "initialize"
INITIALIZED = "initialized"
PROGRESS = "$/progress"
SHUTDOWN = "shutdown"
TEXT_DOCUMENT_DEFINITION = "textDocument/definition"
TEXT_DOCUMENT_DID_CHANGE = "textDocument/didChange"
TEXT_DOCUMENT_DID_CLOSE = "textDocument/didClose"
TEXT_DOCUMENT_DID_OPEN = "textDocument/didOpen"
TEXT_DOCUMENT_DOCUMENT_SYMBOL = "textDocument/documentSymbol"
TEXT_DOCUMENT_HOVER = "textDocument/hover"
TEXT_DOCUMENT_IMPLEMENTATION = "textDocument/implementation"
TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY = "textDocument/prepareCallHierarchy"
TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS = "textDocument/publishDiagnostics"
TEXT_DOCUMENT_REFERENCES = "textDocument/references"
WORKSPACE_CONFIGURATION = "workspace/configuration"
WORKSPACE_DID_CHANGE_CONFIGURATION = "workspace/didChangeConfiguration"
WORKSPACE_SYMBOL = "workspace/symbol"
WORKSPACE_WORKSPACE_FOLDERS = "workspace/workspaceFolders"
