"""Fixtures for the MCP tests (the helpers live in helpers.py)."""

from .helpers import http_url, project  # noqa: F401  (fixtures)
