"""Write the patch scenarios under tests/fixtures/patch/ (the committed files are the source of truth).

Each scenario is hand-written: input files, the patch, and the expected tree (or the substring of
the expected error, in which case the expected tree is the input tree). Run it after adding a case:

    .venv/bin/python tests/patch/make_fixtures.py
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "patch"


def d(s: str) -> str:
    """Dedent a triple-quoted block and drop its first newline."""
    return textwrap.dedent(s).lstrip("\n")


def P(body: str) -> str:
    """A patch: *** Begin Patch, the dedented body, *** End Patch."""
    return "*** Begin Patch\n" + d(body) + "*** End Patch\n"


CASES: list[dict] = []


def case(name, *, input=None, patch, expected=None, error=None, stdout=None):
    CASES.append(dict(name=name, input=input or {}, patch=patch, expected=expected, error=error, stdout=stdout))


# ---------------------------------------------------------------------------------------------
# Grammar forms

case("add_file", patch=P("""
    *** Add File: bar.md
    +This is a new file
    """), expected={"bar.md": "This is a new file\n"},
    stdout="Success. Updated the following files:\nA bar.md\n")

case("multiple_operations",
     input={"modify.txt": "line1\nline2\n", "delete.txt": "obsolete\n"},
     patch=P("""
    *** Add File: nested/new.txt
    +created
    *** Delete File: delete.txt
    *** Update File: modify.txt
    @@
    -line2
    +changed
    """), expected={"nested/new.txt": "created\n", "modify.txt": "line1\nchanged\n"},
     stdout="Success. Updated the following files:\nA nested/new.txt\nM modify.txt\nD delete.txt\n")

case("multiple_chunks",
     input={"multi.txt": "line1\nline2\nline3\nline4\n"},
     patch=P("""
    *** Update File: multi.txt
    @@
    -line2
    +changed2
    @@
    -line4
    +changed4
    """), expected={"multi.txt": "line1\nchanged2\nline3\nchanged4\n"})

case("move_to_new_directory",
     input={"old/name.txt": "old content\n", "old/other.txt": "unrelated\n"},
     patch=P("""
    *** Update File: old/name.txt
    *** Move to: renamed/dir/name.txt
    @@
    -old content
    +new content
    """), expected={"old/other.txt": "unrelated\n", "renamed/dir/name.txt": "new content\n"},
     stdout="Success. Updated the following files:\nM renamed/dir/name.txt\n")

case("update_deletion_only",
     input={"lines.txt": "line1\nremove me\nline3\n"},
     patch=P("""
    *** Update File: lines.txt
    @@
     line1
    -remove me
     line3
    """), expected={"lines.txt": "line1\nline3\n"})

case("delete_file_success",
     input={"obsolete.txt": "bye\n", "keep.txt": "keep\n"},
     patch=P("""
    *** Delete File: obsolete.txt
    """), expected={"keep.txt": "keep\n"},
     stdout="Success. Updated the following files:\nD obsolete.txt\n")

case("end_of_file_marker",
     input={"tail.txt": "first\nsecond\nlast\n"},
     patch=P("""
    *** Update File: tail.txt
    @@
    -last
    +end
    *** End of File
    """), expected={"tail.txt": "first\nsecond\nend\n"})

case("pure_addition_appends_at_end",
     input={"input.txt": "line1\nline2\n"},
     patch=P("""
    *** Update File: input.txt
    @@
    +added line 1
    +added line 2
    """), expected={"input.txt": "line1\nline2\nadded line 1\nadded line 2\n"})

case("pure_addition_after_header",
     input={"app.py": "def f():\n    return 1\n\ndef g():\n    return 2\n"},
     patch=P("""
    *** Update File: app.py
    @@ def g():
    +    # g returns two
    """), expected={"app.py": "def f():\n    return 1\n\ndef g():\n    # g returns two\n    return 2\n"})

case("pure_addition_end_of_file",
     input={"log.txt": "a\nb\n"},
     patch=P("""
    *** Update File: log.txt
    @@
    +c
    *** End of File
    """), expected={"log.txt": "a\nb\nc\n"})

case("add_empty_file", patch=P("""
    *** Add File: empty.txt
    """), expected={"empty.txt": ""})

case("add_into_new_nested_dirs", patch=P("""
    *** Add File: a/b/c/d/deep.txt
    +deep
    *** Add File: a/b/side.txt
    +side
    """), expected={"a/b/c/d/deep.txt": "deep\n", "a/b/side.txt": "side\n"})

case("add_with_blank_lines_inside",
     patch="*** Begin Patch\n*** Add File: poem.txt\n+first\n\n+third\n*** End Patch\n",
     expected={"poem.txt": "first\n\nthird\n"})

case("deletion_at_start_of_file",
     input={"f.txt": "header\nbody\nfooter\n"},
     patch=P("""
    *** Update File: f.txt
    -header
     body
    """), expected={"f.txt": "body\nfooter\n"})

case("move_only_rename",
     input={"src/old.py": "print('x')\n"},
     patch=P("""
    *** Update File: src/old.py
    *** Move to: src/new.py
    """), expected={"src/new.py": "print('x')\n"},
     stdout="Success. Updated the following files:\nM src/new.py\n")

case("move_overwrites_existing_destination",
     input={"old/name.txt": "from\n", "old/other.txt": "other\n", "renamed/dir/name.txt": "existing\n"},
     patch=P("""
    *** Update File: old/name.txt
    *** Move to: renamed/dir/name.txt
    @@
    -from
    +new
    """), expected={"old/other.txt": "other\n", "renamed/dir/name.txt": "new\n"})

case("move_onto_existing_file_same_dir",
     input={"a.txt": "alpha\n", "b.txt": "beta\n"},
     patch=P("""
    *** Update File: a.txt
    *** Move to: b.txt
    @@
     alpha
    +gamma
    """), expected={"b.txt": "alpha\ngamma\n"})

case("add_overwrites_existing_file",
     input={"duplicate.txt": "old content\n"},
     patch=P("""
    *** Add File: duplicate.txt
    +new content
    """), expected={"duplicate.txt": "new content\n"})

case("delete_and_add_same_path",
     input={"cfg.ini": "[a]\nx=1\n"},
     patch=P("""
    *** Delete File: cfg.ini
    *** Add File: cfg.ini
    +[b]
    """), expected={"cfg.ini": "[b]\n"})

case("update_same_file_twice",
     input={"n.txt": "one\ntwo\nthree\n"},
     patch=P("""
    *** Update File: n.txt
    @@
    -one
    +1
    *** Update File: n.txt
    @@
     1
    -two
    +2
    """), expected={"n.txt": "1\n2\nthree\n"})

case("update_then_move_then_update_destination",
     input={"x.txt": "x1\nx2\n"},
     patch=P("""
    *** Update File: x.txt
    *** Move to: y/x.txt
    @@
    -x1
    +X1
    *** Update File: y/x.txt
    @@
    -x2
    +X2
    """), expected={"y/x.txt": "X1\nX2\n"})

case("update_appends_trailing_newline",
     input={"no_newline.txt": "no newline at end"},
     patch=P("""
    *** Update File: no_newline.txt
    @@
    -no newline at end
    +first line
    +second line
    """), expected={"no_newline.txt": "first line\nsecond line\n"})

case("update_untouched_last_line_gains_newline",
     input={"f.txt": "a\nb\nlast"},
     patch=P("""
    *** Update File: f.txt
    @@
    -a
    +A
    """), expected={"f.txt": "A\nb\nlast\n"})

case("eof_on_file_without_newline",
     input={"f.txt": "a\nb\nc"},
     patch=P("""
    *** Update File: f.txt
    @@
     b
    -c
    +C
    *** End of File
    """), expected={"f.txt": "a\nb\nC\n"})

case("unified_diff_style_header",
     input={"u.txt": "alpha\nbeta\ngamma\n"},
     patch=P("""
    *** Update File: u.txt
    @@ -1,3 +1,3 @@
     alpha
    -beta
    +BETA
     gamma
    """), expected={"u.txt": "alpha\nBETA\ngamma\n"})

case("case_insensitive_markers",
     input={"f.txt": "old\n"},
     patch="*** Begin Patch\n*** update file: f.txt\n@@\n-old\n+new\n*** End Patch\n",
     expected={"f.txt": "new\n"})

# ---------------------------------------------------------------------------------------------
# Locating chunks: headers, narrowing, look-alikes, EOF anchoring

CLASSES = d("""
    class A:
        def f(self):
            return 1

    class B:
        def f(self):
            return 1
    """)

case("repeated_header_narrowing",
     input={"m.py": CLASSES},
     patch=P("""
    *** Update File: m.py
    @@ class B:
    @@     def f(self):
    -        return 1
    +        return 2
    """), expected={"m.py": "class A:\n    def f(self):\n        return 1\n\n"
                             "class B:\n    def f(self):\n        return 2\n"})

case("header_prefix_match",
     input={"m.py": "class A(Base):\n    x = 1\n\nclass B(Base):\n    x = 1\n"},
     patch=P("""
    *** Update File: m.py
    @@ class B
    -    x = 1
    +    x = 2
    """), expected={"m.py": "class A(Base):\n    x = 1\n\nclass B(Base):\n    x = 2\n"})

case("header_line_repeated_as_context",
     input={"g.py": "def f():\n    pass\n\ndef g():\n    pass\n"},
     patch=P("""
    *** Update File: g.py
    @@ def g():
     def g():
    -    pass
    +    return 42
    """), expected={"g.py": "def f():\n    pass\n\ndef g():\n    return 42\n"})

# Refused: the first chunk fits both blocks and nothing before it decides (only the order of the
# chunks would); applying it at the first one is a guess.
case("lookalike_chunks_refused_as_ambiguous",
     input={"dup.txt": "start\nitem\nvalue = 0\nend\nstart\nitem\nvalue = 0\nend\n"},
     patch=P("""
    *** Update File: dup.txt
    @@
     item
    -value = 0
    +value = 1
    @@
     item
    -value = 0
    +value = 2
    """), error="fits 2 places")

case("lookalike_blocks_header_picks_second",
     input={"cfg.toml": "[dev]\nport = 1\n\n[prod]\nport = 1\n"},
     patch=P("""
    *** Update File: cfg.toml
    @@ [prod]
    -port = 1
    +port = 443
    """), expected={"cfg.toml": "[dev]\nport = 1\n\n[prod]\nport = 443\n"})

case("eof_anchor_prefers_last_occurrence",
     input={"r.txt": "}\nmiddle\n}\n"},
     patch=P("""
    *** Update File: r.txt
    @@
    -}
    +} // end
    *** End of File
    """), expected={"r.txt": "}\nmiddle\n} // end\n"})

case("without_eof_marker_lookalike_refused",
     input={"r.txt": "}\nmiddle\n}\n"},
     patch=P("""
    *** Update File: r.txt
    @@
    -}
    +} // first
    """), error="fits 2 places")

case("missing_header_on_first_chunk",
     input={"file2.py": "import foo\nx = 1\n"},
     patch=P("""
    *** Update File: file2.py
     import foo
    +import bar
    """), expected={"file2.py": "import foo\nimport bar\nx = 1\n"})

case("empty_line_context_without_space",
     input={"e.py": "a = 1\n\nb = 2\n"},
     patch="*** Begin Patch\n*** Update File: e.py\n@@\n a = 1\n\n-b = 2\n+b = 3\n*** End Patch\n",
     expected={"e.py": "a = 1\n\nb = 3\n"})

case("blank_line_between_chunks",
     input={"t.txt": "1\n2\n3\n4\n5\n6\n"},
     patch="*** Begin Patch\n*** Update File: t.txt\n@@\n-2\n+two\n\n@@\n-5\n+five\n\n*** End Patch\n",
     expected={"t.txt": "1\ntwo\n3\n4\nfive\n6\n"})

case("trailing_blank_context_retried_without_it",
     input={"z.txt": "x\ny\n"},
     patch="*** Begin Patch\n*** Update File: z.txt\n@@\n-y\n+Y\n\n\n*** End Patch\n",
     expected={"z.txt": "x\nY\n"})

case("multi_chunk_mixed_passes",
     input={"mix.py": "def a():\n    return 'x'  \n\ndef b():\n    return “y”\n"},
     patch=P("""
    *** Update File: mix.py
    @@ def a():
    -    return 'x'
    +    return 'X'
    @@ def b():
    -    return "y"
    +    return "Y"
    """), expected={"mix.py": "def a():\n    return 'X'\n\ndef b():\n    return \"Y\"\n"})

# ---------------------------------------------------------------------------------------------
# Fuzzy passes: context keeps the file's bytes

case("fuzzy_trailing_whitespace",
     input={"w.txt": "keep   \nold\t\nnext \n"},
     patch=P("""
    *** Update File: w.txt
    @@
     keep
    -old
    +new
     next
    """), expected={"w.txt": "keep   \nnew\nnext \n"})

case("fuzzy_leading_whitespace_keeps_indent",
     input={"i.py": "def f():\n        x = 1\n        y = 2\n"},
     patch=P("""
    *** Update File: i.py
    @@
     def f():
        x = 1
    -    y = 2
    +        y = 3
    """), expected={"i.py": "def f():\n        x = 1\n        y = 3\n"})

case("fuzzy_unicode_quotes_context_kept",
     input={"q.md": "He said “hello” to me\nold line\n"},
     patch=P("""
    *** Update File: q.md
    @@
     He said "hello" to me
    -old line
    +new line
    """), expected={"q.md": "He said “hello” to me\nnew line\n"})

case("fuzzy_unicode_dash_removed_line",
     input={"dash.txt": "range 1–5\nkeep\n"},
     patch=P("""
    *** Update File: dash.txt
    @@
    -range 1-5
    +range 1 to 5
     keep
    """), expected={"dash.txt": "range 1 to 5\nkeep\n"})

case("fuzzy_nbsp_and_single_quotes",
     input={"n.txt": "it\u2019s\u00a0here\ntail\n"},
     patch=P("""
    *** Update File: n.txt
    @@
     it's here
    -tail
    +TAIL
    """), expected={"n.txt": "it\u2019s\u00a0here\nTAIL\n"})

case("fuzzy_ideographic_space_and_minus",
     input={"m.txt": "a\u3000\u2212 b\nz\n"},
     patch=P("""
    *** Update File: m.txt
    @@
    -a - b
    +a + b
    """), expected={"m.txt": "a + b\nz\n"})

case("exact_match_preferred_over_fuzzy",
     input={"p.txt": "x  \nx\n"},
     patch=P("""
    *** Update File: p.txt
    @@
    -x
    +y
    """), expected={"p.txt": "x  \ny\n"})

case("unicode_simple",
     input={"foo.txt": "line1\nnaïve café\nline3\n"},
     patch=P("""
    *** Update File: foo.txt
    @@
     line1
    -naïve café
    +naïve café ✅
    """), expected={"foo.txt": "line1\nnaïve café ✅\nline3\n"})

case("unicode_cjk_and_emoji",
     input={"zh.md": "# 标题\n旧的内容\n结束 🎉\n"},
     patch=P("""
    *** Update File: zh.md
    @@ # 标题
    -旧的内容
    +新的内容
     结束 🎉
    """), expected={"zh.md": "# 标题\n新的内容\n结束 🎉\n"})

# ---------------------------------------------------------------------------------------------
# Line endings, BOM

case("crlf_file_stays_crlf",
     input={"win.txt": "one\r\ntwo\r\nthree\r\n"},
     patch=P("""
    *** Update File: win.txt
    @@
     one
    -two
    +TWO
    +two and a half
     three
    """), expected={"win.txt": "one\r\nTWO\r\ntwo and a half\r\nthree\r\n"})

case("crlf_patch_on_lf_file",
     input={"unix.txt": "a\nb\nc\n"},
     patch="*** Begin Patch\r\n*** Update File: unix.txt\r\n@@\r\n a\r\n-b\r\n+B\r\n*** End Patch\r\n",
     expected={"unix.txt": "a\nB\nc\n"})

case("crlf_patch_on_crlf_file",
     input={"w.txt": "x\r\ny\r\n"},
     patch="*** Begin Patch\r\n*** Update File: w.txt\r\n@@\r\n-y\r\n+z\r\n*** End Patch\r\n",
     expected={"w.txt": "x\r\nz\r\n"})

case("mixed_line_endings_kept",
     input={"mix.txt": "a\r\nb\nc\r\nd\r\n"},
     patch=P("""
    *** Update File: mix.txt
    @@
     b
    -c
    +C
     d
    """), expected={"mix.txt": "a\r\nb\nC\r\nd\r\n"})

case("bom_preserved",
     input={"bom.txt": "\ufefffirst\nsecond\n"},
     patch=P("""
    *** Update File: bom.txt
    @@
     first
    -second
    +2nd
    """), expected={"bom.txt": "\ufefffirst\n2nd\n"})

case("crlf_no_trailing_newline",
     input={"w.txt": "a\r\nb"},
     patch=P("""
    *** Update File: w.txt
    @@
    -a
    +A
    """), expected={"w.txt": "A\r\nb\r\n"})

# ---------------------------------------------------------------------------------------------
# Lenient wrappers and markers

case("whitespace_padded_hunk_header",
     input={"foo.txt": "old\n"},
     patch="*** Begin Patch\n  *** Update File: foo.txt\n@@\n-old\n+new\n*** End Patch\n",
     expected={"foo.txt": "new\n"})

case("whitespace_padded_patch_markers",
     input={"file.txt": "one\n"},
     patch=" *** Begin Patch\n*** Update File: file.txt\n@@\n-one\n+two\n*** End Patch \n",
     expected={"file.txt": "two\n"})

case("whitespace_padded_marker_lines",
     input={"file.txt": "one\n"},
     patch="*** Begin Patch \n*** Update File: file.txt\n@@\n-one\n+two\n *** End Patch\n",
     expected={"file.txt": "two\n"})

case("heredoc_single_quoted",
     input={"h.txt": "a\n"},
     patch="<<'EOF'\n*** Begin Patch\n*** Update File: h.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n",
     expected={"h.txt": "b\n"})

case("heredoc_unquoted",
     input={"h.txt": "a\n"},
     patch="<<EOF\n*** Begin Patch\n*** Update File: h.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n",
     expected={"h.txt": "b\n"})

case("heredoc_double_quoted",
     input={"h.txt": "a\n"},
     patch="<<\"EOF\"\n*** Begin Patch\n*** Update File: h.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n",
     expected={"h.txt": "b\n"})

case("heredoc_with_command_name",
     patch="apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: n.txt\n+new\n*** End Patch\nPATCH\n",
     expected={"n.txt": "new\n"})

case("stray_heredoc_delimiter_after_end_patch",
     input={"h.txt": "a\n"},
     patch="*** Begin Patch\n*** Update File: h.txt\n@@\n-a\n+b\n*** End Patch\nEOF\n",
     expected={"h.txt": "b\n"})

case("leading_and_trailing_blank_lines",
     patch="\n\n*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch\n\n\n",
     expected={"b.txt": "x\n"})

case("no_trailing_newline_after_end_patch",
     input={"f.txt": "1\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-1\n+2\n*** End Patch",
     expected={"f.txt": "2\n"})

# ---------------------------------------------------------------------------------------------
# Errors (the tree must stay exactly as it was)

case("rejects_empty_patch", input={"foo.txt": "x\n"},
     patch="*** Begin Patch\n*** End Patch\n", error="No files were modified")

case("rejects_missing_context", input={"modify.txt": "line1\nline2\n"},
     patch=P("""
    *** Update File: modify.txt
    @@
    -missing
    +changed
    """), error="Failed to find expected lines in modify.txt")

case("missing_context_shows_similar_lines", input={"s.py": "def alpha():\n    return 1\n"},
     patch=P("""
    *** Update File: s.py
    @@
     def alpha():
    -    return 2
    +    return 3
    """), error="1| def alpha():")

case("rejects_missing_file_delete", input={"foo.txt": "x\n"},
     patch=P("""
    *** Delete File: missing.txt
    """), error="Failed to delete file missing.txt")

case("delete_missing_nested_file", input={"dir/keep.txt": "k\n"},
     patch=P("""
    *** Delete File: dir/gone/none.txt
    """), error="No such file or directory")

case("rejects_empty_update_hunk", input={"foo.txt": "x\n"},
     patch=P("""
    *** Update File: foo.txt
    """), error="Update file hunk for path 'foo.txt' is empty")

case("requires_existing_file_for_update", input={"foo.txt": "x\n"},
     patch=P("""
    *** Update File: missing.txt
    @@
    -old
    +new
    """), error="Failed to read file to update missing.txt")

case("delete_directory_fails", input={"dir/foo.txt": "x\n"},
     patch=P("""
    *** Delete File: dir
    """), error="Is a directory")

case("rejects_invalid_hunk_header", input={"foo.txt": "x\n"},
     patch=P("""
    *** Frobnicate File: foo.txt
    """), error="is not a valid hunk header")

case("failure_after_partial_success_changes_nothing", input={"keep.txt": "keep\n"},
     patch=P("""
    *** Add File: created.txt
    +hello
    *** Update File: missing.txt
    @@
    -old
    +new
    """), error="Failed to read file to update missing.txt")

case("multi_file_failure_in_last_file_changes_nothing",
     input={"a.txt": "a1\n", "b.txt": "b1\n", "c.txt": "c1\n"},
     patch=P("""
    *** Update File: a.txt
    @@
    -a1
    +A1
    *** Delete File: b.txt
    *** Update File: c.txt
    *** Move to: moved/c.txt
    @@
    -c1
    +C1
    *** Update File: a.txt
    @@
    -no such line
    +x
    """), error="Failed to find expected lines in a.txt")

case("missing_begin_patch", input={"f.txt": "x\n"},
     patch="*** Update File: f.txt\n@@\n-x\n+y\n*** End Patch\n",
     error="The first line of the patch must be '*** Begin Patch'")

case("missing_end_patch", input={"f.txt": "x\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-x\n+y\n",
     error="The last line of the patch must be '*** End Patch'")

case("text_after_end_patch", input={"f.txt": "x\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-x\n+y\n*** End Patch\nThanks!\n",
     error="must be the last line")

case("unexpected_line_in_chunk", input={"f.txt": "x\ny\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n x\nthis line has no prefix\n+z\n*** End Patch\n",
     error="Invalid patch hunk on line 5: Unexpected line found in update hunk")

case("context_header_not_found", input={"f.py": "def a():\n    pass\n"},
     patch=P("""
    *** Update File: f.py
    @@ def nowhere():
    -    pass
    +    return 1
    """), error="Failed to find context 'def nowhere():' in f.py")

case("second_chunk_needs_header", input={"f.txt": "a\nb\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n-a\n+A\n*** End of File\n-b\n+B\n*** End Patch\n",
     error="Expected update hunk to start with a @@ context marker")

case("move_to_not_after_update", input={"f.txt": "a\n"},
     patch="*** Begin Patch\n*** Delete File: f.txt\n*** Move to: g.txt\n*** End Patch\n",
     error="'*** Move to: PATH' must come right after '*** Update File: PATH'")

case("outside_workspace_refused", input={"f.txt": "a\n"},
     patch=P("""
    *** Add File: ../escape.txt
    +nope
    """), error="outside the workspace")

case("outside_workspace_move_refused", input={"f.txt": "a\n"},
     patch=P("""
    *** Update File: f.txt
    *** Move to: ../../elsewhere/f.txt
    @@
    -a
    +b
    """), error="outside the workspace")

case("chunks_out_of_order_fail", input={"o.txt": "1\n2\n3\n"},
     patch=P("""
    *** Update File: o.txt
    @@
    -3
    +three
    @@
    -1
    +one
    """), error="Failed to find expected lines in o.txt (chunk 2")

case("update_binary_file_refused", input={"bin.dat": b"\x00\x01\x02abc\n"},
     patch=P("""
    *** Update File: bin.dat
    @@
    +more
    """), error="looks like a binary file")

case("add_onto_directory_refused", input={"d/x.txt": "x\n"},
     patch=P("""
    *** Add File: d
    +text
    """), error="Is a directory")

case("add_under_a_file_refused", input={"f.txt": "x\n"},
     patch=P("""
    *** Add File: f.txt/child.txt
    +text
    """), error="f.txt is a file")

case("update_after_delete_in_same_patch", input={"f.txt": "x\n"},
     patch=P("""
    *** Delete File: f.txt
    *** Update File: f.txt
    @@
    -x
    +y
    """), error="Failed to read file to update f.txt")

case("garbage_patch", input={"f.txt": "x\n"},
     patch="please change f.txt so that it says y\n",
     error="The first line of the patch must be '*** Begin Patch'")

case("end_of_file_without_lines", input={"f.txt": "x\n"},
     patch="*** Begin Patch\n*** Update File: f.txt\n@@\n*** End of File\n*** End Patch\n",
     error="Update hunk does not contain any lines")

case("empty_add_path", input={"f.txt": "x\n"},
     patch="*** Begin Patch\n*** Add File:   \n+x\n*** End Patch\n",
     error="needs a path after the colon")


def _write_tree(root: Path, files: dict) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def main() -> None:
    if OUT.exists():
        for child in OUT.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / ".gitattributes").write_text("# Fixtures are byte-exact (CRLF, BOM, no final newline): never convert.\n* -text\n")
    names = set()
    for n, c in enumerate(CASES, 1):
        assert c["name"] not in names, c["name"]
        names.add(c["name"])
        folder = OUT / f"{n:03d}_{c['name']}"
        folder.mkdir()
        (folder / "patch.txt").write_bytes(c["patch"].encode("utf-8"))
        if c["input"]:
            _write_tree(folder / "input", c["input"])
        if c["error"] is not None:
            assert c["expected"] is None, c["name"]
            (folder / "expected_error.txt").write_text(c["error"] + "\n", encoding="utf-8")
            expected = c["input"]
        else:
            expected = c["expected"]
        if expected:
            _write_tree(folder / "expected", expected)
        if c["stdout"] is not None:
            (folder / "expected_stdout.txt").write_text(c["stdout"], encoding="utf-8")
    print(f"wrote {len(CASES)} scenarios to {OUT}")


if __name__ == "__main__":
    main()
