"""Claude Code's hooks protocol: `config` (the settings section, matchers, HookSpec), `runner`
(command, http and Python hooks, bounded), `outcome` (reading and merging results as Claude Code
does), `engine` (which hooks run for an event, in parallel). Wired into every call by the session."""

from .config import EVENTS, HookSpec
from .engine import HookEngine
from .outcome import HookResult

__all__ = ["EVENTS", "HookSpec", "HookEngine", "HookResult"]
