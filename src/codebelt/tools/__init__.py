"""The tool registry: every tool module, and the Tool subclass each defines."""

from __future__ import annotations

import importlib
import inspect

from ..tool import Tool

TOOL_MODULES = (
    "read", "write", "edit", "multi_edit", "glob", "grep",
    "bash", "bash_output", "kill_shell", "task_output", "task_stop", "apply_patch",
    "lsp", "repo_map",
)


def registry() -> list[type[Tool]]:
    tools: list[type[Tool]] = []
    for name in TOOL_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Tool) and obj is not Tool and obj.__module__ == module.__name__:
                tools.append(obj)
    return tools
