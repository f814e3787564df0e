"""Go scopes: blocks and functions over the package, whose scope is every file of its
directory; a name is bound by `:=`, `var`, `const`, a parameter or result, a range variable,
or an import (`alias "path"`, else the path's last element). A selector's operand is followed
one step: an imported package, or a variable whose declaration names its type (a receiver
`s *S`, `var w T`, `v := T{}`, `&T{}`). Import paths map to directories by go.mod's module
path, else by their trailing elements."""

from __future__ import annotations

import posixpath

from tree_sitter import Node

from . import Import, Target, text, walk

SCOPES = frozenset({"function_declaration", "method_declaration", "func_literal", "block",
                    "for_statement", "if_statement", "switch_statement",
                    "type_switch_statement", "expression_switch_statement", "select_statement",
                    "communication_case", "expression_case", "type_case", "default_case"})
SAME_PACKAGE = "."


def target(root: Node, node: Node, name: str) -> Target:
    t = Target(name)
    p = node.parent
    if p is None:
        return t
    if p.type == "selector_expression" and p.child_by_field_name("field") == node:
        _member(root, p.child_by_field_name("operand"), t)
        return t
    if p.type == "qualified_type" and p.child_by_field_name("name") == node:
        pkg = p.child_by_field_name("package")
        imp = _package(root, text(pkg))
        if imp is not None:
            t.imports.append(Import(imp.module, name, imp.line))
        return t
    if node.type == "package_identifier":
        spec = _package_spec(root, name)
        if spec is not None:
            t.spots.append(spec)  # a package name's definition is the import that names it
        return t
    if node.type == "field_identifier":
        t.member = True  # a struct literal's key, a field declaration
        return t
    found = _local(node, name)
    if found:
        t.spots += found
        return t
    spec = _package_spec(root, name)
    if spec is not None:
        t.spots.append(spec)
        return t
    t.imports.append(Import(SAME_PACKAGE, name))
    return t


def _local(node: Node, name: str) -> list[Node]:
    n = node.parent
    while n is not None and n.type != "source_file":
        if n.type in SCOPES:
            found = [b for b in walk(n, SCOPES) if b.type == "identifier" and text(b) == name
                     and _is_binding(b, n)]
            if found:
                return found[:1]
        n = n.parent
    return []


def _is_binding(b: Node, scope: Node) -> bool:
    p = b.parent
    if p is None:
        return False
    if p.type == "expression_list":
        q = p.parent
        return q is not None and q.type in ("short_var_declaration", "range_clause") and \
            q.child_by_field_name("left") == p
    if p.type in ("parameter_declaration", "variadic_parameter_declaration", "var_spec",
                  "const_spec"):
        return any(c == b for c in p.children_by_field_name("name"))
    if p.type == "type_switch_statement":
        return p.child_by_field_name("alias") == b
    return False


def _package(root: Node, name: str) -> Import | None:
    """The import that binds package name `name` in this file."""
    spec = _package_spec(root, name)
    if spec is None:
        return None
    return Import(text(spec.child_by_field_name("path")).strip('"`'), None, spec.start_point[0] + 1)


def _package_spec(root: Node, name: str) -> Node | None:
    for spec in walk(root, frozenset({"function_declaration", "method_declaration",
                                      "type_declaration"})):
        if spec.type != "import_spec":
            continue
        path = text(spec.child_by_field_name("path")).strip('"`')
        alias = spec.child_by_field_name("name")
        local = text(alias) if alias is not None else path.rstrip("/").rpartition("/")[2]
        if local == name:
            return spec
    return None


def _member(root: Node, operand: Node | None, t: Target) -> None:
    t.member = True
    if operand is None or operand.type != "identifier":
        return
    name = text(operand)
    local = _local(operand, name)
    if not local:
        imp = _package(root, name)
        if imp is not None:
            t.imports.append(Import(imp.module, t.name, imp.line))
        return
    for b in local:
        typ = _declared_type(b)
        if typ:
            t.member_of.append(typ)


def _declared_type(b: Node) -> str | None:
    p = b.parent
    typ = p.child_by_field_name("type") if p is not None and p.type in (
        "parameter_declaration", "var_spec") else None
    if typ is None and p is not None and p.type == "expression_list":
        q = p.parent
        right = q.child_by_field_name("right") if q is not None else None
        if right is not None and right.named_child_count == p.named_child_count:
            value = right.named_children[p.named_children.index(b)]
            if value.type == "unary_expression":
                value = value.child_by_field_name("operand") or value
            if value.type == "composite_literal":
                typ = value.child_by_field_name("type")
    while typ is not None and typ.type in ("pointer_type", "generic_type"):
        typ = typ.named_children[0] if typ.named_children else None
    if typ is not None and typ.type == "qualified_type":
        typ = typ.child_by_field_name("name")
    return text(typ) if typ is not None and typ.type == "type_identifier" else None


def reexports(root: Node, name: str) -> list[Import]:
    return []  # Go has no re-exports


def class_bases(root: Node, line: int) -> list[str]:
    return []  # embedding is not followed


def member_files(index, paths: list[str]) -> list[str]:
    """A type's methods may be in any file of its package (directory)."""
    dirs = {posixpath.dirname(p) for p in paths}
    return sorted(p for p in index.all_paths() if p.endswith(".go") and posixpath.dirname(p) in dirs)


def package_files(paths: frozenset[str], rel: str, module: str,
                  gomod: tuple[str, str] | None) -> list[str]:
    if module == SAME_PACKAGE:
        d = posixpath.dirname(rel)
        return sorted(p for p in paths if p.endswith(".go") and posixpath.dirname(p) == d
                      and not p.endswith("_test.go") or p == rel)
    dirs = {posixpath.dirname(p) for p in paths if p.endswith(".go")}
    if gomod is not None:
        mod_dir, mod_path = gomod
        if module == mod_path or module.startswith(mod_path + "/"):
            d = posixpath.join(mod_dir, module[len(mod_path):].lstrip("/")).strip("/")
            d = posixpath.normpath(d) if d else ""
            d = "" if d == "." else d
            return _go_files(paths, d) if d in dirs else []
    parts = module.split("/")
    for k in range(len(parts)):  # the longest trailing part of the path some directory has
        tail = "/".join(parts[k:])
        found = [d for d in dirs if d == tail or d.endswith("/" + tail)]
        if found:
            return [f for d in sorted(found)[:1] for f in _go_files(paths, d)]
    return []


def _go_files(paths: frozenset[str], d: str) -> list[str]:
    return sorted(p for p in paths if p.endswith(".go") and posixpath.dirname(p) == d
                  and not p.endswith("_test.go"))
