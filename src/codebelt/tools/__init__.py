"""The tool registry: every tool module, the Tool subclass each defines, and an index that lets a
session know its tools by name without importing them.

A tool's module (its pydantic models, the engines it runs) is imported when the tool is first
called or its spec asked for: `codebelt call Read` imports Read and nothing of Bash, LSP or the
MCP SDK. `INDEX` says, for each built-in tool, the module that defines it and the path-rule family
that covers it (what a session needs before any call: `Edit(src/**)` covers MultiEdit); a test
checks it against the classes. A module listed in TOOL_MODULES but missing from INDEX still works,
imported when a session starts.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tool import Tool

TOOL_MODULES = (
    "read", "write", "edit", "multi_edit", "notebook_edit", "glob", "grep",
    "bash", "bash_output", "kill_shell", "task_output", "task_stop", "task_input", "apply_patch",
    "lsp", "repo_map", "web_fetch",
)

# tool name → (module under codebelt.tools, path-rule family), in TOOL_MODULES order.
INDEX: dict[str, tuple[str, str | None]] = {
    "Read": ("read", "read"),
    "Write": ("write", "edit"),
    "Edit": ("edit", "edit"),
    "MultiEdit": ("multi_edit", "edit"),
    "NotebookEdit": ("notebook_edit", "edit"),
    "Glob": ("glob", "read"),
    "Grep": ("grep", "read"),
    "Bash": ("bash", None),
    "BashOutput": ("bash_output", None),
    "KillShell": ("kill_shell", None),
    "TaskOutput": ("task_output", None),
    "TaskStop": ("task_stop", None),
    "TaskInput": ("task_input", None),
    "ApplyPatch": ("apply_patch", "edit"),
    "LSP": ("lsp", "read"),
    "RepoMap": ("repo_map", "read"),
    "WebFetch": ("web_fetch", None),
}


# The built-in tools whose calls may start programs (a command, ripgrep, a language server for
# diagnostics, what is typed into a running task): their decisions say how those are confined.
# Their `starts_programs`; a test checks it against the classes.
STARTS_PROGRAMS = frozenset({"Write", "Edit", "MultiEdit", "Glob", "Grep", "Bash", "TaskInput", "ApplyPatch", "LSP",
                             "RepoMap"})


def module_tools(module_name: str) -> list[type[Tool]]:
    """The Tool subclasses `codebelt.tools.<module_name>` defines (importing it)."""
    from ..tool import Tool

    full = f"{__name__}.{module_name}"
    __import__(full)  # not importlib.import_module: `python -X importtime` reports this one
    module = sys.modules[full]
    return [obj for _, obj in inspect.getmembers(module, inspect.isclass)
            if issubclass(obj, Tool) and obj is not Tool and obj.__module__ == module.__name__]


# The tools of the codex profile: Codex's own names, parameters and texts on the same engines.
CODEX_TOOL_MODULES = ("exec_command", "write_stdin", "codex_patch", "view_image", "update_plan")
PROFILES = {"claude-code": TOOL_MODULES, "codex": CODEX_TOOL_MODULES}


def registry(profile: str = "claude-code") -> list[type[Tool]]:
    """Every built-in tool class of `profile` (imports its tool modules)."""
    return [t for name in PROFILES[profile] for t in module_tools(name)]


def load(name: str) -> type[Tool]:
    """The built-in tool class called `name` (importing its module only)."""
    module, _ = INDEX[name]
    for cls in module_tools(module):
        if cls.name == name:
            return cls
    raise LookupError(f"codebelt.tools.{module} defines no tool named {name!r}")


def _unindexed() -> list[type[Tool]]:
    """The tools of modules INDEX does not cover (imported now: their names are not known otherwise)."""
    indexed = {module for module, _ in INDEX.values()}
    return [t for name in TOOL_MODULES if name not in indexed for t in module_tools(name)]


class ToolTable(Mapping[str, "Tool"]):
    """A session's tools by name. Built-in tools are known by name and family from INDEX and
    instantiated — their module imported — on first access; tools given as classes are
    instantiated at once. Iteration keeps the registry's order."""

    def __init__(self, classes: Iterable[type[Tool]] | None = None, without: Iterable[str] = ()):
        """`classes`: the tools (None: every built-in tool but those named in `without`)."""
        self._order: list[str] = []
        self._families: dict[str, str | None] = {}
        self._starting: set[str] = set()
        self._tools: dict[str, Tool] = {}
        if classes is None:
            left_out = set(without)
            for name, (_, family) in INDEX.items():
                if INDEX[name][0] in TOOL_MODULES and name not in left_out:
                    self._order.append(name)
                    self._families[name] = family
                    if name in STARTS_PROGRAMS:
                        self._starting.add(name)
            classes = [cls for cls in _unindexed() if cls.name not in left_out]
        for cls in classes:
            self.add(cls())

    def __getitem__(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            if name not in self._families:
                raise KeyError(name)
            tool = self._tools[name] = load(name)()
        return tool

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __contains__(self, name: object) -> bool:
        return name in self._families

    def add(self, tool: Tool) -> None:
        """Add a tool instance, unless one of its name is there already."""
        name = tool.name
        if name in self._families:
            return
        self._order.append(name)
        self._families[name] = type(tool).permission_family
        if type(tool).starts_programs:
            self._starting.add(name)
            if type(tool).rules_as:  # decided as that tool (exec_command as Bash): confined as it
                self._starting.add(type(tool).rules_as)
        self._tools[name] = tool

    def family(self, name: str) -> str | None:
        """The path-rule family of a tool (None: not a path tool, or not a tool of this table)."""
        return self._families.get(name)

    def families(self) -> dict[str, str]:
        """{tool name: family} of the path tools, without importing any."""
        return {name: fam for name, fam in self._families.items() if fam}

    def starting_programs(self) -> set[str]:
        """The names of the tools whose calls may start programs, without importing any."""
        return set(self._starting)

    def loaded(self) -> list[str]:
        """The names whose tool is instantiated (for tests of the laziness)."""
        return [name for name in self._order if name in self._tools]


def builtin_families() -> dict[str, str]:
    """{built-in tool name: path-rule family}, without importing the indexed tools."""
    families = {name: fam for name, (module, fam) in INDEX.items() if fam and module in TOOL_MODULES}
    families.update({t.name: t.permission_family for t in _unindexed() if t.permission_family})
    return families
