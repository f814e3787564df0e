"""A hook's `if`: one permission rule the call must match, matched as permission rules are.

For Bash the rule is matched against each simple command of a compound command (`ls && git push`
matches `Bash(git push *)`); a command that cannot be parsed matches every `if`, so hooks fail
safe (they all fire). For path tools the rule names paths (`Edit(src/**)`)."""

from __future__ import annotations

from typing import Any

from ..errors import CodebeltError
from ..permissions.rules import Rule
from ..shell.analysis.parse import parse
from ..shell.analysis.wrappers import unwrap
from ..workspace import Workspace


def if_matcher(workspace: Workspace, families: dict[str, str]):
    def matches(rule_text: str, tool_name: str, tool_input: dict[str, Any]) -> bool:
        try:
            rule = Rule.parse(rule_text, "hook", workspace.root)
        except CodebeltError:
            return True  # an `if` we cannot read: fail safe
        if rule.tool == "Bash":
            if tool_name != "Bash":
                return False
            command = str(tool_input.get("command", ""))
            if rule.specifier is None:
                return True
            script = parse(command)
            if script.complex or not script.commands:
                return True
            texts = {command.strip()}
            for c in script.commands:
                u = unwrap(c.argv, c.assignments)
                texts.update(t for t in (" ".join(c.argv), " ".join(u.argv)) if t)
            return any(rule.matches_command(t) for t in texts)
        canonical = {"Read": "read", "Edit": "edit"}.get(rule.tool)
        if rule.tool != tool_name and not (canonical and families.get(tool_name) == canonical):
            return False
        if rule.specifier is None:
            return True
        path = tool_input.get("file_path") or tool_input.get("filePath") or tool_input.get("path")
        if not isinstance(path, str):
            patched = _patch_paths(tool_input)
            if patched is not None:  # a patch (Codex's apply_patch): any path it touches
                return not patched or any(_matches_path(rule, workspace, p) for p in patched)
            return tool_name == rule.tool  # no path to judge: only a rule naming the tool
        return _matches_path(rule, workspace, path)
    return matches


def _matches_path(rule: Rule, workspace: Workspace, path: str) -> bool:
    try:
        return rule.matches_path(workspace.resolve(path))
    except CodebeltError:
        return True


def _patch_paths(tool_input: dict[str, Any]) -> list[str] | None:
    """The paths a patch in `command` touches ([] for one that does not parse: fail safe, the
    hook fires); None when `command` holds no patch."""
    text = tool_input.get("command")
    if not isinstance(text, str) or not text.lstrip().startswith("*** Begin Patch"):
        return None
    from ..patch.parser import parse_patch

    try:
        return list(parse_patch(text).paths())
    except CodebeltError:
        return []
