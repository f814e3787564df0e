"""Shell command text → a flat `Script` of `SimpleCommand`s, or a "complex" verdict.

tree-sitter-bash gives the syntax tree; this module keeps only what it can reduce to plain
words (argv after quote removal), assignments, redirections and the operators between
commands. Anything else — expansions, substitutions, subshells, control flow, functions, parse
errors, and the places where tree-sitter and bash are known to disagree — makes the script
"complex" with a reason. Complex scripts are never auto-allowed, so every unknown is fail-safe.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

# Node types that are statements we can flatten; everything else at statement level is complex.
_COMPLEX_STATEMENTS = {
    "subshell": "a subshell `( … )`",
    "compound_statement": "a command group `{ … }`",
    "function_definition": "a function definition",
    "if_statement": "an `if` statement",
    "for_statement": "a `for` loop",
    "c_style_for_statement": "a `for` loop",
    "while_statement": "a `while`/`until` loop",
    "case_statement": "a `case` statement",
    "test_command": "a `[[ … ]]` test",
    "declaration_command": "a declaration (export/declare/local/readonly)",
    "unset_command": "an `unset` command",
    "arithmetic_expansion": "arithmetic expansion `$(( … ))`",
}
_COMPLEX_WORDS = {
    "simple_expansion": "a variable expansion `$VAR`",
    "expansion": "a parameter expansion `${…}`",
    "command_substitution": "command substitution `$(…)` or backticks",
    "process_substitution": "process substitution `<(…)`/`>(…)`",
    "arithmetic_expansion": "arithmetic expansion `$(( … ))`",
    "translated_string": "a locale string `$\"…\"`",
    "brace_expression": "brace expansion `{a..b}`",
    "array": "an array assignment",
}
# Operators between simple commands.
OPERATORS = frozenset({"&&", "||", ";", "|", "|&", "&", "\n"})
# Words bash treats as "run this text as code" — never reducible to argv.
_EVAL_COMMANDS = frozenset({"eval", "source", ".", "exec", "coproc", "trap", "fc", "alias", "enable", "shopt"})

_GLOB_CHARS = frozenset("*?[")
_BRACE_RE = re.compile(r"\{[^{}\x00]*(?:,|\.\.)[^{}\x00]*\}")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# backslash-newline glued to a word: tree-sitter splits the word there, bash joins it.
_GLUED_CONTINUATION_RE = re.compile(r"[^\s]\\\n")
_ANSI_C_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S)
_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
                "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


class Complex(Exception):
    """The text cannot be reduced to simple commands; str(e) says why."""


@dataclass
class Redirect:
    op: str  # '>', '>>', '>|', '&>', '&>>', '<', '<>', '>&', '<&', '<<', '<<-', '<<<'
    target: str | None  # the word after quote removal; None for heredocs
    fd: int | None = None
    # write: opens target for writing; read: input; dup/close: fd juggling; heredoc/herestring
    kind: str = "write"


@dataclass
class SimpleCommand:
    argv: list[str]
    assignments: list[tuple[str, str]] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    op: str = ""  # the operator that follows this command ("" at the end)
    text: str = ""  # the source text of the command
    globs: list[int] = field(default_factory=list)  # argv indexes with unquoted glob characters
    heredoc: bool = False  # stdin comes from a heredoc or herestring

    @property
    def background(self) -> bool:
        return self.op == "&"

    @property
    def writes(self) -> list[Redirect]:
        return [r for r in self.redirects if r.kind == "write"]


# Builtins through which a command can change the shell's own directory (external programs
# cannot): anything else lets bash exec the command directly, without the EXIT trap's fork.
_CWD_BUILTINS = frozenset({"cd", "pushd", "popd", "source", ".", "eval", "exec", "builtin",
                           "command", "trap", "enable", "alias", "set", "shopt"})


@dataclass
class Script:
    """A parsed command line. The tree-sitter tree is kept (`tree`, `src`) so that every later
    question about the same text (apply_patch interception, danger in complex scripts) reads
    this one parse instead of parsing again."""

    text: str
    commands: list[SimpleCommand]
    complex: str | None = None  # why it is not reducible to simple commands
    tree: Any = field(default=None, repr=False, compare=False)  # tree_sitter.Tree, when parsed
    src: bytes = field(default=b"", repr=False, compare=False)  # the bytes the tree indexes

    @property
    def may_change_cwd(self) -> bool:
        """False only when every part is a plain simple command that is not a cwd-changing
        builtin. Anything the parser cannot flatten (functions, subshells, expansions in command
        position …) counts as "may change it"."""
        if self.complex is not None or not self.commands:
            return True
        return any(not c.argv or c.argv[0] in _CWD_BUILTINS for c in self.commands)


# -- parser cache: tree_sitter.Parser is not thread-safe, so one per thread ----------------------
_local = threading.local()


def _parser():
    p = getattr(_local, "parser", None)
    if p is None:
        import tree_sitter_bash
        from tree_sitter import Language, Parser

        lang = getattr(_parser, "language", None)
        if lang is None:
            lang = _parser.language = Language(tree_sitter_bash.language())  # type: ignore[attr-defined]
        p = _local.parser = Parser(lang)
    return p


def parse(command: str) -> Script:
    """Parse `command`. Never raises for bad input: problems become `Script.complex`."""
    flattener = _Flattener(command)
    try:
        commands, why = flattener.run(), None
    except Complex as e:
        commands, why = [], str(e)
    except RecursionError:
        commands, why = [], "nesting too deep to analyse"
    except UnicodeEncodeError:
        commands, why = [], "the command is not valid Unicode (an unpaired surrogate)"
    return Script(command, commands, why, flattener.tree, getattr(flattener, "src", b""))


# -- word values -------------------------------------------------------------------------------
@dataclass
class Word:
    value: str
    glob: bool = False


def _unescape_unquoted(text: str, out: list[tuple[str, bool]]) -> None:
    """Backslash removal in an unquoted word; escaped characters count as quoted."""
    i, n = 0, len(text)
    buf: list[str] = []
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if buf:
                out.append(("".join(buf), False))
                buf = []
            if text[i + 1] != "\n":
                out.append((text[i + 1], True))
            i += 2
            continue
        buf.append(c)
        i += 1
    if buf:
        out.append(("".join(buf), False))


def unescape_heredoc(text: str) -> str:
    """The body of a heredoc with an unquoted delimiter, as bash delivers it when it holds no
    expansion: backslash escapes only `\\`, `$`, a backquote and newline."""
    return re.sub(r"\\([$`\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_double(text: str) -> str:
    # Inside "…" a backslash only escapes $ ` " \ and newline.
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _ansi_c(text: str) -> str:
    body = text[2:-1]  # strip $' and '

    def repl(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU":
            return chr(int(e[1:], 16)) if int(e[1:], 16) < 0x110000 else "\ufffd"
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c":
            raise Complex("an ANSI-C string with a control escape `\\c`")
        return _ANSI_SIMPLE.get(e, "\\" + e)

    value = _ANSI_C_RE.sub(repl, body)
    if "\x00" in value:
        raise Complex("an ANSI-C string containing NUL")
    return value


def _word_parts(node, src: bytes, out: list[tuple[str, bool]]) -> None:
    t = node.type
    if t in ("word", "number"):
        _unescape_unquoted(_text(node, src), out)
    elif t == "raw_string":
        out.append((_text(node, src)[1:-1], True))
    elif t == "string":
        for c in node.children:
            if c.type not in ('"', "string_content"):
                raise Complex(_COMPLEX_WORDS.get(c.type, f"`{_text(c, src)}` inside a double-quoted string"))
        # The whole body between the quotes: tree-sitter leaves newlines between its
        # string_content pieces, and bash keeps them.
        out.append((_unescape_double(_text(node, src)[1:-1]), True))
    elif t == "ansi_c_string":
        out.append((_ansi_c(_text(node, src)), True))
    elif t == "concatenation":
        for c in node.children:
            _word_parts(c, src, out)
    elif t in _COMPLEX_WORDS:
        raise Complex(_COMPLEX_WORDS[t])
    elif t == "$":
        raise Complex("a `$` expansion")
    else:
        raise Complex(f"an unsupported word `{_text(node, src)}` ({t})")


_PLAIN_WORD = re.compile(r"[^\\*?\[{}~]*")


def word_value(node, src: bytes, *, tilde: bool = True) -> Word:
    t = node.type
    if t == "word" or t == "raw_string":
        # fast path: most words have nothing to unescape, expand or glob
        text = src[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")
        if t == "raw_string":
            return Word(text[1:-1])
        if _PLAIN_WORD.fullmatch(text):
            return Word(text)
    parts: list[tuple[str, bool]] = []
    _word_parts(node, src, parts)
    value = "".join(p for p, _ in parts)
    # The unquoted skeleton: quoted characters masked out, for glob/brace/tilde checks.
    skeleton = "".join(p if not q else "\x00" * len(p) for p, q in parts)
    if _BRACE_RE.search(skeleton):
        raise Complex(f"brace expansion in `{_text(node, src)}`")
    glob = any(c in _GLOB_CHARS for c in skeleton)
    if tilde and skeleton.startswith("~"):
        head = skeleton.split("/", 1)[0]
        if head in ("~+", "~-") or "\x00" in head:
            raise Complex(f"tilde expansion `{head}`")
        expanded = os.path.expanduser(value.split("/", 1)[0])
        if expanded.startswith("~"):
            raise Complex(f"unknown user in `{head}`")
        value = expanded + value[len(head):]
    return Word(value, glob)


def _text(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "surrogateescape")


# -- flattening --------------------------------------------------------------------------------
_REDIRECT_KINDS = {
    ">": "write", ">>": "write", ">|": "write", "&>": "write", "&>>": "write",
    "<": "read", "<>": "write", ">&": "dup", "<&": "dup", ">&-": "close", "<&-": "close",
}


class _Flattener:
    def __init__(self, text: str):
        self.text = text
        self.items: list[SimpleCommand | str] = []
        self.tree = None

    def run(self) -> list[SimpleCommand]:
        text = self.text
        # The tree is built even for text flattening refuses below: apply_patch interception
        # reads patches with CR or continuation lines in their heredoc from it.
        self.src = text.encode("utf-8", "surrogateescape")
        self.tree = _parser().parse(self.src)
        if "\x00" in text:
            raise Complex("the command contains a NUL byte")
        m = _CONTROL_RE.search(text)
        if m:
            raise Complex(f"the command contains a control character U+{ord(m.group()):04X}")
        if _GLUED_CONTINUATION_RE.search(text):
            raise Complex("a backslash-newline line continuation inside a word")
        root = self.tree.root_node
        if root.has_error:
            raise Complex("the command does not parse as shell (syntax error or incomplete command)")
        self._statements(root)
        return self._link()

    # Items alternate command / operator; here we check positions and attach operators.
    def _link(self) -> list[SimpleCommand]:
        cmds: list[SimpleCommand] = []
        expect_cmd = True
        for it in self.items:
            if isinstance(it, SimpleCommand):
                if not expect_cmd:
                    cmds[-1].op = "\n"
                cmds.append(it)
                expect_cmd = False
            else:
                if expect_cmd:
                    if it == "\n" or (it in (";", "&") and not cmds):
                        continue
                    raise Complex(f"an empty command before `{it}`")
                cmds[-1].op = it
                expect_cmd = True
        if cmds and cmds[-1].op in ("&&", "||", "|", "|&"):
            raise Complex(f"an empty command after `{cmds[-1].op}`")
        if cmds and cmds[-1].op == "\n":
            cmds[-1].op = ""
        if cmds and cmds[-1].op == ";":
            cmds[-1].op = ""
        return cmds

    def _statements(self, node) -> None:
        for child in node.children:
            self._statement(child)

    def _statement(self, node) -> None:
        t = node.type
        if not node.is_named:
            if t in OPERATORS:
                self.items.append(t)
                return
            raise Complex(f"the operator `{t}`")
        if t == "comment":
            return
        if t in ("program", "list", "pipeline"):
            self._statements(node)
        elif t == "negated_command":
            for c in node.children:
                if c.type != "!":
                    self._statement(c)
        elif t == "command":
            self._command(node)
        elif t == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is not None:
                self._statement(body)
            else:
                self.items.append(SimpleCommand([], text=_text(node, self.src)))
            for c in node.children:
                if body is not None and c.id == body.id:
                    continue
                self._redirect(c)
        elif t == "variable_assignment":
            name, value = self._assignment(node)
            self.items.append(SimpleCommand([], [(name, value)], text=_text(node, self.src)))
        elif t == "variable_assignments":
            assigns = [self._assignment(c) for c in node.children if c.type == "variable_assignment"]
            self.items.append(SimpleCommand([], assigns, text=_text(node, self.src)))
        elif t in _COMPLEX_STATEMENTS:
            raise Complex(_COMPLEX_STATEMENTS[t])
        else:
            raise Complex(f"unsupported shell syntax ({t.replace('_', ' ')})")

    def _current(self) -> SimpleCommand:
        for it in reversed(self.items):
            if isinstance(it, SimpleCommand):
                return it
            break  # an operator came last: the redirect has no command to belong to
        raise Complex("a redirection without a command")

    def _assignment(self, node) -> tuple[str, str]:
        name = value = None
        for c in node.children:
            if c.type == "variable_name":
                name = _text(c, self.src)
            elif c.type in ("=", "+="):
                if c.type == "+=":
                    raise Complex("an appending assignment `+=`")
            elif c.type == "subscript":
                raise Complex("an array element assignment")
            else:
                value = word_value(c, self.src).value
        if name is None:
            raise Complex(f"an unsupported assignment `{_text(node, self.src)}`")
        return name, value or ""

    def _command(self, node) -> None:
        cmd = SimpleCommand([], text=_text(node, self.src))
        self.items.append(cmd)
        for c in node.children:
            t = c.type
            if t == "variable_assignment":
                if cmd.argv:
                    raise Complex("an assignment after the command name")
                cmd.assignments.append(self._assignment(c))
            elif t == "command_name":
                if len(c.children) != 1:
                    raise Complex(f"an unsupported command name `{_text(c, self.src)}`")
                self._arg(cmd, c.children[0])
            elif t in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self._redirect(c)
            elif t == "comment":
                continue
            elif not c.is_named:
                raise Complex(f"`{t}` in a command")
            else:
                self._arg(cmd, c)
        if cmd.argv and cmd.argv[0] in _EVAL_COMMANDS:
            raise Complex(f"`{cmd.argv[0]}` runs text as shell code")

    def _arg(self, cmd: SimpleCommand, node) -> None:
        w = word_value(node, self.src)
        if w.glob:
            if not cmd.argv:
                raise Complex(f"a glob in the command name `{_text(node, self.src)}`")
            cmd.globs.append(len(cmd.argv))
        cmd.argv.append(w.value)

    def _redirect(self, node) -> None:
        cmd = self._current()
        t = node.type
        if t == "comment":
            return
        if t == "herestring_redirect":
            words = [c for c in node.children if c.is_named]
            if len(words) != 1:
                raise Complex("an unsupported here-string")
            word_value(words[0], self.src)  # rejects expansions in it
            cmd.redirects.append(Redirect("<<<", None, 0, "herestring"))
            cmd.heredoc = True
            return
        if t == "heredoc_redirect":
            self._heredoc(cmd, node)
            return
        if t != "file_redirect":
            raise Complex(f"unsupported redirection ({t})")
        fd: int | None = None
        op: str | None = None
        target: str | None = None
        for c in node.children:
            ct = c.type
            if ct == "file_descriptor":
                fd = int(_text(c, self.src))
            elif not c.is_named:
                if op is not None:
                    raise Complex(f"an unsupported redirection `{_text(node, self.src)}`")
                op = ct
            elif target is None and op is not None:
                w = word_value(c, self.src)
                if w.glob:
                    # bash expands it (when it matches one file): checking it literally would lie
                    raise Complex(f"a glob in a redirection target `{_text(c, self.src)}`")
                target = w.value
            else:
                # tree-sitter files words after the target under the redirect; bash gives them to
                # the command (`echo >out hi` runs `echo hi`).
                self._arg(cmd, c)
        if op not in _REDIRECT_KINDS:
            raise Complex(f"an unsupported redirection `{_text(node, self.src)}`")
        kind = _REDIRECT_KINDS[op]
        if op in (">&", "<&"):
            if target is None:
                raise Complex(f"an unsupported redirection `{_text(node, self.src)}`")
            if target == "-":
                kind = "close"
            elif not target.isdigit():
                if op == "<&":
                    raise Complex(f"an unsupported redirection `{_text(node, self.src)}`")
                op, kind = "&>", "write"  # `>& file` writes stdout and stderr to file
        if kind in ("write", "read") and target is None:
            raise Complex(f"a redirection without a target `{_text(node, self.src)}`")
        cmd.redirects.append(Redirect(op, target, fd, kind))

    def _heredoc(self, cmd: SimpleCommand, node) -> None:
        op = "<<"
        start = None
        body = ""
        for c in node.children:
            ct = c.type
            if ct in ("<<", "<<-"):
                op = ct
            elif ct == "heredoc_start":
                start = _text(c, self.src)
            elif ct == "heredoc_body":
                body = _text(c, self.src)
                # An unquoted delimiter means bash expands $… and `…` in the body.
                if start is not None and not any(q in start for q in "'\"\\") and ("$" in body or "`" in body):
                    raise Complex("a heredoc with expansions in its body")
            elif ct == "heredoc_end":
                _check_heredoc_end(op, start, body, _text(c, self.src))
            elif ct in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                self._redirect(c)
            elif ct in ("&&", "||", "|", "|&", ";", "&"):
                self.items.append(ct)
            elif ct in ("pipeline", "list", "command", "redirected_statement", "negated_command"):
                self._statement(c)
            elif c.is_named and ct in ("word", "string", "raw_string", "concatenation", "number"):
                self._arg(self._current(), c)
            else:
                raise Complex(f"unsupported syntax after a heredoc ({ct})")
        if start is None or any(ch in start for ch in "$`"):
            raise Complex("an unsupported heredoc delimiter")
        cmd.redirects.append(Redirect(op, None, 0, "heredoc"))
        cmd.heredoc = True


def _check_heredoc_end(op: str, start: str | None, body: str, end: str) -> None:
    """Guard against tree-sitter ending a heredoc somewhere other than bash does."""
    if start is None:
        raise Complex("an unsupported heredoc")
    delim = start.replace("'", "").replace('"', "").replace("\\", "")
    if end != delim:
        raise Complex("a heredoc whose end line does not match its delimiter")
    for line in body.split("\n"):
        if (line.lstrip("\t") if op == "<<-" else line) == delim:
            raise Complex("a heredoc whose body contains its own delimiter line")
