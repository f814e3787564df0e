"""Python scopes: function, lambda, comprehension and class bodies over the module; a name is
local to the innermost scope that binds it (assignment, parameter, import, def, class, for,
with, except, walrus) unless declared `global`/`nonlocal`; a class body is not seen from its
methods. An attribute's receiver is followed one step: `self`/`cls` (the enclosing class),
`super()` (its bases), a module bound by an import, a class, or a variable whose assignment or
annotation names a class."""

from __future__ import annotations

import re

from tree_sitter import Node

from . import Import, Target, text, walk

SCOPES = frozenset({"function_definition", "lambda", "class_definition", "list_comprehension",
                    "set_comprehension", "dictionary_comprehension", "generator_expression"})
FUNCTIONS = frozenset({"function_definition", "lambda"})
PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "parenthesized_expression",
                      "list_splat_pattern", "tuple", "list", "expression_list"})
PARAMETER_WRAPPERS = frozenset({"typed_parameter", "default_parameter", "typed_default_parameter",
                                "list_splat_pattern", "dictionary_splat_pattern"})
# names in annotations that wrap the class that matters
TYPING_WRAPPERS = frozenset({"Optional", "Union", "List", "list", "Type", "type", "Final",
                             "ClassVar", "Annotated", "Sequence", "Iterable", "Iterator", "None",
                             "dict", "Dict", "tuple", "Tuple", "set", "Set", "Mapping", "Any"})
MAX_RECEIVER_STEPS = 4
_WORDS = re.compile(r"[^\W\d]\w*")


MODULE_ATTRIBUTES = frozenset({"__name__", "__file__", "__doc__", "__spec__", "__loader__",
                               "__package__", "__path__", "__dict__", "__builtins__"})


def target(root: Node, node: Node, name: str) -> Target:
    parent = node.parent
    t = Target(name)
    if parent is None:
        return t
    if node.type == "string_content":  # a name in a string annotation: a bare name here
        _bare(root, node, name, t)
        return t
    if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
        _member(root, parent.child_by_field_name("object"), t)
        return t
    imp = _import_at(node)
    if imp is not None:
        if imp.name is None:
            t.module_of = imp
        else:
            t.imports.append(imp)
        return t
    if parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
        t.member = True  # a parameter of whatever is called: no scope of its own here
        return t
    _bare(root, node, name, t)
    return t


def _bare(root: Node, node: Node, name: str, t: Target) -> None:
    for binding in bindings_of(root, node, name):
        imp = import_binding(binding)
        if imp is None:
            t.spots.append(binding)
        elif imp.name is None:
            t.module_of = imp
        else:
            t.imports.append(imp)
    if not t.spots and not t.imports and t.module_of is None:
        if name in MODULE_ATTRIBUTES:
            t.this_module = True
        else:
            t.imports += star_imports(root)


def bindings_of(root: Node, node: Node, name: str) -> list[Node]:
    """The binding identifiers of `name` in the innermost scope around `node` that binds it."""
    for scope in _scopes(node):
        if scope is not root and scope.type != "module" and _declared_outer(scope, name):
            continue
        found = _bindings(scope, name)
        if found:
            return found
    return []


def _scopes(node: Node):
    """Scopes whose names `node` sees, innermost first, ending with the module; a class body
    only when `node` is in it directly (not inside one of its methods)."""
    n = node
    in_function = False
    while n.parent is not None:
        parent = n.parent
        if parent.type in SCOPES:
            if parent.type in ("function_definition", "class_definition"):
                # a def's name, decorators, defaults and annotations belong to the scope outside
                inside = n == parent.child_by_field_name("body") or (
                    n == parent.child_by_field_name("parameters") and _is_parameter(node))
            else:
                inside = True
            if inside and (parent.type != "class_definition" or not in_function):
                yield parent
            if inside and parent.type in FUNCTIONS:
                in_function = True
        n = parent
    yield n


def _declared_outer(scope: Node, name: str) -> bool:
    for n in walk(scope, SCOPES):
        if n.type in ("global_statement", "nonlocal_statement") and any(
                text(c) == name for c in n.named_children):
            return True
    return False


def _bindings(scope: Node, name: str) -> list[Node]:
    out = []
    stop = SCOPES
    for n in walk(scope, stop):
        if n is not scope and n.type in SCOPES:
            if n.type in ("function_definition", "class_definition"):
                nm = n.child_by_field_name("name")
                if text(nm) == name:
                    out.append(nm)
            continue
        if n.type == "identifier" and text(n) == name and is_binding(n, scope):
            out.append(n)
    return out


def is_binding(n: Node, scope: Node) -> bool:
    p = n.parent
    child = n
    while p is not None and p.type in PATTERNS:
        child, p = p, p.parent
    if p is None:
        return False
    t = p.type
    if t in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
        return p.child_by_field_name("left") == child
    if t == "as_pattern_target":
        return True
    if t == "named_expression":
        return p.child_by_field_name("name") == n
    if t in ("parameters", "lambda_parameters") or (t in PARAMETER_WRAPPERS and _is_parameter(n)):
        return True
    if t == "aliased_import":
        return p.child_by_field_name("alias") == n
    if t == "dotted_name":
        imp = p.parent
        if imp is not None and imp.type == "import_statement":
            return p.named_children[0] == n
        if imp is not None and imp.type == "import_from_statement":
            return imp.child_by_field_name("module_name") != p and len(p.named_children) == 1
    return False


def _is_parameter(n: Node) -> bool:
    p = n.parent
    if p is None:
        return False
    if p.type in ("parameters", "lambda_parameters"):
        return True
    if p.type in ("typed_parameter", "list_splat_pattern", "dictionary_splat_pattern"):
        return p.named_children[0] == n and p.parent is not None and \
            p.parent.type in ("parameters", "lambda_parameters", "typed_parameter")
    if p.type in ("default_parameter", "typed_default_parameter"):
        return p.child_by_field_name("name") == n
    return False


def import_binding(n: Node) -> Import | None:
    """The import that binds identifier `n` (an alias or imported name), or None."""
    p = n.parent
    if p is None:
        return None
    stmt = p.parent if p.type in ("dotted_name", "aliased_import") else None
    if stmt is not None and stmt.type == "aliased_import":
        stmt = stmt.parent
    if stmt is None or stmt.type not in ("import_statement", "import_from_statement"):
        return None
    return _import_at(n)


def _import_at(n: Node) -> Import | None:
    """When `n` is a name inside an import statement: what it imports."""
    p = n.parent
    chain = []
    while p is not None and p.type in ("dotted_name", "aliased_import", "relative_import"):
        chain.append(p)
        p = p.parent
    if p is None or p.type not in ("import_statement", "import_from_statement") or not chain:
        return None
    line = p.start_point[0] + 1
    dotted = next((c for c in chain if c.type == "dotted_name"), None)
    aliased = next((c for c in chain if c.type == "aliased_import"), None)
    if p.type == "import_statement":
        full = text(dotted if aliased is None else aliased.child_by_field_name("name"))
        if aliased is not None and aliased.child_by_field_name("alias") == n:
            return Import(full, None, line)
        # `import a.b.c`: the cursor's part names the module up to it
        parts = [text(c) for c in dotted.named_children] if dotted else [full]
        upto = parts.index(text(n)) + 1 if text(n) in parts else len(parts)
        return Import(".".join(parts[:upto]), None, line)
    module = text(p.child_by_field_name("module_name"))
    if any(c.type == "relative_import" for c in chain) or \
            (dotted is not None and dotted == p.child_by_field_name("module_name")):
        # the cursor is on the module part of `from a.b import c`
        parts = module.lstrip(".")
        dots = module[: len(module) - len(parts)]
        names = parts.split(".") if parts else []
        upto = names.index(text(n)) + 1 if text(n) in names else len(names)
        return Import(dots + ".".join(names[:upto]), None, line)
    if aliased is not None:
        original = text(aliased.child_by_field_name("name"))
    else:
        original = text(dotted) if dotted is not None else text(n)
    return Import(module, original, line)


def imports_of(root: Node) -> dict[str, Import]:
    """Module-level names bound by imports: local name -> what it imports."""
    out: dict[str, Import] = {}
    for n in walk(root, SCOPES):
        if n.type == "identifier" and is_binding(n, root):
            imp = import_binding(n)
            if imp is not None:
                out.setdefault(text(n), imp)
    return out


def star_imports(root: Node) -> list[Import]:
    out = []
    for n in root.named_children:
        if n.type == "import_from_statement" and any(c.type == "wildcard_import" for c in n.children):
            out.append(Import(text(n.child_by_field_name("module_name")), "*",
                              n.start_point[0] + 1))
    return out


def _enclosing_class(node: Node) -> Node | None:
    """The class whose method `node` is in (the class around the innermost def)."""
    n = node.parent
    while n is not None and n.type not in FUNCTIONS:
        n = n.parent
    while n is not None:
        if n.type == "class_definition":
            return n
        if n.type in FUNCTIONS and n.parent is not None and n.parent.type == "block" and \
                n.parent.parent is not None and n.parent.parent.type == "class_definition":
            return n.parent.parent
        if n.type == "decorated_definition" and n.parent is not None:
            n = n.parent
            continue
        n = n.parent
    return None


def bases(cls: Node) -> list[str]:
    sup = cls.child_by_field_name("superclasses")
    if sup is None:
        return []
    out = []
    for a in sup.named_children:
        if a.type == "identifier":
            out.append(text(a))
        elif a.type == "attribute":
            out.append(text(a.child_by_field_name("attribute")))
        elif a.type == "subscript":  # Generic[T], Base[int]
            v = a.child_by_field_name("value")
            out.append(text(v.child_by_field_name("attribute") if v.type == "attribute" else v))
    return [b for b in out if b and b not in ("object", "Generic", "Protocol")]


def _member(root: Node, obj: Node | None, t: Target, depth: int = 0) -> None:
    t.member = True
    if obj is None or depth > MAX_RECEIVER_STEPS:
        return
    if obj.type == "call":
        fn = obj.child_by_field_name("function")
        if fn is not None and fn.type == "identifier" and text(fn) == "super":
            cls = _enclosing_class(obj)
            if cls is not None:
                t.member_of += bases(cls)
            return
        if fn is not None:  # C().x, mod.C().x
            last = fn.child_by_field_name("attribute") if fn.type == "attribute" else fn
            if last is not None and last.type == "identifier" and text(last)[:1].isupper():
                t.member_of.append(text(last))
        return
    if obj.type == "attribute":
        # a.b.x: when `a` is a module, `b` may be a submodule or a class in it
        inner = obj.child_by_field_name("object")
        attr = text(obj.child_by_field_name("attribute"))
        if inner is not None and inner.type == "identifier":
            for b in bindings_of(root, inner, text(inner)):
                imp = import_binding(b)
                if imp is not None and imp.name is None:
                    t.imports.append(Import(f"{imp.module}.{attr}", t.name, imp.line))
                    if attr[:1].isupper():
                        t.member_of.append(attr)
                    return
        if attr[:1].isupper():
            t.member_of.append(attr)
        return
    if obj.type != "identifier":
        return
    receiver = text(obj)
    found = bindings_of(root, obj, receiver)
    if receiver in ("self", "cls") and (not found or all(_is_parameter(b) for b in found)):
        cls = _enclosing_class(obj)
        if cls is not None:
            t.member_of.append(text(cls.child_by_field_name("name")))
            return
    for b in found:
        imp = import_binding(b)
        if imp is not None:
            if imp.name is None:
                t.imports.append(Import(imp.module, t.name, imp.line))
            else:  # `from pkg import thing`: a submodule of pkg, or a class defined there
                t.imports.append(Import(_join(imp.module, imp.name), t.name, imp.line))
                t.member_of.append(imp.name)
            continue
        p = b.parent
        if p is not None and p.type == "class_definition":
            t.member_of.append(receiver)
            continue
        t.member_of += _type_of_binding(root, b)


def _join(module: str, name: str) -> str:
    return module + name if module.endswith(".") else f"{module}.{name}"


def _type_of_binding(root: Node, b: Node, depth: int = 0) -> list[str]:
    """Classes a variable binding names: `x = C(...)`, `x: C`, a parameter `x: C`, the loop
    variable over something annotated `list[C]`."""
    p = b.parent
    if p is None or depth > MAX_RECEIVER_STEPS:
        return []
    ann = p.child_by_field_name("type")
    if ann is not None and p.type in ("assignment", "typed_parameter", "typed_default_parameter"):
        return _classes_in(ann)
    if p.type in ("for_in_clause", "for_statement") and p.child_by_field_name("left") == b:
        over = p.child_by_field_name("right")
        if over is not None and over.type == "identifier":
            out = []
            for ob in bindings_of(root, over, text(over)):
                out += _type_of_binding(root, ob, depth + 1)
            return out
    if p.type == "assignment" and p.child_by_field_name("left") == b:
        right = p.child_by_field_name("right")
        if right is not None and right.type == "call":
            fn = right.child_by_field_name("function")
            last = fn.child_by_field_name("attribute") if fn is not None and fn.type == "attribute" else fn
            if last is not None and text(last)[:1].isupper():
                return [text(last)]
    return []


def reexports(root: Node, name: str) -> list[Import]:
    """How a module makes `name` available without defining it: a module-level import binding
    it (`from .a import name`, `from .a import other as name`), else its star imports."""
    bound = [import_binding(b) for b in _bindings(root, name)]
    found = [i if i.name is not None else Import(i.module, None, i.line) for i in bound
             if i is not None and i.name is not None]
    return found or star_imports(root)


def class_bases(root: Node, line: int) -> list[str]:
    """The base classes named by the class defined at `line` (1-based)."""
    for n in walk(root, frozenset()):
        if n.type == "class_definition" and n.start_point[0] + 1 <= line <= n.end_point[0] + 1:
            nm = n.child_by_field_name("name")
            if nm is not None and nm.start_point[0] + 1 == line:
                return bases(n)
    return []


def _classes_in(annotation: Node) -> list[str]:
    """Class names in an annotation, the wrappers (`Optional`, `list`) left out; names in
    strings count (`list["Shape"]`)."""
    out = []
    for i in walk(annotation, frozenset()):
        if i.type == "identifier":
            out.append(text(i))
        elif i.type == "string_content":
            out += [w for w in _WORDS.findall(text(i))]
    return [n for n in out if n not in TYPING_WRAPPERS][:2]
