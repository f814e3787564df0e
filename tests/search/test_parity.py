"""Grep and Glob return exactly what ripgrep itself returns (same files, same lines)."""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from codebelt.search.ripgrep import locate

RG = locate()
VCS = [a for d in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl") for a in ("--glob", "!" + d)]
STDLIB = Path(sysconfig.get_path("stdlib"))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for pkg in ("json", "email", "http"):
        shutil.copytree(STDLIB / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("def ref: in git\n")
    return root


def rg(root: Path, *args: str) -> list[str]:
    # VCS exclusions last: rg lets later globs override earlier ones
    out = subprocess.run([RG, "--no-config", "--hidden", *args, *VCS], cwd=root,
                         stdin=subprocess.DEVNULL, capture_output=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    return out.stdout.decode().splitlines()


PATTERNS = [
    (r"def \w+_header", []),
    ("charset", ["-i"]),
    ("import", ["--glob", "*.py"]),
    (r"class \w+Error", []),
]


@pytest.mark.parametrize("pattern,extra", PATTERNS)
def test_grep_modes_equal_rg(corpus, make_session, pattern, extra):
    s = make_session(root=corpus)
    inp: dict = {"pattern": pattern, "head_limit": 0}
    if "-i" in extra:
        inp["-i"] = True
    if "--glob" in extra:
        inp["glob"] = extra[extra.index("--glob") + 1]

    files = s.call("Grep", inp)
    assert sorted(files.data["filenames"]) == sorted(rg(corpus, "-l", *extra, "-e", pattern))

    counts = s.call("Grep", {**inp, "output_mode": "count"})
    want_counts = rg(corpus, "-c", *extra, "-e", pattern)
    assert sorted(counts.data["content"].splitlines()) == sorted(want_counts)
    assert counts.data["numMatches"] == sum(int(x.rsplit(":", 1)[1]) for x in want_counts)

    # content, page by page, against rg's own path-sorted output
    want = rg(corpus, "-n", "--sort=path", *extra, "-e", pattern)
    got: list[str] = []
    offset = 0
    while True:
        r = s.call("Grep", {**inp, "output_mode": "content", "head_limit": 100, "offset": offset})
        assert not r.is_error, r.text
        got += r.data["content"].splitlines() if r.data["content"] else []
        if r.data["nextOffset"] is None:
            break
        offset = r.data["nextOffset"]
    assert got == [ln for ln in want if len(ln) < 500]  # no clipped lines in this corpus


def test_content_with_context_equals_rg(corpus, make_session):
    s = make_session(root=corpus)
    r = s.call("Grep", {"pattern": "def decode", "output_mode": "content", "-C": 2,
                        "head_limit": 0})
    want = rg(corpus, "-n", "--sort=path", "-C", "2", "-e", "def decode")
    assert r.data["content"].splitlines() == want


@pytest.mark.parametrize("pattern", ["**/*.py", "*.py", "email/**/*", "**/__init__.py", "*"])
def test_glob_equals_rg_files(corpus, make_session, pattern):
    s = make_session(root=corpus, settings={"glob": {"maxResults": 100_000}})
    r = s.call("Glob", {"pattern": pattern})
    want = [p.removeprefix("./") for p in rg(corpus, "--files", "--glob", pattern)]
    assert sorted(r.data["filenames"]) == sorted(want)
    assert not any(f.startswith(".git/") for f in r.data["filenames"])
    mtimes = [(corpus / f).stat().st_mtime_ns for f in r.data["filenames"]]
    assert mtimes == sorted(mtimes, reverse=True)


# content mode has three strategies (see search.grep._content); each must give the same page
STRATEGIES = {
    "sorted rg within budget": dict(sorted_budget=60.0),
    "parallel rg, sorted here": dict(sorted_budget=0.0),
    "parallel overflow, sorted rg": dict(sorted_budget=0.0, sort_in_memory_bytes=1),
}


@pytest.mark.parametrize("pattern,offset,limit", [
    ("import", 0, 250), ("import", 333, 100), (r"def \w+_header", 0, None), ("raise", 10**9, 5),
])
def test_content_strategies_agree(corpus, pattern, offset, limit):
    from codebelt.search.grep import GrepQuery, grep

    pages = {}
    for name, kw in STRATEGIES.items():
        q = GrepQuery(pattern, mode="content", offset=offset, limit=limit, max_chars=10**9)
        o = grep(q, str(corpus), rg=RG, **kw)
        assert not o.errors and not o.timed_out
        pages[name] = [(ln.path, ln.number, ln.is_match, ln.text, ln.sep_before) for ln in o.lines]
    first = next(iter(pages.values()))
    assert all(p == first for p in pages.values()), {k: len(v) for k, v in pages.items()}
    want = rg(corpus, "-n", "--sort=path", "-e", pattern)
    end = None if limit is None else offset + limit
    assert [f"{p}:{n}:{t}" for p, n, _, t, _ in first] == want[offset:end]
