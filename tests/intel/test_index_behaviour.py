"""CodeIndex behaviour: incremental refresh, persistence, deletion, filters, skipped files,
background builds, cursor lookups, bad input."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from codebelt.errors import CodebeltError, IntelError, PositionError, UnknownLanguage
from codebelt.intel.index import CodeIndex
from codebelt.intel.languages import check_language


def _git_init(root: Path) -> None:
    # ripgrep honours .gitignore only inside a repository
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)


def _bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def test_refresh_reparses_only_the_touched_file(project, make_index):
    root = project("python")
    ix = make_index(root)
    first = ix.refresh()
    assert (first.parsed, first.unchanged) == (2, 0)
    again = ix.refresh()
    assert (again.parsed, again.unchanged, again.removed) == (0, 2, 0)
    _bump(root / "report.py")
    third = ix.refresh()
    assert (third.parsed, third.unchanged) == (1, 1)


def test_an_edit_is_seen_after_refresh(project, make_index):
    root = project("python")
    ix = make_index(root)
    ix.refresh()
    assert ix.definitions("perimeter").total == 0
    with open(root / "shapes.py", "a") as f:
        f.write("\n\ndef perimeter(c):\n    return 2 * 3.14159 * c.radius\n")
    ix.refresh()
    ans = ix.definitions("perimeter")
    assert [(s.path.name, s.line, s.kind) for s in ans.symbols] == [("shapes.py", 20, "function")]


def test_index_persists_across_instances(project, tmp_path):
    root = project("go")
    cache = tmp_path / "persist"
    with CodeIndex(root, cache, workers=1) as ix:
        assert ix.refresh().parsed == 2
    with CodeIndex(root, cache, workers=1) as ix:
        stats = ix.refresh()
        assert (stats.parsed, stats.unchanged) == (0, 2)
        assert [s.path.name for s in ix.definitions("Circle").symbols] == ["shapes.go"]


def test_stale_schema_is_rebuilt(project, tmp_path):
    import sqlite3

    root = project("go")
    cache = tmp_path / "stale"
    with CodeIndex(root, cache, workers=1) as ix:
        ix.refresh()
    db = sqlite3.connect(cache / "index.sqlite3")
    db.execute("UPDATE meta SET value = 'old' WHERE key = 'schema'")
    db.commit()
    db.close()
    with CodeIndex(root, cache, workers=1) as ix:
        assert ix.refresh().parsed == 2


def test_garbage_database_is_replaced(project, tmp_path):
    root = project("go")
    cache = tmp_path / "garbage"
    cache.mkdir()
    (cache / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    with CodeIndex(root, cache, workers=1) as ix:
        assert ix.refresh().parsed == 2


def test_deleted_file_is_dropped(project, make_index):
    root = project("python")
    ix = make_index(root)
    ix.refresh()
    assert ix.definitions("describe").total == 1
    (root / "report.py").unlink()
    stats = ix.refresh()
    assert stats.removed == 1
    assert ix.definitions("describe").total == 0
    assert ix.references("area").total == 0


def test_include_filter_is_honoured(project, make_index):
    root = project("python")
    ix = make_index(root, include=lambda p: p.name != "report.py")
    ix.refresh()
    assert ix.definitions("describe").total == 0
    assert ix.definitions("Circle").total == 1


def test_gitignored_and_hidden_files_are_skipped(project, make_index):
    root = project("python")
    _git_init(root)
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "gen.py").write_text("def ignored_function():\n    pass\n")
    (root / ".hidden.py").write_text("def hidden_function():\n    pass\n")
    ix = make_index(root)
    ix.refresh()
    assert ix.definitions("ignored_function").total == 0
    assert ix.definitions("hidden_function").total == 0
    assert ix.definitions("Circle").total == 1


def test_binary_huge_and_unknown_files_are_skipped(project, make_index):
    root = project("python")
    (root / "blob.py").write_bytes(b"def looks_like_code():\n    pass\n\0\0\0binary")
    (root / "huge.py").write_text("def in_a_huge_file():\n    pass\n" + "# pad\n" * 2000)
    (root / "notes.txt").write_text("def not_code():\n")
    ix = make_index(root, max_file_bytes=4000)
    stats = ix.refresh()
    assert stats.listed == 4  # blob.py, huge.py, and the two sources; notes.txt has no grammar
    assert stats.failed == 2
    for name in ("looks_like_code", "in_a_huge_file", "not_code"):
        assert ix.definitions(name).total == 0
    # recorded, so an unchanged skipped file is not read again
    assert ix.refresh().parsed == 0


def test_fifo_and_symlink_out_of_root_are_not_read(project, make_index, tmp_path):
    root = project("python")
    outside = tmp_path / "secret.py"
    outside.write_text("def secret_function():\n    pass\n")
    (root / "link.py").symlink_to(outside)
    os.mkfifo(root / "pipe.py")
    ix = make_index(root, list_files=lambda: [root / "link.py", root / "pipe.py",
                                              root / "shapes.py", outside])
    stats = ix.refresh()  # must not block on the FIFO
    assert ix.definitions("secret_function").total == 0
    assert stats.failed == 2
    assert ix.definitions("Circle").total == 1


def test_max_files_caps_and_says_so(project, make_index):
    root = project("python")
    for i in range(5):
        (root / f"extra{i}.py").write_text(f"def extra{i}():\n    pass\n")
    ix = make_index(root, max_files=3)
    stats = ix.refresh()
    assert stats.capped and stats.listed == 3
    ans = ix.workspace_symbols("extra")
    assert ans.note and "first 3" in ans.note


def test_background_build_reports_progress(project, make_index):
    root = project("typescript")
    seen: list[tuple[int, int]] = []
    ix = make_index(root, progress=lambda d, t: seen.append((d, t)))
    ix.start()
    assert ix.wait(timeout=60)
    assert seen and seen[-1] == (2, 2)
    assert ix.definitions("Circle").note is None


def test_first_query_starts_the_build_and_notes_a_partial_answer(tmp_path, make_index):
    root = tmp_path / "big"
    root.mkdir()
    for i in range(300):
        (root / f"m{i:03}.py").write_text(
            "".join(f"def f{i}_{j}(x):\n    return g(x) + {j}\n\n" for j in range(40)))
    release = threading.Event()
    first = threading.Event()

    def progress(done, total):
        first.set()
        release.wait(30)  # hold the build so the query below lands in the middle of it

    ix = make_index(root, progress=progress)
    ans = ix.definitions("f0_0")  # no start(): the query starts the build itself
    assert first.wait(30)
    partial = ix.workspace_symbols("f299_")
    release.set()
    assert ans.backend == "tree-sitter"
    assert partial.note and "still being built" in partial.note
    assert ix.wait(timeout=120)
    done = ix.workspace_symbols("f299_")
    assert done.note is None and done.total == 40


def test_worker_processes_give_the_same_answers(tmp_path, make_index):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(120):
        (root / f"mod{i}.py").write_text(f"class C{i}:\n    def run(self):\n        return helper()\n")
    (root / "helper.py").write_text("def helper():\n    return 1\n")
    ix = make_index(root, workers=2)
    stats = ix.refresh()
    assert (stats.parsed, stats.failed) == (121, 0)
    assert ix.references("helper").total == 120
    assert ix.definitions("run").total == 120


def test_workspace_symbols_ranking(project, make_index):
    root = project("python")
    (root / "more.py").write_text(
        "def area_total():\n    pass\n\ndef surface_area():\n    pass\n\ndef AREA():\n    pass\n")
    ix = make_index(root)
    ix.refresh()
    names = [s.name for s in ix.workspace_symbols("area").symbols]
    # exact (both cases) first, then prefix, then substring
    assert names[:3] == ["area", "area", "AREA"]
    assert names.index("area_total") < names.index("surface_area")
    assert names.index("total_area") > names.index("area_total")
    fuzzy = ix.workspace_symbols("tlar")  # letters of total_area in order
    assert [s.name for s in fuzzy.symbols] == ["total_area"]
    assert ix.workspace_symbols("zzzz").symbols == []
    limited = ix.workspace_symbols("a", limit=2)
    assert len(limited.symbols) == 2 and limited.truncated and limited.total > 2


def test_references_can_include_definitions(project, make_index):
    root = project("python")
    ix = make_index(root)
    ix.refresh()
    plain = ix.references("Circle")
    both = ix.references("Circle", include_definitions=True)
    assert both.total == plain.total + 1
    assert ("shapes.py", 10) in {(l.path.name, l.line) for l in both.locations}
    assert ("shapes.py", 10) not in {(l.path.name, l.line) for l in plain.locations}
    one = ix.references("Circle", limit=1)
    assert len(one.locations) == 1 and one.truncated


@pytest.mark.parametrize("workers", [1, 2])
def test_references_are_every_use_in_path_then_position_order(tmp_path, make_index, workers):
    # a name used as a call, an attribute and a bare identifier in one file (several stored
    # groups per file), in many files: every limit must give the first uses in (path, line,
    # character) order, and the total must count them all
    root = tmp_path / "uses"
    root.mkdir()
    for i in range(60):
        (root / f"m{i:02}.py").write_text(
            f"import x\nv = x.run\nrun = 1\nrun()\nprint(run, x.run({i}))\n"
            "class K(run):\n    pass\n")
    ix = make_index(root, workers=workers)
    ix.refresh()
    expected = sorted((f"m{i:02}.py", line, char) for i in range(60) for _, _, line, char
                      in [r for r in ix.file_facts(root / f"m{i:02}.py").refs if r[0] == "run"])
    assert len(expected) == 60 * 5
    for limit in (1, 4, 5, 7, 299, 300, 1000):
        ans = ix.references("run", limit=limit)
        got = [(loc.path.name, loc.line, loc.character) for loc in ans.locations]
        assert got == expected[:limit]
        assert ans.total == 300 and ans.truncated == (limit < 300)


def test_queries_refresh_when_told_or_when_old(tmp_path, make_index):
    root = tmp_path / "fresh"
    root.mkdir()
    (root / "a.py").write_text("def one():\n    pass\n")
    ix = make_index(root, max_age=3600.0)
    ix.refresh()
    gen = ix.generation
    assert ix.refresh().parsed == 0 and ix.generation == gen  # nothing new: caches stay valid
    (root / "b.py").write_text("def two():\n    pass\n")
    assert ix.definitions("two").total == 0  # refreshed less than max_age ago, nobody said
    ix.mark_stale()
    assert ix.definitions("two").total == 1
    assert ix.generation > gen
    (root / "c.py").write_text("def three():\n    pass\n")
    ix.max_age = 0.0
    assert ix.definitions("three").total == 1
    (root / "d.py").write_text("def four():\n    pass\n")
    ix.max_age = None  # the caller refreshes: queries never do
    ix.mark_stale()
    assert ix.definitions("four").total == 0


CURSOR_CASES = [
    # (file, line, character, identifier)
    ("report.py", 9, 9, "Circle"),
    ("report.py", 9, 14, "Circle"),
    ("report.py", 10, 17, "area"),
    ("report.py", 9, None, "c"),
    ("report.py", 4, None, "total_area"),
    ("report.py", 9, 15, None),  # the `(` after Circle
    ("report.py", 3, None, None),  # an empty line
    ("shapes.py", 13, 9, "__init__"),
]


@pytest.mark.parametrize("name,line,char,want", CURSOR_CASES)
def test_identifier_at(project, make_index, name, line, char, want):
    root = project("python")
    ix = make_index(root)
    assert ix.identifier_at(root / name, line, char) == want


def test_identifier_at_counts_characters_not_bytes(tmp_path, make_index):
    root = tmp_path / "u"
    root.mkdir()
    (root / "u.py").write_text("s = 'é€' + naïve_name\n", encoding="utf-8")
    ix = make_index(root)
    assert ix.identifier_at(root / "u.py", 1, 12) == "naïve_name"


@pytest.mark.parametrize("line,char", [(0, 1), (99, 1), (1, 200), (1, 0)])
def test_position_outside_the_file_is_a_clear_error(project, make_index, line, char):
    root = project("python")
    ix = make_index(root)
    with pytest.raises(PositionError) as e:
        ix.identifier_at(root / "report.py", line, char)
    assert "outside" in str(e.value)


def test_document_symbols_of_an_unindexed_file_parses_it(project, make_index, tmp_path):
    root = project("python")
    ix = make_index(root, include=lambda p: False)
    ix.refresh()
    ans = ix.document_symbols(root / "shapes.py")
    assert [s.name for s in ans.symbols][:3] == ["UNIT", "Shape", "area"]


def test_bad_input_gets_codebelt_errors(project, make_index, tmp_path):
    root = project("python")
    ix = make_index(root)
    with pytest.raises(UnknownLanguage):
        check_language("cobol")
    (root / "notes.txt").write_text("hello")
    with pytest.raises(IntelError):
        ix.document_symbols(root / "notes.txt")
    with pytest.raises(IntelError):
        ix.document_symbols(root / "missing.py")
    with pytest.raises(IntelError):
        ix.workspace_symbols("")
    with pytest.raises(IntelError):
        ix.definitions("x", limit=0)
    with pytest.raises(CodebeltError):
        CodeIndex(tmp_path / "does-not-exist", tmp_path / "c")
    ix.close()
    with pytest.raises(IntelError):
        ix.definitions("Circle")


def test_a_file_that_breaks_the_parser_does_not_stop_the_index(project, make_index):
    root = project("python")
    (root / "broken.py").write_text("def broken(:\n    return )))\nclass Fine:\n    pass\n")
    (root / "bad.py").write_bytes("def ok():\n    return '\udcff'\n".encode("utf-8", "surrogatepass"))
    ix = make_index(root)
    stats = ix.refresh()
    assert stats.failed == 0
    assert ix.definitions("Fine").total == 1
    assert ix.definitions("Circle").total == 1


def test_a_failed_background_build_is_reported_in_notes(project, make_index):
    root = project("python")
    calls = []

    def listing():
        calls.append(1)
        if len(calls) <= 2:
            raise OSError("listing went wrong")
        return [root / "shapes.py"]

    ix = make_index(root, list_files=listing)
    ix.start()
    assert ix.wait(timeout=30)
    ans = ix.definitions("Circle")  # tries again first (the index was never built); fails again
    assert len(calls) == 2
    assert ans.total == 0 and ans.note and "listing went wrong" in ans.note
    ans = ix.definitions("Circle")  # and again: this time the listing works
    assert len(calls) == 3
    assert ans.total == 1 and ans.note is None


def test_symbols_are_ranked_exact_then_prefix_then_substring_then_the_rest():
    from codebelt.intel.model import Symbol
    from codebelt.intel.navigate import rank_symbols

    names = ["go_extract_domain", "get_domain_literal", "forget_domain", "Get_Domain", "get_domains", "get_domain"]
    syms = [Symbol(n, "function", Path("m.py"), i + 1, 1, i + 1) for i, n in enumerate(names)]
    assert [s.name for s in rank_symbols(syms, "get_domain")] == [
        "get_domain", "Get_Domain", "get_domains", "get_domain_literal", "forget_domain", "go_extract_domain"]


def test_close_returns_while_a_parse_blocks_and_the_build_stops_at_its_next_file(make_index, tmp_path, monkeypatch):
    """A close does not wait on a build whose parse blocks: it returns saying so, the build
    stops before its next file once the parse returns, stores what it parsed and closes the
    index itself."""
    from codebelt.intel import index, pool

    monkeypatch.setattr(index, "CLOSE_WAIT", 0.2, raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(6):
        (root / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    real = pool.parse_one
    parsed: list[str] = []
    blocked, release = threading.Event(), threading.Event()

    def blocking(job, max_bytes):
        parsed.append(job.rel)
        if len(parsed) == 2:
            blocked.set()
            release.wait(120)
        return real(job, max_bytes)

    monkeypatch.setattr(pool, "parse_one", blocking)
    ix = make_index(root)  # one worker: files are parsed in the build thread
    ix.start()
    assert blocked.wait(60), "the build never reached its second file"
    build = ix._thread
    said: list[str | None] = []
    closer = threading.Thread(target=lambda: said.append(ix.close()), daemon=True)
    closer.start()
    closer.join(60)
    try:
        assert not closer.is_alive(), "close waited for a parse that blocks"
        assert said[0] is not None and "Nothing is lost" in said[0], said
        assert build.is_alive()
        with pytest.raises(IntelError, match="closed"):
            ix.definitions("f0")
    finally:
        release.set()
    build.join(60)
    assert not build.is_alive(), "the build did not stop after its blocked parse"
    assert len(parsed) == 2, parsed  # stopped before its next file
    db = sqlite3.connect(ix._store.path)
    try:
        stored = sorted(r[0] for r in db.execute("SELECT path FROM files"))
    finally:
        db.close()
    assert stored == sorted(parsed), stored  # the blocked file's result was committed too
    with pytest.raises(sqlite3.ProgrammingError):
        ix._store.writer.execute("SELECT 1")  # closed by the build as it ended
