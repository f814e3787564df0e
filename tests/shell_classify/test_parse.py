"""Parser table: command text → argv lists, operators, redirects — or the complex reason."""

from __future__ import annotations

import os

import pytest

from codebelt.shell.analysis.parse import parse

HOME = os.path.expanduser("~")

# (command, [(argv, op)], complex-substring or None)
CASES = [
    ("ls -la", [(["ls", "-la"], "")], None),
    ("rg -g\"*.py\" foo", [(["rg", "-g*.py", "foo"], "")], None),
    ("echo 'it''s' \"a\\\"b\" a\\ b", [(["echo", "its", 'a"b', "a b"], "")], None),
    ("echo $'a\\tb' $'\\x41\\101'", [(["echo", "a\tb", "AA"], "")], None),
    ("FOO=bar ls", [(["ls"], "")], None),
    ("a && b || c; d | e |& f", [(["a"], "&&"), (["b"], "||"), (["c"], ";"), (["d"], "|"), (["e"], "|&"), (["f"], "")], None),
    ("a\nb", [(["a"], "\n"), (["b"], "")], None),
    ("a & b", [(["a"], "&"), (["b"], "")], None),
    ("echo >out hi", [(["echo", "hi"], "")], None),
    ("ls ~ ~/x", [(["ls", HOME, HOME + "/x"], "")], None),
    ("'l's", [(["ls"], "")], None),
    ("ls # comment ; rm x", [(["ls"], "")], None),
    ("! ls", [(["ls"], "")], None),
    ("ls \\\n  -la", [(["ls", "-la"], "")], None),
    ("cat <<'E' | grep x\n$(rm)\nE\nls", [(["cat"], "|"), (["grep", "x"], "\n"), (["ls"], "")], None),
    ("ls;", [(["ls"], "")], None),
    ("echo $X", None, "variable expansion"),
    ("echo ${X}", None, "parameter expansion"),
    ("echo $(id)", None, "command substitution"),
    ("echo `id`", None, "command substitution"),
    ("cat <(id)", None, "process substitution"),
    ("echo $((1))", None, "arithmetic"),
    ("(ls)", None, "subshell"),
    ("{ ls; }", None, "group"),
    ("f() { :; }", None, "function"),
    ("if a; then b; fi", None, "if"),
    ("for x in y; do z; done", None, "for"),
    ("while a; do b; done", None, "while"),
    ("case a in b) c;; esac", None, "case"),
    ("eval ls", None, "eval"),
    ("source x", None, "source"),
    (". x", None, "`.`"),
    ("exec ls", None, "exec"),
    ("echo {a,b}", None, "brace"),
    ("ls &&", None, "parse"),
    ("ls ;; pwd", None, ";;"),
    ("ls\x00", None, "NUL"),
    ("ls\x1b", None, "control"),
    ("ls\\\nof", None, "continuation"),
    ("cat <<EOF\n$x\nEOF", None, "heredoc"),
    ("echo $\"x\"", None, "`$`"),
    ("l? x", None, "glob in the command name"),
    ("export A=1", None, "declaration"),
]


@pytest.mark.parametrize("command,expected,complex_part", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_parse(command, expected, complex_part):
    script = parse(command)
    if complex_part is not None:
        assert script.complex is not None and complex_part in script.complex, script.complex
        return
    assert script.complex is None, script.complex
    assert [(c.argv, c.op) for c in script.commands] == expected


REDIRECTS = [
    ("ls > out", [(">", "out", None, "write")]),
    ("ls >> out", [(">>", "out", None, "write")]),
    ("ls 2> err", [(">", "err", 2, "write")]),
    ("ls &> both", [("&>", "both", None, "write")]),
    ("ls >& both", [("&>", "both", None, "write")]),
    ("ls >| out", [(">|", "out", None, "write")]),
    ("ls 2>&1", [(">&", "1", 2, "dup")]),
    ("ls 2>&-", [(">&-", None, 2, "close")]),
    ("cat < in", [("<", "in", None, "read")]),
    ("cat <<< x", [("<<<", None, 0, "herestring")]),
    ("cat <<'E'\nx\nE", [("<<", None, 0, "heredoc")]),
    ("cat \"o\"'u't > \"my file\"", [(">", "my file", None, "write")]),
]


@pytest.mark.parametrize("command,expected", REDIRECTS, ids=[c[0][:30] for c in REDIRECTS])
def test_redirects(command, expected):
    script = parse(command)
    assert script.complex is None, script.complex
    assert [(r.op, r.target, r.fd, r.kind) for r in script.commands[0].redirects] == expected


def test_assignments_and_globs():
    c = parse("A=1 B='x y' ls *.py '*.md'").commands[0]
    assert c.assignments == [("A", "1"), ("B", "x y")]
    assert c.argv == ["ls", "*.py", "*.md"]
    assert c.globs == [1]  # the quoted pattern is not a glob


def test_parser_is_per_thread():
    import threading

    results = []

    def work():
        for _ in range(50):
            results.append(parse("ls -la && git status | head").commands[2].argv)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [["head"]] * 200
