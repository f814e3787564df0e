"""A thin Language Server Protocol client: one server per language per workspace (manager),
the JSON-RPC conversation (client, transport), where servers come from (servers), and the
operations of the LSP tool in codebelt's answer model (query, convert)."""

from .client import LspClient, LspCrashed, LspError, LspTimeout
from .manager import LspManager
from .query import Unanswered, ask
from .servers import ServerSpec, detected, from_settings

__all__ = ["LspClient", "LspCrashed", "LspError", "LspTimeout", "LspManager", "ServerSpec", "Unanswered",
           "ask", "detected", "from_settings"]
