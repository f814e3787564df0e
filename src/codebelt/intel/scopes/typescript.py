"""TypeScript and JavaScript scopes: blocks, functions, classes and loops over the module; a
name is bound by a declaration (`const`/`let`/`var`, function, class, interface, type, enum),
a parameter, a catch or loop variable, or an import (`import D, { a as b } from`, `import * as
ns from`). An attribute's receiver is followed one step: `this` (the enclosing class),
`super`, a namespace import, a class, or a variable whose type annotation or `new C()` names its
class. Modules are files found from relative specifiers the way TypeScript does (`./x` →
x.ts, x.tsx, x.d.ts, x.js, x/index.ts …; `./x.js` written for x.ts)."""

from __future__ import annotations

import posixpath

from tree_sitter import Node

from . import Import, Target, text, walk

FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                       "method_definition", "generator_function_declaration",
                       "generator_function", "function_signature", "method_signature",
                       "abstract_method_signature", "call_signature", "construct_signature",
                       "function_type", "constructor_type"})
DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration",
                          "class_declaration", "abstract_class_declaration", "class",
                          "interface_declaration", "type_alias_declaration", "enum_declaration",
                          "internal_module", "module"})
SCOPES = FUNCTIONS | frozenset({"program", "statement_block", "for_statement", "for_in_statement",
                                "catch_clause", "class_declaration", "abstract_class_declaration",
                                "class", "interface_declaration", "type_alias_declaration"})
NAMES = frozenset({"identifier", "type_identifier", "shorthand_property_identifier_pattern"})
CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
MEMBER_DEFS = frozenset({"method_definition", "public_field_definition", "method_signature",
                         "property_signature", "abstract_method_signature"})
EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
INDEXES = tuple(f"/index{e}" for e in (".ts", ".tsx", ".d.ts", ".js", ".jsx"))
MAX_RECEIVER_STEPS = 4


def target(root: Node, node: Node, name: str) -> Target:
    t = Target(name)
    p = node.parent
    if p is None:
        return t
    if p.type in MEMBER_DEFS and p.child_by_field_name("name") == node:
        t.spots.append(node)  # a member's own definition
        return t
    if p.type == "member_expression" and p.child_by_field_name("property") == node:
        _member(root, p.child_by_field_name("object"), t)
        return t
    if p.type == "namespace_import":  # `import * as ns from "./m"`, at ns itself: the module
        t.module_of = _import_of(node)
        return t
    if p.type in ("export_specifier", "import_specifier", "namespace_export"):
        imp = _import_of(node)
        if imp is not None:
            t.imports.append(imp)
            return t
    if node.type == "property_identifier":
        t.member = True  # an object literal's key, a property in a type: no scope here
        return t
    for b in bindings_of(root, node, name):
        imp = _import_of(b)
        if imp is None or imp.name is None:
            t.spots.append(b)  # a namespace import's definition is its own declaration
        else:
            t.imports.append(imp)
    if p.type == "new_expression" and p.child_by_field_name("constructor") == node:
        t.constructor = True  # `new C()`: the class and its constructor
    return t


def bindings_of(root: Node, node: Node, name: str) -> list[Node]:
    n = node
    while n is not None:
        if n.type in SCOPES:
            found = _bindings(n, name)
            if found:
                return found
        n = n.parent
    return []


def _bindings(scope: Node, name: str) -> list[Node]:
    out = []
    for n in walk(scope, SCOPES):
        if n is not scope and n.type in SCOPES:
            if n.type in DECLARATIONS or n.type in CLASSES:
                nm = n.child_by_field_name("name")
                if nm is not None and text(nm) == name:
                    out.append(nm)
            continue
        if n.type in NAMES and text(n) == name and _is_binding(n, scope):
            out.append(n)
    return out


def _is_binding(n: Node, scope: Node) -> bool:
    p = n.parent
    if p is None:
        return False
    t = p.type
    if t in DECLARATIONS:
        return p.child_by_field_name("name") == n and p is not scope
    if t == "variable_declarator":
        return p.child_by_field_name("name") == n
    if t in ("object_pattern", "array_pattern", "rest_pattern", "assignment_pattern",
             "object_assignment_pattern"):
        return True
    if t == "pair_pattern":
        return p.child_by_field_name("value") == n
    if t in ("required_parameter", "optional_parameter"):
        return p.child_by_field_name("pattern") == n
    if t == "formal_parameters":
        return True
    if t == "arrow_function":
        return p.child_by_field_name("parameter") == n
    if t in ("for_in_statement",):
        return p.child_by_field_name("left") == n
    if t == "catch_clause":
        return p.child_by_field_name("parameter") == n
    if t == "type_parameter":
        return p.child_by_field_name("name") == n
    if t == "import_specifier":
        alias = p.child_by_field_name("alias")
        return n == (alias if alias is not None else p.child_by_field_name("name"))
    if t in ("import_clause", "namespace_import"):
        return True
    if t in ("class_declaration", "class"):
        return p.child_by_field_name("name") == n
    return False


def _source(stmt: Node) -> str | None:
    src = stmt.child_by_field_name("source")
    if src is None:
        return None
    return text(src).strip("'\"`")


def _import_of(n: Node) -> Import | None:
    """What an import (or `export … from`) binding or specifier names."""
    p = n.parent
    stmt = p
    while stmt is not None and stmt.type not in ("import_statement", "export_statement"):
        if stmt.type in SCOPES:
            return None
        stmt = stmt.parent
    if stmt is None:
        return None
    module = _source(stmt)
    if module is None:
        return None
    line = stmt.start_point[0] + 1
    if p.type in ("import_specifier", "export_specifier"):
        return Import(module, text(p.child_by_field_name("name")), line)
    if p.type in ("namespace_import", "namespace_export"):
        return Import(module, None, line)
    if p.type == "import_clause":
        return Import(module, "default", line)
    return None


def reexports(root: Node, name: str) -> list[Import]:
    """How a module makes `name` available without defining it: `export { x as name } from`,
    an import of `name` (exported by a later `export { name }`), else `export * from`."""
    found, stars = [], []
    for stmt in root.named_children:
        if stmt.type not in ("import_statement", "export_statement"):
            continue
        module = _source(stmt)
        if module is None:
            continue
        line = stmt.start_point[0] + 1
        specs = [n for n in walk(stmt, frozenset()) if n.type in ("import_specifier",
                                                                  "export_specifier")]
        for sp in specs:
            alias = sp.child_by_field_name("alias")
            if text(alias if alias is not None else sp.child_by_field_name("name")) == name:
                found.append(Import(module, text(sp.child_by_field_name("name")), line))
        if stmt.type == "export_statement" and not specs and not any(
                c.type == "namespace_export" for c in stmt.named_children):
            stars.append(Import(module, "*", line))
    return found or stars


def default_name(root: Node) -> str | None:
    """The local name a module exports as default (`export default X`, `export default class
    X`)."""
    for stmt in root.named_children:
        if stmt.type == "export_statement" and any(c.type == "default" for c in stmt.children):
            decl = stmt.child_by_field_name("declaration") or stmt.child_by_field_name("value")
            if decl is None:
                continue
            if decl.type == "identifier":
                return text(decl)
            nm = decl.child_by_field_name("name")
            if nm is not None:
                return text(nm)
    return None


def class_bases(root: Node, line: int) -> list[str]:
    for n in walk(root, frozenset()):
        if n.type in CLASSES or n.type == "interface_declaration":
            nm = n.child_by_field_name("name")
            if nm is not None and nm.start_point[0] + 1 == line:
                out = []
                for h in walk(n, frozenset({"class_body", "interface_body", "object_type"})):
                    if h.type in ("extends_clause", "implements_clause", "extends_type_clause"):
                        for c in h.named_children:
                            if c.type in ("identifier", "type_identifier"):
                                out.append(text(c))
                            elif c.type in ("generic_type", "nested_type_identifier",
                                            "member_expression"):
                                ids = [text(i) for i in walk(c, frozenset({"type_arguments"}))
                                       if i.type in ("identifier", "type_identifier",
                                                     "property_identifier")]
                                out += ids[:1] if c.type == "generic_type" else ids[-1:]
                return out
    return []


def _enclosing_class(node: Node) -> Node | None:
    n = node.parent
    while n is not None:
        if n.type in CLASSES:
            return n
        n = n.parent
    return None


def _member(root: Node, obj: Node | None, t: Target, depth: int = 0) -> None:
    t.member = True
    if obj is None or depth > MAX_RECEIVER_STEPS:
        return
    if obj.type in ("this", "super"):
        cls = _enclosing_class(obj)
        if cls is None:
            return
        nm = cls.child_by_field_name("name")
        if obj.type == "this" and nm is not None:
            t.member_of.append(text(nm))
        elif nm is not None:
            t.member_of += class_bases(root, nm.start_point[0] + 1)
        return
    if obj.type == "new_expression":
        c = obj.child_by_field_name("constructor")
        if c is not None and c.type == "identifier":
            t.member_of.append(text(c))
        return
    if obj.type != "identifier":
        return
    for b in bindings_of(root, obj, text(obj)):
        imp = _import_of(b)
        if imp is not None:
            if imp.name is None:
                t.imports.append(Import(imp.module, t.name, imp.line))
            else:
                t.member_of.append(imp.name if imp.name != "default" else text(obj))
            continue
        p = b.parent
        if p is not None and (p.type in CLASSES or p.type in DECLARATIONS):
            t.member_of.append(text(b))
            continue
        t.member_of += _type_of_binding(b)


def _type_of_binding(b: Node) -> list[str]:
    p = b.parent
    if p is None:
        return []
    ann = p.child_by_field_name("type")
    if ann is not None:
        return [text(i) for i in walk(ann, frozenset({"type_arguments"}))
                if i.type == "type_identifier"][:2]
    value = p.child_by_field_name("value")
    if value is not None and value.type == "new_expression":
        c = value.child_by_field_name("constructor")
        if c is not None and c.type == "identifier":
            return [text(c)]
    return []


def module_files(paths: frozenset[str], rel: str, module: str) -> list[str]:
    if not module.startswith("."):
        return []  # a package (node_modules) or a path alias: not resolved here
    base = posixpath.normpath(posixpath.join(posixpath.dirname(rel), module))
    if base.startswith("../") or base == "..":
        return []
    stems = [base]
    for js, ts in ((".js", ".ts"), (".jsx", ".tsx"), (".mjs", ".mts"), (".cjs", ".cts")):
        if base.endswith(js):
            stems.append(base[: -len(js)])
    for stem in stems:
        if stem in paths:
            return [stem]
        for ext in EXTENSIONS + INDEXES:
            if stem + ext in paths:
                return [stem + ext]
    return []
