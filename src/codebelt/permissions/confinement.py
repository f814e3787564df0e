"""How the programs a call starts are confined: one answer per call (`Decision.confinement`),
that the Bash tool and every helper obey.

- A shell command whose every part was judged read-only runs in the read-only jail when one
  works here: the jail is what makes acting on that judgement without asking safe (a classifier
  that models dozens of programs' arguments will have mismatches; in the jail they cost nothing).
- Any other command runs in the write sandbox, as sandbox.mode sets it up ("none" when the
  mode is off).
- A tool that starts helper programs on the model's behalf (ripgrep for Glob and Grep, language
  servers for LSP and the diagnostics after an edit, the code index's listing) gets "jail" when
  a jail works here, else "none" — then ripgrep runs with its own limits only, and a language
  server that would run the workspace's own programs is not started.
- A tool that starts no program gets "none": there is nothing to confine.

The facts (does a jail work, is the sandbox off) come from the session as callables, asked
only when a call needs them (finding out starts processes).
"""

from __future__ import annotations

from typing import Callable

from .decision import Confinement


class ConfinementPolicy:
    def __init__(self, jail_available: Callable[[], bool], sandbox_mode: str,
                 helper_tools: frozenset[str] = frozenset()):
        self._jail_available = jail_available
        self.sandbox_mode = sandbox_mode
        self.helper_tools = helper_tools

    def jail_available(self) -> bool:
        try:
            return bool(self._jail_available())
        except Exception:  # noqa: BLE001 - a failing sandbox means: no jail
            return False

    def for_command(self, all_read_only: bool) -> Confinement:
        if all_read_only and self.jail_available():
            return "jail"
        return "none" if self.sandbox_mode == "off" else "sandbox"

    def for_helpers(self) -> Confinement:
        return "jail" if self.jail_available() else "none"

    def for_tool(self, tool: str) -> Confinement:
        return self.for_helpers() if tool in self.helper_tools else "none"
