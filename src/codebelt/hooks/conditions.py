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
            return tool_name == rule.tool  # no path to judge: only a rule naming the tool
        try:
            return rule.matches_path(workspace.resolve(path))
        except CodebeltError:
            return True
    return matches
