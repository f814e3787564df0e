"""Go scopes: blocks and functions over the package, whose scope is every file of its
directory; a name is bound by `:=`, `var`, `const`, a parameter or result, a range variable,
or an import (`alias "path"`, else the path's last element); a binding counts from where it is
declared, and a function's parameters share its body's scope (`x, err := f(x)` there assigns the
parameter). A selector's operand is followed one step: an imported package; a variable whose
declaration names its type (a receiver `s *S`, `var w T`, `v := T{}`, `&T{}`, `s := x.(*T)`, a
type switch's clause of one type; `t *testing.T` names a type of another package, whose members
are looked up there only) or takes it from a named function's result (`p, err := newParser()`:
the result type in the function's declaration); a literal, assertion or call itself (`T{}.x`,
`f().x`). A struct literal's keys are fields of its type, elided types (`[]T{{Side: 1}}`)
included. Import paths map to
directories by go.mod's module path, else by their trailing elements. Fields and methods of
embedded types are promoted: a member not found on a struct is looked for on what it embeds.

What a package can see is Go's rule, not a guess: names in `_test.go` files only from test
files of their directory, anything under `testdata/` only from its own directory (the go tool
builds neither into the package), and unexported (lower-case) names only inside their own
package."""

from __future__ import annotations

import posixpath

from tree_sitter import Node

from . import Import, Target, text, walk

SCOPES = frozenset({"function_declaration", "method_declaration", "func_literal", "block",
                    "for_statement", "if_statement", "switch_statement",
                    "type_switch_statement", "expression_switch_statement", "select_statement",
                    "communication_case", "expression_case", "type_case", "default_case"})
SAME_PACKAGE = "."
BARE_NAMES_EXACT = True  # a bare name is local, its package's or imported: never a member
FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})


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
    if p.type == "literal_element" and _literal_key(root, p, t):
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
        if n.type == "block" and n.parent is not None and n.parent.type in FUNCTIONS:
            # a function's parameters and its body are one scope: searched together, once
            found = _bindings(n.parent, name, node) + _bindings(n, name, node)
            n = n.parent
        else:
            found = _bindings(n, name, node) if n.type in SCOPES else []
        if found:
            return found[:1]  # a later `:=` of the same name in this scope assigns it
        n = n.parent
    return []


def _bindings(scope: Node, name: str, use: Node) -> list[Node]:
    """Bindings of `name` directly in `scope` whose scope has begun at `use`, in source order."""
    return [b for b in walk(scope, SCOPES) if b.type == "identifier" and text(b) == name
            and _is_binding(b, scope) and _in_scope_at(b, use)]


def _in_scope_at(b: Node, use: Node) -> bool:
    """A local's scope begins at the end of its declaration (`x := x + 1` reads the outer x);
    a parameter's covers the whole body; a type switch's alias, its clauses."""
    if b.start_byte == use.start_byte:
        return True  # the binding itself
    p = b.parent
    if p is not None and p.type == "expression_list":
        p = p.parent
    if p is None or p.type in ("parameter_declaration", "variadic_parameter_declaration",
                               "type_parameter_declaration"):
        return True
    if p.type == "type_switch_statement":
        value = p.child_by_field_name("value")
        return use.start_byte >= (value.end_byte if value is not None else b.end_byte)
    return p.end_byte <= use.start_byte


def _is_binding(b: Node, scope: Node) -> bool:
    p = b.parent
    if p is None:
        return False
    if p.type == "expression_list":
        q = p.parent
        if q is not None and q.type == "type_switch_statement":  # `switch s := s.(type)`
            return q.child_by_field_name("alias") == p
        return q is not None and q.type in ("short_var_declaration", "range_clause") and \
            q.child_by_field_name("left") == p
    if p.type == "type_parameter_declaration":  # `func F[T any]`
        owner = p.parent.parent if p.parent is not None else None
        return owner == scope and any(c == b for c in p.children_by_field_name("name"))
    if p.type in ("parameter_declaration", "variadic_parameter_declaration"):
        # the scope's own parameters, not those named in a function type inside it
        # (`adjust func(src []byte, indent int)` binds no `indent`)
        owner = p.parent.parent if p.parent is not None else None
        return owner == scope and any(c == b for c in p.children_by_field_name("name"))
    if p.type in ("var_spec", "const_spec"):
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
    while operand is not None and operand.type == "parenthesized_expression" and operand.named_children:
        operand = operand.named_children[0]
    if operand is None:
        return
    if operand.type == "unary_expression":  # `(&T{…}).x`
        operand = operand.child_by_field_name("operand") or operand
    if operand.type in ("composite_literal", "type_assertion_expression"):  # `T{…}.x`, `v.(*T).x`
        _of_type(root, operand.child_by_field_name("type"), t)
        return
    if operand.type == "call_expression":  # `pkg.New().x`
        fn = _call_target(root, operand)
        if fn is not None:
            t.member_of_result.append((fn, 0))
        return
    if operand.type != "identifier":
        return
    name = text(operand)
    local = _local(operand, name)
    if not local:
        imp = _package(root, name)
        if imp is not None:  # `runtime.GOOS`: a name of that package, not a member
            t.member = False
            t.imports.append(Import(imp.module, t.name, imp.line))
        return
    for b in local:
        typ = _declared_type(b, operand)
        if typ is not None:
            _of_type(root, typ, t)
            continue
        call = _declared_call(root, b)
        if call is not None:
            t.member_of_result.append(call)


def _strip(typ: Node | None) -> Node | None:
    while typ is not None and typ.type in ("pointer_type", "generic_type", "parenthesized_type"):
        typ = typ.named_children[0] if typ.named_children else None
    return typ


def _of_type(root: Node, typ: Node | None, t: Target) -> bool:
    """Record that `t` is a member of the type `typ` names (`T`, `*T`, `pkg.T`, `T[int]`)."""
    typ = _strip(typ)
    if typ is None:
        return False
    if typ.type == "type_identifier":
        t.member_of.append(text(typ))
        return True
    if typ.type == "qualified_type":
        imp = _package(root, text(typ.child_by_field_name("package")))
        if imp is None:
            return False
        t.member_in = Import(imp.module, text(typ.child_by_field_name("name")), imp.line)
        t.member_of.append(t.member_in.name)  # `t *testing.T`: looked up in that package only
        return True
    return False


ELEMENTS = frozenset({"slice_type", "array_type", "implicit_length_array_type", "map_type"})


def _literal_type(body: Node, depth: int = 0) -> Node | None:
    """The type of the composite literal whose `{…}` is `body`: its own, or for one whose type
    is elided (`[]T{{…}}`, `map[K]V{k: {…}}`), the element type of the literal around it."""
    p = body.parent
    if p is None:
        return None
    if p.type == "composite_literal":
        return p.child_by_field_name("type")
    if p.type != "literal_element" or depth > 8:
        return None
    outer, is_key = p.parent, False
    if outer is not None and outer.type == "keyed_element":
        is_key = outer.named_children[:1] == [p]
        outer = outer.parent
    if outer is None or outer.type != "literal_value":
        return None
    typ = _strip(_literal_type(outer, depth + 1))
    if typ is None or typ.type not in ELEMENTS:
        return None
    if typ.type == "map_type":
        return typ.child_by_field_name("key" if is_key else "value")
    return typ.child_by_field_name("element")


def _literal_key(root: Node, element: Node, t: Target) -> bool:
    """`T{Side: 3}`: a key of a struct literal is a field of T (of another package's T for
    `geo.Square{…}`, of the element type where the literal's type is elided); a map's, slice's
    or array's key is an expression (False)."""
    keyed = element.parent
    if keyed is None or keyed.type != "keyed_element" or keyed.named_children[:1] != [element]:
        return False
    typ = _strip(_literal_type(keyed.parent)) if keyed.parent is not None else None
    if typ is not None and typ.type in ELEMENTS:
        return False
    t.member = True
    _of_type(root, typ, t)
    return True


def _declared_type(b: Node, use: Node) -> Node | None:
    """The type node `b`'s declaration names, as seen at `use`: a declared type, a composite
    literal's, a type assertion's (`s := x.(*ast.ImportSpec)`, `b, ok := v.(*T)`), and in a
    type switch's clause of one type, that type."""
    p = b.parent
    if p is not None and p.type in ("parameter_declaration", "var_spec"):
        typ = p.child_by_field_name("type")
        if typ is not None:
            return typ
    if p is None or p.type != "expression_list":
        return None
    q = p.parent
    if q is not None and q.type == "type_switch_statement":
        return _case_type(q, use)
    right = q.child_by_field_name("right") or q.child_by_field_name("value") if q is not None else None
    values = right.named_children if right is not None else []
    at = p.named_children.index(b)
    if len(values) == 1 and at == 0 and values[0].type == "type_assertion_expression":
        return values[0].child_by_field_name("type")
    if len(values) != p.named_child_count:
        return None
    value = values[at]
    if value.type == "unary_expression":
        value = value.child_by_field_name("operand") or value
    if value.type in ("composite_literal", "type_assertion_expression"):
        return value.child_by_field_name("type")
    return None


def _case_type(switch: Node, use: Node) -> Node | None:
    """The type of the clause of `switch` that `use` is in, when the clause names one type."""
    n = use.parent
    while n is not None and n != switch:
        if n.type == "type_case" and n.parent == switch:
            types = n.children_by_field_name("type")
            return types[0] if len(types) == 1 else None
        n = n.parent
    return None


def _declared_call(root: Node, b: Node) -> tuple[Import, int] | None:
    """`x, err := F(…)` / `pkg.F(…)`: the function `b` takes its value from and which result."""
    p = b.parent
    q = p.parent if p is not None and p.type == "expression_list" else None
    if q is None or q.type not in ("short_var_declaration", "var_spec", "assignment_statement"):
        return None
    right = q.child_by_field_name("right") or q.child_by_field_name("value")
    values = right.named_children if right is not None else []
    if len(values) != 1 or values[0].type != "call_expression":
        return None  # one call giving several results is the only form followed
    fn = _call_target(root, values[0])
    return (fn, p.named_children.index(b)) if fn is not None else None


def _call_target(root: Node, call: Node) -> Import | None:
    """The function a call calls, when it is named: `F(…)` in this package, `pkg.F(…)`."""
    fn = call.child_by_field_name("function")
    if fn is None:
        return None
    if fn.type == "identifier":
        if _local(fn, text(fn)):
            return None  # a function value held in a local
        return Import(SAME_PACKAGE, text(fn))
    if fn.type == "selector_expression":
        operand, field = fn.child_by_field_name("operand"), fn.child_by_field_name("field")
        if operand is not None and operand.type == "identifier" and not _local(operand, text(operand)):
            imp = _package(root, text(operand))
            if imp is not None:
                return Import(imp.module, text(field), imp.line)
    return None


def result_type(root: Node, line: int, which: int) -> tuple[Import | None, str | None]:
    """Of the function declared at `line` (1-based) of this file, the type of result `which`:
    (the import it comes through, or None for this package; the type's name)."""
    for fn in walk(root, frozenset({"function_declaration", "method_declaration"})):
        if fn.type == "function_declaration" and fn.start_point[0] + 1 <= line <= fn.end_point[0] + 1:
            break
    else:
        return None, None
    result = fn.child_by_field_name("result")
    if result is None:
        return None, None
    if result.type == "parameter_list":
        types = []
        for decl in result.named_children:
            typ = decl.child_by_field_name("type")
            types += [typ] * max(1, len(decl.children_by_field_name("name")))
        result = types[which] if which < len(types) else None
    elif which:
        return None, None
    while result is not None and result.type in ("pointer_type", "generic_type"):
        result = result.named_children[0] if result.named_children else None
    if result is None:
        return None, None
    if result.type == "qualified_type":
        imp = _package(root, text(result.child_by_field_name("package")))
        return (imp, text(result.child_by_field_name("name"))) if imp is not None else (None, None)
    return (None, text(result)) if result.type == "type_identifier" else (None, None)


def visible(use: str, definition: str, name: str) -> bool:
    """Whether a definition in file `definition` can be what `name` in file `use` names."""
    use_dir, def_dir = posixpath.dirname(use), posixpath.dirname(definition)
    if "testdata" in def_dir.split("/") and def_dir != use_dir:
        return False
    if definition.endswith("_test.go") and not (use.endswith("_test.go") and def_dir == use_dir):
        return False
    if name[:1].isupper():
        return True
    return def_dir == use_dir  # unexported: its own package only


def reexports(root: Node, name: str) -> list[Import]:
    return []  # Go has no re-exports


def class_bases(root: Node, line: int) -> list[str]:
    """The types a struct declared at `line` embeds (their fields and methods are promoted), or
    the interfaces an interface embeds (their methods are its own)."""
    for spec in walk(root, frozenset({"function_declaration", "method_declaration"})):
        if spec.type == "type_spec" and spec.start_point[0] + 1 == line:
            body = spec.child_by_field_name("type")
            if body is not None and body.type == "interface_type":
                return _embedded_interfaces(body)
            if body is None or body.type != "struct_type":
                return []
            out = []
            for decl in walk(body, frozenset({"struct_type", "interface_type"})):
                if decl.type == "field_declaration" and decl.child_by_field_name("name") is None:
                    typ = decl.child_by_field_name("type")
                    if typ is not None and typ.type == "qualified_type":
                        typ = typ.child_by_field_name("name")
                    if typ is not None and typ.type == "type_identifier":
                        out.append(text(typ))
            return out
    return []


def _embedded_interfaces(body: Node) -> list[str]:
    """`Node` in `interface { Node; io.Reader; exprNode() }`: the embedded interfaces of the
    same package (members are looked up in the package of the type that embeds them, so
    `io.Reader` is not followed), not the terms of a type set (`~int | string`)."""
    return [text(elem.named_children[0]) for elem in body.named_children
            if elem.type == "type_elem" and elem.named_child_count == 1
            and elem.named_children[0].type == "type_identifier"]


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
