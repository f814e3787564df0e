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
    settings = load_settings(root, settings_file=Path(args.settings) if args.settings else None, overrides=overrides)
    import os

    trusted = getattr(args, "trust_workspace_hooks", False) or any(
        os.path.realpath(os.path.expanduser(r)) == str(root.resolve()) for r in settings.trusted_workspaces)
    hooks = []
    for label, workspace, section in settings.hook_layers:
        for event, groups in section.items():
            for g in groups:
                for h in g.hooks:
                    runs = not settings.disable_all_hooks and (trusted or not workspace)
                    hooks.append({"event": event, "matcher": g.matcher, "type": h.type, "command": h.command,
                                  "url": h.url, "if": h.if_, "source": label, "runs": runs})
    skipped = [h for h in hooks if not h["runs"] and not settings.disable_all_hooks]
    if skipped:
        settings.warnings.append(
            f"{len(skipped)} hook(s) from the workspace's own settings will not run: the workspace is not trusted "
            "(add it to trustedWorkspaces in ~/.config/codebelt/settings.json, or pass --trust-workspace-hooks)")
    report = {
        "root": str(root.resolve()),
        "files": settings.sources,
        "warnings": settings.warnings,
        "hooks": hooks,
        "settings": settings.to_json(),
        "sources": {key: settings.source_of(key) for key, _ in settings.leaves() if key not in _RULE_KEYS},
        "rules": [{"behavior": r.behavior, "rule": r.text, "source": r.source} for r in settings.rules],
    }
    if args.json:
        json.dump(report, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(_text(settings, report))
    return 0


_RULE_KEYS = {"permissions.allow", "permissions.ask", "permissions.deny"}


def _text(settings, report: dict[str, Any]) -> str:
    lines = [f"workspace: {report['root']}", "files read (highest priority first):"]
    lines += [f"  {f}" for f in report["files"]] or ["  (none)"]
    for w in report["warnings"]:
        lines.append(f"warning: {w}")
    lines.append("permission rules:")
    lines += [f"  {r['behavior']:5}  {r['rule']}    ({r['source']})" for r in report["rules"]] or ["  (none)"]
    if report["hooks"]:
        lines.append("hooks:")
        for h in report["hooks"]:
            what = h["command"] or h["url"]
            state = "" if h["runs"] else "  [not run: untrusted workspace]"
            lines.append(f"  {h['event']:<18} {h['matcher'] or '*':<12} {what}    ({h['source']}){state}")
    lines.append("settings:")
    width = max(len(k) for k in report["sources"])
    for key, value in settings.leaves():
        if key in _RULE_KEYS or key == "hooks":
            continue
        source = report["sources"][key]
        lines.append(f"  {key:<{width}}  {json.dumps(value, ensure_ascii=False)}" + ("" if source == "default" else f"    ({source})"))
    return "\n".join(lines) + "\n"
