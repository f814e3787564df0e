"""The permission modes and sandbox modes, as names (no pydantic: the CLI checks its arguments
against them before any settings are read)."""

from __future__ import annotations

MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
# What each mode lets through without asking, least first: dontAsk denies what would ask, plan
# denies every write and every command that is not read-only, default asks, acceptEdits allows
# writes inside the workspace, bypassPermissions allows everything.
MODES_NARROWEST_FIRST = ("dontAsk", "plan", "default", "acceptEdits", "bypassPermissions")
SANDBOX_MODES = ("auto", "bwrap", "landlock", "off", "required")
