"""Permission rules: `Tool` or `Tool(specifier)`, parsed once and matched many times.

Bash specifiers are command patterns where `*` matches any text (`Bash(ls *)` matches `ls` and
`ls -la`, not `lsof`; a trailing `:*` is the legacy spelling of ` *`). Path specifiers (Read,
Edit, …) are gitignore-style patterns: `//abs/path`, `~/in/home`, `/relative/to/root`,
`./relative/to/root`, or a bare pattern (`*.env` matches at any depth).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from .. import linear_regex
from ..errors import RuleError

if TYPE_CHECKING:
    from ..linear_regex import LinearPattern

_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)

@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None
    text: str
    source: str = ""
    root: Path = field(default=Path("/"), compare=False)

    @classmethod
    def parse(cls, text: str, source: str = "", root: Path = Path("/")) -> "Rule":
        m = _RULE.match(text)
        if not m:
            raise RuleError(f"permission rule {text!r} in {source or 'settings'} is not of the form Tool or Tool(specifier)")
        spec = m.group(2)
        if spec is not None:
            spec = spec.strip()
            if spec in ("", "*", "**"):
                spec = None  # Tool(*) means the whole tool
        return cls(m.group(1), spec, text.strip(), source, root)

    # -- Bash command patterns ----------------------------------------------------------------
    @cached_property
    def command_regex(self) -> "LinearPattern":
        """The command pattern as a regex, run in linear time: a rule from a repository's
        settings with many `*` (`Bash(*a*a*a*a*b)`) would otherwise backtrack for hours on a
        long command."""
        spec = self.specifier or "*"
        if spec.endswith(":*"):
            spec = spec[:-2] + " *"
        optional_tail = spec.endswith(" *")
        body = spec[:-2] if optional_tail else spec
        parts = []
        for chunk in re.split(r"(\\\*|\*)", body):
            if chunk == "*":
                parts.append(".*")
            elif chunk == "\\*":
                parts.append(re.escape("*"))
            else:
                parts.append(re.escape(chunk))
        pattern = "".join(parts) + (r"(?: .*)?" if optional_tail else "")
        return linear_regex.compile(pattern, re.S)

    @property
    def has_wildcard(self) -> bool:
        """Whether the specifier has an unescaped `*` (it then names a family of commands)."""
        spec = (self.specifier or "*").replace("\\*", "")
        return "*" in spec

    def matches_command(self, command: str) -> bool:
        if self.specifier is None:
            return True
        return self.command_regex.fullmatch(command.strip()) is not None

    # -- path patterns ------------------------------------------------------------------------
    @cached_property
    def _path_matcher(self) -> tuple[Path, object]:
        import pathspec

        spec = self.specifier or "**"
        if spec.startswith("//"):
            base, pattern = Path("/"), "/" + spec[2:].lstrip("/")
        elif spec.startswith("~/") or spec == "~":
            base, pattern = Path(os.path.expanduser("~")), "/" + spec[2:]
        elif spec.startswith("./"):
            base, pattern = self.root, "/" + spec[2:]
        elif spec.startswith("/"):
            base, pattern = self.root, spec
        else:
            base, pattern = self.root, spec
        if pattern in ("/", ""):
            pattern = "/**"
        base = Path(os.path.realpath(base))
        return base, pathspec.GitIgnoreSpec.from_lines([pattern])

    def matches_path(self, path: Path) -> bool:
        if self.specifier is None:
            return True
        base, spec = self._path_matcher
        try:
            rel = path.relative_to(base)
        except ValueError:
            return False
        rel_text = rel.as_posix()
        if rel_text == ".":
            return False
        # A pattern naming a directory covers everything under it.
        return spec.match_file(rel_text) or spec.match_file(rel_text + "/")  # type: ignore[attr-defined]


    def path_pattern(self) -> tuple[Path, str]:
        """(base, gitignore pattern relative to base) of a path rule."""
        base, spec = self._path_matcher
        return base, spec.patterns[0].pattern  # type: ignore[attr-defined]

    def path_regex(self) -> tuple[Path, "re.Pattern[str] | None"]:
        """(base, regex) such that `matches_path(p)` is `regex.match(rel)` for rel = p relative to
        base, tried as `rel` and `rel + "/"` (a walk tests thousands of names with it). The
        regex is None for a pattern that can match nothing (a negation)."""
        base, spec = self._path_matcher
        pattern = spec.patterns[0]  # type: ignore[attr-defined]
        return base, pattern.regex if pattern.include else None


def parse_rules(entries, root: Path) -> list[tuple[str, Rule]]:
    """(behavior, Rule) for every RuleSource; bad rules raise RuleError naming their source."""
    return [(e.behavior, Rule.parse(e.text, e.source, root)) for e in entries]


BEHAVIORS = ("deny", "ask", "allow")  # the order rules are consulted in


class RuleSet:
    """The parsed rules of a session and every lookup over them, in one place.

    Path rules come in two families: `Read(…)` rules cover every tool of the read family and
    `Edit(…)` rules every tool of the edit family (`families` maps tool names to their family, as
    the tools declare it); a rule naming another tool covers that tool only. A Read deny also
    denies writing the same path.
    """

    CANONICAL = {"read": "Read", "edit": "Edit"}

    def __init__(self, rules: list[tuple[str, Rule]], families: dict[str, str] | None = None):
        self.rules = rules
        members: dict[str, set[str]] = {fam: {name} for fam, name in self.CANONICAL.items()}
        for tool, fam in (families or {}).items():
            members.setdefault(fam, set()).add(tool)
        self.members = {fam: frozenset(names) for fam, names in members.items()}

    def of(self, behavior: str, tools) -> list[Rule]:
        names = set(tools)
        return [r for b, r in self.rules if b == behavior and r.tool in names]

    def has(self, behavior: str) -> bool:
        return any(b == behavior for b, _ in self.rules)

    def bare(self, tool: str) -> tuple[str, Rule] | None:
        """The first rule naming the whole tool (`Bash`, `Edit(*)`), deny before ask before allow."""
        for behavior in BEHAVIORS:
            for rule in self.of(behavior, [tool]):
                if rule.specifier is None:
                    return behavior, rule
        return None

    def match_command(self, command: str, tool: str = "Bash") -> tuple[str, Rule] | None:
        """The first rule (deny > ask > allow) that matches a command text."""
        for behavior in BEHAVIORS:
            for rule in self.of(behavior, [tool]):
                if rule.matches_command(command):
                    return behavior, rule
        return None

    def first_command_rule(self, behavior: str, texts: list[str], tool: str = "Bash",
                           exact: bool = False) -> Rule | None:
        """The first rule with a specifier matching any of `texts` (bare rules are the whole
        tool's business, decided before commands are looked at). `exact`: only rules without a
        wildcard, naming the command itself."""
        for rule in self.of(behavior, [tool]):
            if rule.specifier is None or (exact and rule.has_wildcard):
                continue
            if any(rule.matches_command(t) for t in texts):
                return rule
        return None

    def match_path(self, access: str, path: Path, tool: str | None = None) -> tuple[str, Rule] | None:
        """The first path rule that matches. A Read deny also denies writing the same path."""
        family = self.members["read" if access == "read" else "edit"]
        for behavior in BEHAVIORS:
            tools = set(family)
            if access == "write" and behavior == "deny":
                tools.add("Read")
            if tool:
                tools.add(tool)
            for rule in self.of(behavior, tools):
                if rule.specifier is None and rule.tool not in ("Read", "Edit") and rule.tool != tool:
                    continue  # a bare `Grep` rule covers Grep calls, not every read
                if rule.matches_path(path):
                    return behavior, rule
        return None

    def read_deny_under(self, directory: Path) -> Rule | None:
        """A Read deny rule that could match a file under `directory` (for commands that read
        whole trees: `grep -r`, `rg`, `git grep`, `diff -r`). Patterns without a slash match at
        any depth, so they always could."""
        for rule in self.of("deny", self.members["read"] | {"Read"}):
            if rule.specifier is None:
                return rule
            base, _ = rule._path_matcher
            spec = rule.specifier
            for lead in ("//", "~/", "./", "/"):
                if spec.startswith(lead):
                    spec = spec[len(lead):]
                    break
            else:
                if "/" not in spec.rstrip("/"):
                    return rule  # a bare name pattern: anywhere
            literal = []
            for part in spec.split("/"):
                if any(ch in part for ch in "*?[\\"):
                    break
                literal.append(part)
            prefix = Path(base, *literal) if literal else Path(base)
            if prefix == directory or directory in prefix.parents or prefix in directory.parents:
                return rule
        return None

    def read_deny_rules(self) -> list[Rule]:
        """The rules that deny reading: deny rules of the read family (and `Read`). A path is
        read-denied exactly when one of them matches it (deny is consulted first)."""
        return self.of("deny", self.members["read"] | {"Read"})

    def read_denied(self, path: Path) -> bool:
        m = self.match_path("read", path)
        return m is not None and m[0] == "deny"
