"""The hooks of one session: which run for an event, running them in parallel, merging."""

from __future__ import annotations

import concurrent.futures
import threading
from pathlib import Path
from typing import Any, Callable

from .config import HookSpec, matcher_matches
from .outcome import HookResult, merge
from .runner import HookRun, run_hook

MAX_PARALLEL = 8

# if_matcher(rule_text, tool_name, tool_input) -> whether the call matches the rule
IfMatcher = Callable[[str, str, dict[str, Any]], bool]


class HookEngine:
    def __init__(self, specs: list[HookSpec], project_dir: Path, *, if_matcher: IfMatcher | None = None,
                 on_run: Callable[[HookRun, str], None] | None = None):
        self.project_dir = project_dir
        self.if_matcher = if_matcher
        self.on_run = on_run
        self._by_event: dict[str, list[HookSpec]] = {}
        for s in specs:
            self._by_event.setdefault(s.event, []).append(s)

    def add(self, spec: HookSpec) -> None:
        self._by_event.setdefault(spec.event, []).append(spec)

    def has(self, event: str) -> bool:
        return bool(self._by_event.get(event))

    def select(self, event: str, tool_name: str | None = None, tool_input: dict[str, Any] | None = None,
               aliases: tuple[str, ...] = ()) -> list[HookSpec]:
        """The hooks for `event`; a matcher may name the tool or one of its `aliases` (the name
        another program's hooks know the same tool by)."""
        chosen: list[HookSpec] = []
        seen: set[tuple] = set()
        for s in self._by_event.get(event, ()):
            if not any(matcher_matches(s.matcher, n) for n in (tool_name, *aliases)):
                continue
            if s.if_rule and tool_name is not None and not self._if(s.if_rule, tool_name, tool_input or {}):
                continue
            if s.key in seen:
                continue  # identical handlers run once
            seen.add(s.key)
            chosen.append(s)
        return chosen

    def _if(self, rule: str, tool_name: str, tool_input: dict[str, Any]) -> bool:
        if self.if_matcher is None:
            return True
        try:
            return bool(self.if_matcher(rule, tool_name, tool_input))
        except Exception:  # noqa: BLE001 - cannot tell: fail safe, the hook fires
            return True

    def run(self, event: str, payload: dict[str, Any], tool_name: str | None = None,
            tool_input: dict[str, Any] | None = None, aliases: tuple[str, ...] = (),
            cancel: threading.Event | None = None) -> HookResult:
        """Run the hooks of `event` (in parallel) and merge their outcomes; command hooks are
        killed once `cancel` is set."""
        specs = self.select(event, tool_name, tool_input, aliases)
        if not specs:
            return HookResult()
        payload = {**payload, "hook_event_name": event}
        if len(specs) == 1:
            runs = [run_hook(specs[0], payload, self.project_dir, cancel)]
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(specs))) as pool:
                runs = list(pool.map(lambda s: run_hook(s, payload, self.project_dir, cancel), specs))
        result = merge(event, runs)
        if self.on_run is not None:
            for r in runs:
                try:
                    self.on_run(r, event)
                except Exception:  # noqa: BLE001 - the audit never fails a call
                    pass
        return result
