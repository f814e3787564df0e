"""codebelt as an MCP server (the `mcp` SDK, low-level `Server`). See docs/mcp.md.

    bridge = Bridge(session)            # tools/list + tools/call over the Session
    await serve_stdio(bridge)           # or: await serve_http(bridge, "127.0.0.1", 8765, token)

Imported only by `codebelt serve` and by library users who want the server: it imports the SDK.
"""

from .bridge import Bridge, mcp_tool, tool_annotations
from .instructions import INSTRUCTIONS, instructions_for
from .transport import http_app, is_loopback, serve_http, serve_stdio

__all__ = [
    "Bridge", "mcp_tool", "tool_annotations", "INSTRUCTIONS", "instructions_for",
    "http_app", "is_loopback", "serve_http", "serve_stdio",
]
