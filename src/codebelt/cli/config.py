"""`codebelt config [--json] [--schema]`: the merged settings, with the file each value came from.

`--schema` prints the JSON Schema of the settings files (for editors: point a file's `$schema`
at it). A settings file or value that cannot be used is reported with its file and key (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..settings import json_schema, load_settings
from ..shell.execution.environment import removed_variables


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the settings and their sources as JSON")
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema of a settings file")


def run(args: argparse.Namespace) -> int:
    if args.schema:
        json.dump(json_schema(), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    overrides: dict[str, Any] = {}
    if args.mode:
        overrides["permissions"] = {"defaultMode": args.mode}
    if args.sandbox:
        overrides["sandbox"] = {"mode": args.sandbox}
    root = Path(args.root).expanduser()
    settings = load_settings(root, settings_file=Path(args.settings) if args.settings else None, overrides=overrides,
                             trust_workspace=getattr(args, "trust_workspace", False))
    hooks = []
    for label, workspace, section in settings.hook_layers:
        for event, groups in section.items():
            for g in groups:
                for h in g.hooks:
                    hooks.append({"event": event, "matcher": g.matcher, "type": h.type, "command": h.command,
                                  "url": h.url, "if": h.if_, "source": label, "runs": not settings.disable_all_hooks,
                                  **({"why": "disableAllHooks"} if settings.disable_all_hooks else {})})
    hooks += _ignored_hooks(settings)
    report = {
        "root": str(root.resolve()),
        "trusted": settings.trust.trusted,
        "trust": settings.trust.how or f"not trusted: its own settings files may only narrow access; to trust it, "
                 f"{settings.trust.hint()}",
        "files": settings.sources,
        "warnings": settings.warnings,
        "ignored": [i.to_dict() for i in settings.ignored],
        "hooks": hooks,
        "settings": settings.to_json(),
        "sources": {key: settings.source_of(key) for key, _ in settings.leaves() if key not in _RULE_KEYS},
        "rules": [{"behavior": r.behavior, "rule": r.text, "source": r.source} for r in settings.rules],
        # names only, never values: what commands will not see, and whether the name or the value said so
        "environment": {"policy": settings.bash.env,
                        "removed": removed_variables(allow=settings.bash.env_allow)},
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_text(settings, report))
    return 0


_RULE_KEYS = {"permissions.allow", "permissions.ask", "permissions.deny"}


def _ignored_hooks(settings) -> list[dict[str, Any]]:
    """The hooks of an untrusted workspace's own files, shown as not run (as written: they were
    never validated, since they are not taken)."""
    out: list[dict[str, Any]] = []
    for item in settings.ignored:
        if item.key != "hooks" or item.why != "untrusted" or not isinstance(item.value, dict):
            continue
        for event, groups in item.value.items():
            for g in groups if isinstance(groups, list) else []:
                handlers = g.get("hooks") if isinstance(g, dict) else None
                for h in handlers if isinstance(handlers, list) else []:
                    if isinstance(h, dict):
                        out.append({"event": str(event), "matcher": g.get("matcher"), "type": h.get("type"),
                                    "command": h.get("command"), "url": h.get("url"), "if": h.get("if"),
                                    "source": item.source, "runs": False, "why": "untrusted workspace"})
    return out


def _text(settings, report: dict[str, Any]) -> str:
    lines = [f"workspace: {report['root']} ({'trusted: ' if report['trusted'] else ''}{report['trust']})",
             "files read (highest priority first):"]
    lines += [f"  {f}" for f in report["files"]] or ["  (none)"]
    for w in report["warnings"]:
        lines.append(f"warning: {w}")
    lines.append("permission rules:")
    lines += [f"  {r['behavior']:5}  {r['rule']}    ({r['source']})" for r in report["rules"]] or ["  (none)"]
    if report["hooks"]:
        lines.append("hooks:")
        for h in report["hooks"]:
            what = h["command"] or h["url"]
            state = "" if h["runs"] else f"  [not run: {h['why']}]"
            lines.append(f"  {h['event']:<18} {h['matcher'] or '*':<12} {what}    ({h['source']}){state}")
    removed = report["environment"]["removed"]
    lines.append(f"commands' environment ({report['environment']['policy']}): "
                 + (f"{len(removed)} variable(s) that look secret are removed (bash.envAllow passes one on):"
                    if removed else "no variable here looks secret"))
    lines += [f"  {name}  (by its {why})" for name, why in removed.items()]
    lines.append("settings:")
    width = max(len(k) for k in report["sources"])
    for key, value in settings.leaves():
        if key in _RULE_KEYS or key == "hooks":
            continue
        source = report["sources"][key]
        lines.append(f"  {key:<{width}}  {json.dumps(value, ensure_ascii=False)}" + ("" if source == "default" else f"    ({source})"))
    return "\n".join(lines) + "\n"
