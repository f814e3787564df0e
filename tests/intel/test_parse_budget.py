"""A file whose parse is a grammar's worst case (tree-sitter-python: code followed by thousands of
comment lines, seconds per 8,000 and quadratic) is skipped once its budget of CPU time is spent — by the
index (in process and in worker processes), the tools that parse the file under the cursor, and
syntax checks — with a reason, while the other files are answered as usual. The budget is
lowered here so that the slow case costs a fraction of a second, not a minute."""

from __future__ import annotations

import time

import pytest

from codebelt.errors import ParseTooSlow
from codebelt.intel import languages

SLOW = "def slow():\n    return 1\n" + "# a comment line\n" * 8000
FINE = "def fine():\n    return slow()\n"


@pytest.fixture(autouse=True)
def small_budget(monkeypatch):
    monkeypatch.setattr(languages, "PARSE_BUDGET_S", 0.2)


def test_the_slow_case_is_cut_short_and_an_ordinary_file_is_not():
    with pytest.raises(ParseTooSlow, match="longer than 0.2 s of CPU time"):
        languages.parse("python", SLOW.encode())
    tree = languages.parse("python", FINE.encode())
    assert tree.root_node.end_byte == len(FINE) and not tree.root_node.has_error


class _Descheduled:
    """The clock of a thread taken off the CPU for `seconds` right after its parse began: wall
    time jumps, the thread's CPU time does not."""

    def __init__(self, seconds: float):
        self.seconds, self.calls = seconds, 0

    def monotonic(self) -> float:
        self.calls += 1
        return time.monotonic() + (self.seconds if self.calls > 1 else 0.0)

    thread_time = staticmethod(time.thread_time)


def test_a_descheduled_parse_is_not_too_slow(monkeypatch):
    """At load ~8 a thread gets a fraction of a core: the budget is the CPU time it used, so an
    ordinary file is parsed however long the thread waited."""
    clock = _Descheduled(20.0)  # 100 times the budget, within the wall-clock bound
    monkeypatch.setattr(languages, "time", clock)
    source = (FINE + "padding = 1\n" * 20000).encode()  # several chunks: the clock is read again
    tree = languages.parse("python", source)
    assert clock.calls > 1
    assert tree.root_node.end_byte == len(source) and not tree.root_node.has_error


def test_a_parse_past_the_wall_clock_bound_is_skipped(monkeypatch):
    """A parse that makes no progress at all is still bounded, by a wall clock many times the
    budget."""
    monkeypatch.setattr(languages, "time", _Descheduled(languages.PARSE_WALL_S + 1))
    source = (FINE + "padding = 1\n" * 20000).encode()
    with pytest.raises(ParseTooSlow, match=r"longer than 30 s \(the machine too busy"):
        languages.parse("python", source)


def test_a_tree_reads_its_text_whole_after_the_budget_has_passed(monkeypatch):
    """A parsed tree reads a node's text through the parse's reader: once parsed, the budget no
    longer applies (a resolve that took longer than it under load would read empty names)."""
    source = (FINE + "padding = 1\n" * 2000).encode()
    tree = languages.parse("python", source)
    monkeypatch.setattr(languages.time, "monotonic", lambda: 1e12)  # far past the deadline
    assert tree.root_node.text == source
    names = [n.text for n in tree.root_node.children[0].children if n.type == "identifier"]
    assert names == [b"fine"]


@pytest.mark.parametrize("workers", [1, 2], ids=["in process", "worker processes"])
def test_the_index_skips_it_with_the_reason(make_index, tmp_path, workers):
    root = tmp_path / "ws"
    root.mkdir()
    # worker processes keep the default budget (2 s): give them a case far beyond it (16,000
    # comment lines take tree-sitter-python ~20 s)
    (root / "slow.py").write_text(SLOW if workers == 1 else SLOW + "# a comment line\n" * 8000)
    for i in range(60 if workers > 1 else 1):  # enough files that the build uses its workers
        (root / f"fine{i}.py").write_text(FINE.replace("fine", f"fine{i}"))
    ix = make_index(root, workers=workers)
    ix.refresh()
    count, first = ix.skipped_files()
    assert count == 1 and first[0][0] == "slow.py" and "longer than" in first[0][1], first
    assert [s.name for s in ix.definitions("fine0").symbols] == ["fine0"]


def test_the_tools_answer_with_a_clear_sentence(make_session, ws):
    (ws / "slow.py").write_text(SLOW)
    (ws / "fine.py").write_text(FINE)
    s = make_session(settings={"lsp": {"enabled": False}})
    r = s.call("LSP", {"operation": "documentSymbol", "filePath": "slow.py"})
    assert r.is_error and "longer than 0.2 s" in r.text, r.text
    r = s.call("LSP", {"operation": "goToDefinition", "filePath": "slow.py", "line": 1, "character": 5})
    assert r.is_error and "longer than 0.2 s" in r.text, r.text
    r = s.call("LSP", {"operation": "documentSymbol", "filePath": "fine.py"})
    assert not r.is_error and "function fine" in r.text, r.text
