"""Recognise an apply_patch call inside a shell command, with tree-sitter-bash (not regexes).

Intercepted (the whole command must be exactly one of these):

    apply_patch <<'EOF' … EOF          (also <<EOF, <<"EOF", <<-EOF; `applypatch` too)
    apply_patch 'PATCH'  /  apply_patch "PATCH"
    cd DIR && apply_patch …            (DIR a literal word or quoted string)
    bash -lc '…' / bash -c "…" / sh -c / zsh -lc  wrapping one of the above

Anything else around the invocation (`echo x; apply_patch …`, pipes, redirections, `||`, a
second `cd`, variables or command substitutions anywhere we would have to evaluate) returns
None: the command is not intercepted and runs, and is permission-checked, as a normal command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

APPLY_NAMES = frozenset({"apply_patch", "applypatch"})
SHELL_NAMES = frozenset({"bash", "sh", "zsh"})
SHELL_FLAGS = (("-c",), ("-lc",), ("-l", "-c"))
_EXPANSIONS = frozenset({"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
                         "process_substitution"})
# Characters that make an unquoted word mean something other than itself.
_WORD_SPECIAL = set("$`\\*?[]{}~'\"!;&|<>()#")


@dataclass
class PatchInvocation:
    patch: str
    workdir: str | None


@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def find_invocation(command: str) -> PatchInvocation | None:
    """The patch (and `cd` directory) if `command` is nothing but an apply_patch invocation."""
    if not isinstance(command, str) or "apply" not in command:
        return None
    try:
        return _from_script(command, nested=False)
    except (UnicodeDecodeError, ValueError):
        return None


def _from_script(script: str, nested: bool) -> PatchInvocation | None:
    src = script.encode("utf-8", "surrogateescape")
    root = _parser().parse(src).root_node
    if root.has_error:
        return None
    stmts = root.named_children
    if len(stmts) != 1:
        return None  # several statements, or a comment next to the invocation
    node = stmts[0]
    if node.type == "command" and not nested:
        inner = _shell_c_script(node)
        if inner is not None:
            return _from_script(inner, nested=True)
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c != body]
        if body is None or len(redirects) != 1 or redirects[0].type != "heredoc_redirect":
            return None
        patch = _heredoc_text(redirects[0])
        workdir, cmd = _split_cd(body)
        if patch is None or cmd is None or _apply_args(cmd) != []:
            return None
        return PatchInvocation(patch, workdir)
    workdir, cmd = _split_cd(node)
    if cmd is None:
        return None
    args = _apply_args(cmd)
    if args is None or len(args) != 1:
        return None
    patch = _literal(args[0])
    if patch is None:
        return None
    return PatchInvocation(patch, workdir)


def _text(node) -> str:
    return node.text.decode("utf-8", "surrogateescape")


def _command_parts(node) -> tuple[str, list] | None:
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
    word = _literal(name.named_children[0])
    if word is None:
        return None
    return word, args


def _apply_args(node) -> list | None:
    parts = _command_parts(node)
    if parts is None or parts[0] not in APPLY_NAMES:
        return None
    return parts[1]


def _split_cd(node) -> tuple[str | None, object | None]:
    """(cd directory or None, the command after it) for `cmd` or `cd DIR && cmd`; (None, None) if neither."""
    if node.type == "command":
        return None, node
    if node.type != "list" or node.child_count != 3:
        return None, None
    first, op, second = node.children
    if op.type != "&&" or first.type != "command" or second.type != "command":
        return None, None
    parts = _command_parts(first)
    if parts is None or parts[0] != "cd" or len(parts[1]) != 1:
        return None, None
    target = _literal(parts[1][0])
    if not target or target.startswith("-"):
        return None, None
    return target, second


def _shell_c_script(node) -> str | None:
    """The script of `bash -lc SCRIPT` (or sh/zsh, -c/-lc/-l -c), else None."""
    parts = _command_parts(node)
    if parts is None:
        return None
    name, args = parts
    if os.path.basename(name) not in SHELL_NAMES or not args:
        return None
    flags = tuple(_literal(a) for a in args[:-1])
    if flags not in SHELL_FLAGS:
        return None
    return _literal(args[-1])


def _literal(node) -> str | None:
    """The value of a word or quoted string that needs no evaluation, else None."""
    t = node.type
    text = _text(node)
    if t == "word":
        if node.named_child_count or any(c in _WORD_SPECIAL for c in text):
            return None
        return text
    if t == "raw_string":
        return text[1:-1]
    if t == "string":
        if any(c.type != "string_content" for c in node.named_children):
            return None  # $var, $(…), `…` inside double quotes
        return _unescape(text[1:-1], '"')
    return None


def _unescape(s: str, extra: str) -> str:
    """Backslash escapes that bash honours in double quotes / unquoted heredocs: \\\\ \\$ \\` \\<newline>
    (and \\" inside double quotes). Any other backslash stays literal."""
    if "\\" not in s:
        return s
    out = []
    i = 0
    specials = "\\$`" + extra
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "\n":
                i += 2
                continue
            if nxt in specials:
                out.append(nxt)
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _heredoc_text(node) -> str | None:
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
    raw_delim = _text(start)
    quoted = any(q in raw_delim for q in "'\"\\")
    delim = raw_delim.replace("'", "").replace('"', "").replace("\\", "")
    if _text(end) != delim:
        return None
    text = _text(body) if body is not None else ""
    if not quoted:
        if body is not None and _has_expansion(body):
            return None
        text = _unescape(text, "")
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
