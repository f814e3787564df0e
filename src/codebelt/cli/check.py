"""`codebelt check COMMAND [--json]`: explain the permission decision for a shell command.

Prints the parsed commands, the read-only verdict and what decided it, the permission rules
that match, the sandbox state and the final decision. The JSON form is a contract:
`decision` (allow|ask|deny), `read_only`, `reason`, `commands` [{argv, read_only, reason}],
`complex` (bool), plus extra fields. Exit 0 whatever the decision (2 for usage errors).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from . import UsageError
from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell_command", metavar="COMMAND", help="the shell command to check (one argument; quote it), or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the explanation as JSON")
    parser.add_argument("--cwd", default=None, help="directory the command would start in (default: the root)")


def run(args: argparse.Namespace) -> int:
    command = sys.stdin.read() if args.shell_command == "-" else args.shell_command
    from ..permissions.requests import CommandRequest

    with make_session(args, interactive=False, audit=False) as session:
        ws = session.workspace
        cwd = ws.resolve(args.cwd) if args.cwd else ws.root
        if not cwd.is_dir():
            raise UsageError(f"--cwd {args.cwd} is not a directory")
        decision, analysis = session.engine.explain_command(CommandRequest(command, cwd))
        report = _report(session, analysis, decision, cwd)
    if args.json:
        json.dump(report, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_text(report))
    return 0


def _report(session, a, decision, cwd: Path) -> dict[str, Any]:
    engine = session.engine
    rules = []
    texts = {a.command.strip()} | {t for v in a.commands for t in (v.rule_text, v.full_text) if t}
    for behavior, rule in engine.rules.rules:
        if rule.tool == "Bash" and (rule.specifier is None or any(rule.matches_command(t) for t in texts)):
            rules.append({"rule": rule.text, "behavior": behavior, "source": rule.source})
    return {
        "command": a.command,
        "decision": decision.behavior,
        "reason": decision.reason,
        "decided_by": decision.decided_by,
        "confinement": decision.confinement,
        "rule": decision.rule,
        "suggestion": decision.suggestion,
        "read_only": a.read_only,
        "read_only_reason": a.reason,
        "complex": a.complex is not None,
        "complex_reason": a.complex,
        "too_long": a.too_long,
        "dangerous": a.dangerous,
        "commands": [v.to_dict() for v in a.commands],
        "matching_rules": rules,
        "sandbox": _sandbox(session),
        "mode": engine.mode,
        "cwd": str(cwd),
    }


def _sandbox(session) -> dict[str, Any]:
    try:
        st = session.sandbox().status
    except Exception as e:  # noqa: BLE001 - explanation only; the decision already treated it as off
        return {"active": False, "reason": f"sandbox unavailable: {e}", "jail": None, "jail_reason": str(e)}
    out = {"active": bool(st.active), "backend": st.backend, "reason": st.reason,
           "jail": st.jail, "jail_reason": st.jail_reason}
    if session.settings.sandbox.mode == "off":
        out["reason"] = "sandbox.mode is off"
    return out


def _text(r: dict[str, Any]) -> str:
    lines = [f"command: {r['command'] if len(r['command']) < 300 else r['command'][:297] + '...'}"]
    if r["complex"]:
        lines.append(f"parsed: complex — {r['complex_reason']} (never auto-allowed)")
    else:
        lines.append(f"parsed: {len(r['commands'])} simple command(s)")
        for i, c in enumerate(r["commands"], 1):
            mark = "" if c["read_only"] else "NOT read-only: "
            op = {"": "", "\n": " [newline]"}.get(c["op"], f" [{c['op']}]")
            lines.append(f"  {i}. {' '.join(c['argv']) or '(assignment/redirection only)'}{op}")
            lines.append(f"       {mark}{c['reason']}")
            for w in c["writes"]:
                lines.append(f"       writes: {w}")
            for w in c["reads"][:10]:
                lines.append(f"       reads: {w}")
            if c["dangerous"]:
                lines.append(f"       DANGEROUS: {c['dangerous']}")
            if c["ask_reason"]:
                lines.append(f"       always asks: {c['ask_reason']}")
    if r["dangerous"] and r["complex"]:
        lines.append(f"DANGEROUS: {r['dangerous']}")
    if r["too_long"]:
        lines.append("too long: over 10,000 characters always asks")
    lines.append(f"read-only: {'yes' if r['read_only'] else 'no'} ({r['read_only_reason']})")
    if r["matching_rules"]:
        for m in r["matching_rules"]:
            lines.append(f"rule: {m['behavior']} {m['rule']} ({m['source']})")
    else:
        lines.append("rules: none match")
    sb = r["sandbox"]
    lines.append(f"sandbox: {'active (' + str(sb.get('backend')) + ')' if sb.get('active') else 'off'} — {sb.get('reason', '')}")
    lines.append(f"read-only jail: {sb.get('jail') or 'none'} — {sb.get('jail_reason', '')}")
    lines.append(f"mode: {r['mode']}")
    lines.append(f"decision: {r['decision'].upper()} — {r['reason']}")
    lines.append("runs in: " + {"jail": "the read-only jail", "sandbox": "the write sandbox (as sandbox.mode sets it up)",
                                "none": "no sandbox"}[r["confinement"]])
    if r["suggestion"] and r["decision"] != "allow":
        lines.append(f"to allow: {r['suggestion']}")
    return "\n".join(lines) + "\n"
