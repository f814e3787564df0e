"""Recognise an apply_patch call inside a shell command, on the command's one parse.

Intercepted (the whole command must be exactly one of these):

    apply_patch <<'EOF' … EOF          (also <<EOF, <<"EOF", <<-EOF; `applypatch` too)
    apply_patch 'PATCH'  /  apply_patch "PATCH"
    cd DIR && apply_patch …            (DIR a literal word or quoted string)
    bash -lc '…' / bash -c "…" / sh -c / zsh -lc  wrapping one of the above

Anything else around the invocation (`echo x; apply_patch …`, pipes, redirections, `||`, a
second `cd`, variables or command substitutions anywhere we would have to evaluate) returns
None: the command is not intercepted and runs, and is permission-checked, as a normal command.
Words are read with the parser's own quote removal (`parse.word_value`), so interception and
the permission check never disagree about what a word says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .parse import Complex, Script, _text, parse, unescape_heredoc, word_value

APPLY_NAMES = frozenset({"apply_patch", "applypatch"})
SHELL_NAMES = frozenset({"bash", "sh", "zsh"})
SHELL_FLAGS = (("-c",), ("-lc",), ("-l", "-c"))
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
                         "process_substitution"})


@dataclass
class PatchInvocation:
    patch: str
    workdir: str | None


def find_invocation(command: str | Script) -> PatchInvocation | None:
    """The patch (and `cd` directory) if the command is nothing but an apply_patch invocation.
    Given a `Script`, its existing parse tree is used; given text, the text is parsed."""
    text = command.text if isinstance(command, Script) else command
    if not isinstance(text, str) or "apply" not in text:
        return None
    script = command if isinstance(command, Script) else parse(text)
    try:
        return _from_script(script, nested=False)
    except (UnicodeDecodeError, ValueError):
        return None


def _from_script(script: Script, nested: bool) -> PatchInvocation | None:
    if script.tree is None:
        return None
    src = script.src
    root = script.tree.root_node
    if root.has_error:
        return None
    stmts = root.named_children
    if len(stmts) != 1:
        return None  # several statements, or a comment next to the invocation
    node = stmts[0]
    if node.type == "command" and not nested:
        inner = _shell_c_script(node, src)
        if inner is not None:
            return _from_script(parse(inner), nested=True)
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c != body]
        if body is None or len(redirects) != 1 or redirects[0].type != "heredoc_redirect":
            return None
        patch = _heredoc_text(redirects[0], src)
        workdir, cmd = _split_cd(body, src)
        if patch is None or cmd is None or _apply_args(cmd, src) != []:
            return None
        return PatchInvocation(patch, workdir)
    workdir, cmd = _split_cd(node, src)
    if cmd is None:
        return None
    args = _apply_args(cmd, src)
    if args is None or len(args) != 1:
        return None
    patch = _literal(args[0], src)
    if patch is None:
        return None
    return PatchInvocation(patch, workdir)


def _literal(node, src: bytes) -> str | None:
    """The value of one word or quoted string that needs no evaluation (no expansion, glob,
    tilde or concatenation of quoted pieces), else None."""
    if node.type not in ("word", "raw_string", "string", "number"):
        return None
    if node.type == "word" and _text(node, src).startswith("~"):
        return None
    try:
        w = word_value(node, src, tilde=False)
    except Complex:
        return None
    return None if w.glob else w.value


def _command_parts(node, src: bytes) -> tuple[str, list] | None:
    """(command name, argument nodes) of a plain command: no env prefix, no inline redirects."""
    if node.type != "command":
        return None
    name = node.child_by_field_name("name")
    if name is None:
        return None
    args = []
    for child in node.named_children:
        if child == name:
            continue
        if child.type in ("variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect"):
            return None
        args.append(child)
    if name.named_child_count != 1 or name.named_children[0].type != "word":
        return None
    word = _literal(name.named_children[0], src)
    if word is None:
        return None
    return word, args


def _apply_args(node, src: bytes) -> list | None:
    parts = _command_parts(node, src)
    if parts is None or parts[0] not in APPLY_NAMES:
        return None
    return parts[1]


def _split_cd(node, src: bytes) -> tuple[str | None, object | None]:
    """(cd directory or None, the command after it) for `cmd` or `cd DIR && cmd`; (None, None) if neither."""
    if node.type == "command":
        return None, node
    if node.type != "list" or node.child_count != 3:
        return None, None
    first, op, second = node.children
    if op.type != "&&" or first.type != "command" or second.type != "command":
        return None, None
    parts = _command_parts(first, src)
    if parts is None or parts[0] != "cd" or len(parts[1]) != 1:
        return None, None
    target = _literal(parts[1][0], src)
    if not target or target.startswith("-"):
        return None, None
    return target, second


def _shell_c_script(node, src: bytes) -> str | None:
    """The script of `bash -lc SCRIPT` (or sh/zsh, -c/-lc/-l -c), else None."""
    parts = _command_parts(node, src)
    if parts is None:
        return None
    name, args = parts
    if os.path.basename(name) not in SHELL_NAMES or not args:
        return None
    flags = tuple(_literal(a, src) for a in args[:-1])
    if flags not in SHELL_FLAGS:
        return None
    return _literal(args[-1], src)


def _heredoc_text(node, src: bytes) -> str | None:
    """The body of `<<DELIM … DELIM`, or None when reading it would need the shell's evaluation."""
    kinds = [c.type for c in node.children]
    if kinds[0] not in ("<<", "<<-") or any(k not in ("<<", "<<-", "heredoc_start", "heredoc_body", "heredoc_end")
                                            for k in kinds):
        return None
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    end = next((c for c in node.children if c.type == "heredoc_end"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if start is None or end is None:
        return None
    raw_delim = _text(start, src)
    quoted = any(q in raw_delim for q in "'\"\\")
    delim = raw_delim.replace("'", "").replace('"', "").replace("\\", "")
    if _text(end, src) != delim:
        return None
    text = _text(body, src) if body is not None else ""
    if not quoted:
        if body is not None and _has_expansion(body):
            return None
        text = unescape_heredoc(text)
    if kinds[0] == "<<-":
        text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
    return text


def _has_expansion(node) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _EXPANSIONS:
            return True
        stack.extend(n.named_children)
    return False
