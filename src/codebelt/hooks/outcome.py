"""What hook runs say, read exactly as Claude Code reads them, and merged.

Exit 2 blocks (PreToolUse: the call is denied with stderr as the reason; PostToolUse: stderr goes
to the model as feedback). Exit 0: stdout is parsed as JSON when it is JSON. Anything else is a
non-blocking error: logged and audited, never failing the call. Several hooks of one event are
merged in configuration order: permission decisions by precedence deny > defer > ask > allow,
reasons and contexts joined, the last `updatedInput` wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .runner import HookRun

MAX_CONTEXT = 10_000
PRECEDENCE = {"deny": 4, "defer": 3, "ask": 2, "allow": 1}


@dataclass
class HookResult:
    """The merged answer of every hook that ran for one event."""

    blocked: bool = False  # exit 2, or decision "block" / permissionDecision deny
    reasons: list[str] = field(default_factory=list)  # why it blocked (for the model)
    permission: str | None = None  # allow | deny | ask | defer (PreToolUse), allow | deny (PermissionRequest)
    permission_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)  # additionalContext
    feedback: list[str] = field(default_factory=list)  # PostToolUse exit-2 stderr, decision block reasons
    system_messages: list[str] = field(default_factory=list)
    stop: bool = False  # continue: false
    stop_reason: str | None = None
    suppress_output: bool = False
    errors: list[str] = field(default_factory=list)  # non-blocking failures
    runs: list[HookRun] = field(default_factory=list)

    @property
    def additional_context(self) -> str:
        text = "\n".join(self.context)
        return text if len(text) <= MAX_CONTEXT else text[:MAX_CONTEXT] + "… (cut at 10,000 characters)"


def parse_json(run: HookRun) -> dict[str, Any] | None:
    if run.json is not None:
        return run.json
    text = run.stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def merge(event: str, runs: list[HookRun]) -> HookResult:
    r = HookResult(runs=runs)
    for run in runs:
        label = run.spec.label
        if run.error is not None and run.exit_code != 2:
            r.errors.append(f"{label}: {run.error}")
            continue
        if run.exit_code == 2:
            message = run.stderr.strip() or f"blocked by hook {label}"
            if event in ("PostToolUse", "PostToolUseFailure"):
                r.feedback.append(message)
            else:
                r.blocked = True
                r.reasons.append(message)
                if event in ("PreToolUse", "PermissionRequest"):
                    _decide(r, "deny", message)
            continue
        if run.exit_code not in (0, None) and run.exit_code != 2:
            r.errors.append(f"{label}: exited with {run.exit_code}" + (f": {run.stderr.strip()[:500]}" if run.stderr.strip() else ""))
            continue
        data = parse_json(run)
        if data is None:
            if run.stdout.strip() and run.stdout.strip().startswith("{"):
                r.errors.append(f"{label}: printed invalid JSON")
            elif event in ("SessionStart",) and run.stdout.strip():
                r.context.append(run.stdout.strip())
            continue
        _read(event, data, r, label)
    return r


def _decide(r: HookResult, decision: str, reason: str | None) -> None:
    if r.permission is None or PRECEDENCE.get(decision, 0) > PRECEDENCE.get(r.permission, 0):
        r.permission, r.permission_reason = decision, reason


def _read(event: str, data: dict[str, Any], r: HookResult, label: str) -> None:
    if data.get("continue") is False:
        r.stop = True
        r.stop_reason = str(data.get("stopReason") or f"stopped by hook {label}")
    if data.get("suppressOutput") is True:
        r.suppress_output = True
    if isinstance(data.get("systemMessage"), str):
        r.system_messages.append(data["systemMessage"])
    if data.get("decision") == "block":
        reason = str(data.get("reason") or f"blocked by hook {label}")
        if event in ("PostToolUse", "PostToolUseFailure"):
            r.feedback.append(reason)
        else:
            r.blocked = True
            r.reasons.append(reason)
            if event in ("PreToolUse", "PermissionRequest"):
                _decide(r, "deny", reason)
    elif data.get("decision") == "approve" and event == "PreToolUse":  # Claude Code's older spelling
        _decide(r, "allow", data.get("reason"))
    specific = data.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    if event == "PreToolUse":
        decision = specific.get("permissionDecision")
        if decision in PRECEDENCE:
            _decide(r, decision, specific.get("permissionDecisionReason"))
        if isinstance(specific.get("updatedInput"), dict):
            r.updated_input = specific["updatedInput"]
    if event == "PermissionRequest":
        d = specific.get("decision")
        if isinstance(d, dict) and d.get("behavior") in ("allow", "deny"):
            _decide(r, d["behavior"], d.get("message"))
            if isinstance(d.get("updatedInput"), dict):
                r.updated_input = d["updatedInput"]
    if isinstance(specific.get("additionalContext"), str):
        r.context.append(specific["additionalContext"])
