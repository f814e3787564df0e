"""The repository map on real repositories, before and after, side by side in one run.

    .venv/bin/python benchmarks/bench_repomap.py [--before REV]

Projects: the source distributions of click 8.1.7 and flask 3.0.3 from PyPI (`pip download
--no-binary`: the repositories as released, with their tests, docs and examples), unpacked into
benchmarks/.corpus/repomap/ once. `--before` names the git revision whose
`codebelt/intel/repomap.py` is the "before" (default: the commit before the ranking changed).

Two probes, 20 questions in all:
- the map without focus: where the project's central classes rank, and how many test files
  take places among its first ten files;
- the map focused on one file (`paths=[file]`), for 10 library files per project drawn at
  random: how many of the definitions that file imports from the rest of the project the map
  shows within the default budget (recall, the question an agent editing that file asks).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = HERE / ".corpus" / "repomap"
PROJECTS = {"click": ("click==8.1.7", ["Command", "Group", "Parameter", "Context", "Option", "Argument"]),
            "flask": ("flask==3.0.3", ["Flask", "Blueprint", "Config", "Request", "Response", "Scaffold"])}
BEFORE = "3ce4e6e"  # main before this work

from codebelt.intel import repomap as after_module  # noqa: E402
from codebelt.intel.index import CodeIndex  # noqa: E402


def load_before(rev: str, name: str = "before"):
    if Path(rev).is_file():
        src = Path(rev).read_text()
    else:
        src = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:src/codebelt/intel/repomap.py"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
    spec = importlib.util.spec_from_loader(f"codebelt.intel._repomap_{name}", loader=None)
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "codebelt.intel"
    sys.modules[spec.name] = mod  # dataclasses look their module up
    exec(compile(src, f"{rev}:repomap.py", "exec"), mod.__dict__)
    return mod


def project(name: str, requirement: str) -> Path | None:
    dst = CORPUS / name
    if dst.is_dir():
        return dst
    tmp = Path(tempfile.mkdtemp())
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                              "-d", str(tmp), requirement], capture_output=True, text=True, timeout=300)
        archives = list(tmp.glob("*.tar.gz"))
        if out.returncode != 0 or not archives:
            return None
        with tarfile.open(archives[0]) as tar:
            tar.extractall(tmp / "x", filter="data")
        top = next((tmp / "x").iterdir())
        CORPUS.mkdir(parents=True, exist_ok=True)
        shutil.move(str(top), dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dst


TESTISH = re.compile(r"(^|/)(tests?|testing|fixtures?|examples?|docs?)/|(^|/)test_[^/]*$|_test\.py$|conftest\.py$")


def imported_definitions(ix: CodeIndex, rel: str) -> set[tuple[str, str]]:
    """(path, name) of the top-level classes and functions `rel` imports from the project's
    other library files (a name defined in exactly one such file)."""
    facts = ix.file_facts(ix.absolute(rel))
    wanted = {n for n, kind, *_ in facts.refs if kind == "import"}
    out = set()
    for name in wanted:
        defs = [s for s in ix.definitions_in(name, None) if s.container is None
                and s.kind in ("class", "function")]
        paths = {ix.relative(s.path) for s in defs} - {rel}
        paths = {p for p in paths if not TESTISH.search(p)}
        if len(paths) == 1:
            out.add((paths.pop(), name))
    return out


def probe(mod, ix: CodeIndex, central: list[str], files: list[str]) -> dict:
    plain = mod.repo_map(ix)
    order = [s.name for s in plain.symbols]
    ranks = {c: (order.index(c) + 1 if c in order else None) for c in central}
    shown_files = [ix.relative(p) for p in plain.files[:10]]
    tests_in_top = sum(bool(TESTISH.search(p)) for p in shown_files)
    found = total = 0
    for rel in files:
        want = imported_definitions(ix, rel)
        if not want:
            continue
        m = mod.repo_map(ix, paths=[ix.absolute(rel)])
        shown = {(ix.relative(s.path), s.name) for s in m.symbols}
        found += len(want & shown)
        total += len(want)
    return {"ranks": ranks, "tests_in_top10": tests_in_top, "top_files": shown_files[:5],
            "top_names": order[:8], "recall": found / total if total else 0.0, "found": found,
            "total": total}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default=BEFORE)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--after", default=None, help=argparse.SUPPRESS)  # a repomap.py to try
    args = ap.parse_args()
    before = load_before(args.before)
    after = load_before(args.after, "after") if args.after else after_module
    for name, (req, central) in PROJECTS.items():
        root = project(name, req)
        if root is None:
            print(f"{name}: skipped (pip download {req} failed)")
            continue
        cache = Path(tempfile.mkdtemp(prefix="bench-repomap-"))
        try:
            with CodeIndex(root, cache) as ix:
                ix.refresh()
                lib = sorted(p for p in ix.all_paths() if p.endswith(".py") and not TESTISH.search(p)
                             and "/" in p)
                files = random.Random(args.seed).sample(lib, min(10, len(lib)))
                rows = {}
                for label, mod in (("before", before), ("after", after)):
                    ix.derived.pop("repomap", None)
                    rows[label] = probe(mod, ix, central, files)
            print(f"{name} ({req}, {len(ix.all_paths()) if False else ''}{len(lib)} library files):")
            for label, r in rows.items():
                ranks = ", ".join(f"{c} {r['ranks'][c] or '-'}" for c in central)
                print(f"  {label:<6} central classes' ranks: {ranks}")
                print(f"  {'':<6} test/doc/example files among the first 10: {r['tests_in_top10']}; "
                      f"first files: {', '.join(r['top_files'])}")
                print(f"  {'':<6} first names: {', '.join(r['top_names'])}")
                print(f"  {'':<6} focused on a file: {r['found']}/{r['total']} of the definitions it "
                      f"imports shown (recall {r['recall']:.2f})")
        finally:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
