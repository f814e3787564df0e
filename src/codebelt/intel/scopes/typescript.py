"""TypeScript and JavaScript scopes (placeholder until filled in)."""
from __future__ import annotations
from tree_sitter import Node
from . import Import, Target, text


def target(root: Node, node: Node, name: str) -> Target:
    t = Target(name)
    t.member = node.parent is not None and node.parent.type == "member_expression"
    return t


def reexports(root: Node, name: str) -> list[Import]:
    return []


def class_bases(root: Node, line: int) -> list[str]:
    return []


def module_files(paths, rel: str, module: str) -> list[str]:
    return []
