"""goToDefinition from the tree-sitter index, checked against a language server on real code.

    .venv/bin/python benchmarks/bench_definitions.py [--sample N] [--only python,typescript,go]

Projects (copied or unpacked into benchmarks/.corpus/defs/ once):
- Python: `click` and `pydantic` as installed in this venv, against basedpyright;
- TypeScript: the sources rxjs ships in its npm package (`npm pack rxjs@7.8.2`), against
  typescript-language-server when it is on PATH;
- Go: Go's own `go/` packages (GOROOT/src/go, from Debian's golang-go), against gopls when it
  is on PATH.

For each, N uses of names are drawn at random from the index's references (calls, attributes,
types, imports, bare identifiers: what a model points at), the server is asked where each is
defined, and so is the index two ways: by name (what it answered before: every definition of the
name) and by scope (`resolve.definitions_at`). Uses the server answers with nothing, or only with
places outside the project (builtins, the standard library), are counted apart: there the index
should answer nothing.

precision = index answers that the server also gives / index answers (within the project)
recall    = uses whose server answer the index includes / uses the server answers in the project
Answers match on path and line.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / ".corpus" / "defs"

from codebelt.intel.index import CodeIndex  # noqa: E402
from codebelt.intel.lsp import LspManager, Unanswered, ask, detected  # noqa: E402
from codebelt.intel.lsp.servers import ServerSpec  # noqa: E402
from codebelt.intel.resolve import definitions_at  # noqa: E402
from codebelt.intel.rows import unpack_spots  # noqa: E402


def python_project(package: str) -> Path | None:
    try:
        mod = __import__(package)
    except ImportError:
        return None
    src = Path(mod.__file__).parent
    dst = CORPUS / package
    if not (dst / package).is_dir():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst / package, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def rxjs_project() -> Path | None:
    dst = CORPUS / "rxjs"
    if (dst / "src").is_dir():
        return dst
    tmp = Path(tempfile.mkdtemp())
    try:
        out = subprocess.run(["npm", "pack", "rxjs@7.8.2", "--silent"], cwd=tmp, capture_output=True,
                             text=True, timeout=300)
        if out.returncode != 0:
            return None
        with tarfile.open(tmp / out.stdout.strip().splitlines()[-1]) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(("package/src/", "package/tsconfig"))
                       and (m.isfile() or m.isdir())]
            tar.extractall(tmp, members=members, filter="data")
        shutil.move(str(tmp / "package"), dst)
        (dst / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "target": "es2020", '
                                           '"lib": ["es2020", "dom"], "moduleResolution": "node"}, '
                                           '"include": ["src"]}\n')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dst


def go_project() -> Path | None:
    goroot = shutil.which("go") and subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True,
                                                   timeout=60).stdout.strip()
    src = Path(goroot) / "src" / "go" if goroot else None
    return src.resolve() if src and src.is_dir() else None


@dataclass
class Score:
    hits: int = 0  # index answers the server also gives
    given: int = 0  # index answers
    found: int = 0  # uses whose server answer the index includes
    asked: int = 0  # uses the server answers in the project
    outside: int = 0  # uses the server answers only outside the project
    outside_quiet: int = 0  # ... where the index answered nothing
    by_kind: Counter = field(default_factory=Counter)

    def add(self, kind: str, mine: set, server: set, server_any: bool) -> None:
        if not server:
            if server_any:
                self.outside += 1
                self.outside_quiet += not mine
                self.given += len(mine)
            return
        self.asked += 1
        self.given += len(mine)
        self.hits += len(mine & server)
        ok = bool(mine & server)
        self.found += ok
        self.by_kind[(kind, ok)] += 1

    def precision(self) -> float:
        return self.hits / self.given if self.given else 1.0

    def recall(self) -> float:
        return self.found / self.asked if self.asked else 0.0


def sample_uses(ix: CodeIndex, n: int, seed: int) -> list[tuple[Path, int, int, str, str]]:
    """(path, line, character, name, kind) of `n` uses drawn evenly over all references."""
    rows = ix._db().execute(
        "SELECT f.path, r.name, r.plain, r.spots FROM refs r JOIN files f ON f.id = r.file_id "
        "ORDER BY f.path, r.name").fetchall()
    spots = []
    for path, name, plain, blob in rows:
        for line, char in unpack_spots(blob):
            spots.append((path, line, char, name, "identifier" if plain else "call/attr/type/import"))
    rng = random.Random(seed)
    picked = rng.sample(spots, min(n, len(spots)))
    return [(ix.absolute(p), line, char, name, kind) for p, line, char, name, kind in picked]


def run_project(label: str, root: Path, spec: ServerSpec, n: int, seed: int) -> list[str]:
    cache = Path(tempfile.mkdtemp(prefix="bench-defs-"))
    lines = []
    manager = LspManager(root, [spec], request_timeout=60, start_timeout=120)
    try:
        with CodeIndex(root, cache) as ix:
            stats = ix.refresh()
            uses = [u for u in sample_uses(ix, n * 2, seed) if u[0].suffix in spec.extensions][:n]
            manager.wait_ready(uses[0][0], 120)
            # warm the server: a project still loading gets partial answers, so the first uses
            # are asked in rounds until two rounds agree
            deadline = time.monotonic() + 180
            previous = None
            while time.monotonic() < deadline:
                round_ = []
                for path, line, char, *_ in uses[:12]:
                    try:
                        a = ask(manager, "goToDefinition", path, line, char, None, 100)
                        round_.append(sorted((str(loc.path), loc.line) for loc in a.locations))
                    except Unanswered:
                        round_.append(None)
                if round_ == previous:
                    break
                previous = round_
                time.sleep(3)
            old, new = Score(), Score()
            t_new = 0.0
            for path, line, char, name, kind in uses:
                try:
                    a = ask(manager, "goToDefinition", path, line, char, None, 100)
                except Unanswered:
                    continue
                inside = {(loc.path.resolve(), loc.line) for loc in a.locations
                          if _within(loc.path, root)}
                server_any = bool(a.locations)
                if not server_any:
                    continue
                by_name = {(loc.path.resolve(), loc.line) for loc in ix.definitions(name, limit=100).locations}
                t = time.perf_counter()
                scoped_answer = definitions_at(ix, path, line, char, limit=100)
                t_new += time.perf_counter() - t
                scoped = {(loc.path.resolve(), loc.line) for loc in scoped_answer.locations}
                old.add(kind, by_name, inside, server_any)
                new.add(kind, scoped, inside, server_any)
                if SHOW and scoped != inside:
                    print(f"  miss {path.relative_to(root)}:{line}:{char} {name}: index "
                          f"{sorted(_short(root, s) for s in scoped)} server "
                          f"{sorted(_short(root, s) for s in inside)}", file=sys.stderr)
            lines.append(f"{label}: {stats.parsed} files, {len(uses)} uses drawn, "
                         f"{new.asked} answered by {spec.name} inside the project, "
                         f"{new.outside} only outside it")
            for what, s in (("by name (before)", old), ("by scope (after)", new)):
                lines.append(f"  {what:<17} precision {s.precision():.2f}  recall {s.recall():.2f}"
                             f"  ({s.hits}/{s.given} answers right, {s.found}/{s.asked} uses found;"
                             f" outside-only uses left unanswered: {s.outside_quiet}/{s.outside})")
            asked = max(new.asked + new.outside, 1)
            lines.append(f"  by scope: {t_new / asked * 1e3:.1f} ms per answer on average")
    finally:
        manager.close()
        shutil.rmtree(cache, ignore_errors=True)
    return lines


SHOW = "--show-misses" in sys.argv


def _short(root: Path, spot: tuple[Path, int]) -> str:
    return f"{spot[0].relative_to(root.resolve())}:{spot[1]}"


def _within(p: Path, root: Path) -> bool:
    try:
        p.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", default="python,typescript,go")
    ap.add_argument("--show-misses", action="store_true", help="print each use answered otherwise")
    args = ap.parse_args()
    only = set(args.only.split(","))
    CORPUS.mkdir(parents=True, exist_ok=True)
    specs = {s.name: s for s in detected()}
    out: list[str] = [f"(cores: {len(os.sched_getaffinity(0))}; {args.sample} uses per project, seed {args.seed})"]
    if "python" in only:
        spec = specs.get("basedpyright")
        for pkg in ("click", "pydantic"):
            root = python_project(pkg)
            if spec is None or root is None:
                out.append(f"python/{pkg}: skipped (basedpyright or {pkg} not installed)")
                continue
            out += run_project(f"python/{pkg}", root, spec, args.sample, args.seed)
            print("\n".join(out[-5:]), file=sys.stderr, flush=True)
    if "typescript" in only:
        spec = specs.get("typescript-language-server")
        root = rxjs_project() if spec else None
        if spec is None or root is None:
            out.append("typescript/rxjs: skipped (typescript-language-server not on PATH, or npm failed)")
        else:
            out += run_project("typescript/rxjs", root, spec, args.sample, args.seed)
            print("\n".join(out[-5:]), file=sys.stderr, flush=True)
    if "go" in only:
        gopls = shutil.which("gopls")
        root = go_project()
        if gopls is None or root is None:
            out.append("go: skipped (gopls or go not installed: apt-get install gopls golang-go)")
        else:
            spec = ServerSpec("gopls", gopls, (), {".go": "go"})
            out += run_project(f"go/{root.parent.parent.name}/src/go", root, spec, args.sample, args.seed)
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
