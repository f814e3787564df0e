"""A ranked map of the repository that fits a token budget.

Files form a graph: an edge runs from a file that uses a name to each file defining it, weighted
by how often it is used (square root, so one chatty file does not dominate), less for names many
files define or that look private, more for names the caller mentions. PageRank over that graph,
personalised toward the caller's `paths` and the files defining `mentions`, ranks files; each
file's rank flows along its edges to the definitions it uses, which ranks definitions. The top
definitions' signature lines, grouped under their file's path, are packed into the budget.

Not every file or name says as much: tests, fixtures, examples, docs, vendored and generated
files start with a tenth of an ordinary file's share and their definitions count a tenth (a map
is for finding the code to work on); a use through an attribute (`x.write()`) of a name only
methods and fields define is weak evidence of which class is meant, so such edges count a
quarter; and a definition's score is divided by how many files define its name (IDF-like:
`isatty`, `write`, `__init__` are defined everywhere and say little), dunder methods a tenth.

Tokens are estimated as characters / 4 (no tokenizer dependency); `RepoMapResult.chars` is
the exact size.
"""

from __future__ import annotations

import math
import operator
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import IntelError
from .index import CodeIndex

CHARS_PER_TOKEN = 4
DAMPING = 0.85
MAX_ITERATIONS = 50
TOLERANCE = 1e-6  # L1 change between iterations; ranks only need their order
MAX_DEFINERS = 25  # a name defined in more files than this says nothing about who uses whom
COMMON_PENALTY = 5  # above this many definers a name's edges are weakened
MENTION_BOOST = 10.0
MIN_PLAIN_NAME = 3
NEIGHBOUR_BOOST = 3.0
UBIQUITY = 0.05
MAX_OUT_EDGES = 64  # strongest file-to-file edges kept per file for the power iteration  # share of files using a name above which its edges weaken
PRIVATE_PENALTY = 0.1
MAX_MENTIONS = 200
PERIPHERAL = 0.1  # weight of test, fixture, example, doc, vendored and generated files
MEMBER_EDGE = 0.25  # an attribute use of a name that only members define
DUNDER = 0.1
KIND_WEIGHT = {"method": 0.6, "field": 0.4, "constant": 0.6}
PERIPHERAL_PATH = re.compile(
    r"(^|/)(tests?|testing|spec|specs|__tests__|fixtures?|examples?|samples?|docs?|"
    r"benchmarks?|vendor|vendored|third_party|thirdparty|node_modules|generated|gen|build|dist)/"
    r"|(^|/)(test_[^/]*|[^/]*_test\.[a-z]+|[^/]*\.(spec|test)\.[jt]sx?|conftest\.py|"
    r"[^/]*_pb2(_grpc)?\.py|[^/]*\.pb\.go|[^/]*\.min\.js|[^/]*\.generated\.[a-z]+)$")


def peripheral(rel: str) -> bool:
    """Whether a path looks like tests, fixtures, examples, docs, vendored or generated code."""
    return PERIPHERAL_PATH.search(rel) is not None
MAX_PATHS = 1000
SHOWN_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "type", "union",
                         "record", "protocol", "object", "module", "namespace", "function",
                         "method", "macro", "constant"})


@dataclass(frozen=True)
class RankedSymbol:
    path: Path
    name: str
    kind: str
    line: int
    signature: str
    container: str | None
    rank: float


@dataclass
class RepoMapResult:
    text: str
    tokens: int  # estimated: ceil(chars / 4)
    chars: int
    symbols: list[RankedSymbol] = field(default_factory=list)  # shown, best first
    files: list[Path] = field(default_factory=list)  # shown, in map order
    candidates: int = 0  # definitions that could have been shown
    note: str | None = None


# kinds a bare identifier can mean from another file; methods and fields are reached through
# an attribute, call or type use instead (a parameter named `args` is not a use of `.args`)
MEMBER_KINDS = frozenset({"method", "field"})


class _Graph:
    """Everything about the ranking that does not depend on the caller: built once per index
    generation. Edge weights are normalised per source file, and each definition's incoming
    (source file, weight) pairs are kept so a ranking is a few C-level sums."""

    def __init__(self, index: CodeIndex):
        def_rows, ref_rows = index.graph_rows()
        self.files: list[str] = []
        fidx: dict[str, int] = {}

        def file_id(rel: str) -> int:
            i = fidx.get(rel)
            if i is None:
                i = fidx[rel] = len(self.files)
                self.files.append(rel)
            return i

        self.defs: list[tuple[int, str, str, int, str, str | None]] = []
        every: dict[str, set[int]] = defaultdict(set)
        top: dict[str, set[int]] = defaultdict(set)
        for rel, name, kind, line, sig, container in def_rows:
            if kind not in SHOWN_KINDS or (kind == "function" and container):
                continue  # (a function inside a function is a local helper)
            f = file_id(rel)
            self.defs.append((f, name, kind, line, sig, container))
            every[name].add(f)
            if kind not in MEMBER_KINDS:
                top[name].add(f)
        self.fidx = fidx
        self.definers = {n: sorted(v) for n, v in every.items()}
        # how many files use each name: a name nearly every file uses (a builtin another file
        # happens to shadow, `str`, `type`) says little about which file matters
        users: dict[str, int] = defaultdict(int)
        for _, name, _, _ in ref_rows:
            users[name] += 1
        ubiquitous = max(UBIQUITY * len(fidx), 1.0)
        edges: dict[tuple[int, int, str], float] = defaultdict(float)
        files = self.files

        def dirs(i: int) -> str:
            return files[i].rpartition("/")[0]

        for rel, name, plain, count in ref_rows:
            if plain and len(name) < MIN_PLAIN_NAME:
                continue  # i, x, db: locals far more often than uses of a definition
            targets = (top if plain else every).get(name)
            if not targets or len(targets) > MAX_DEFINERS:
                continue
            src = file_id(rel)
            w = math.sqrt(count)
            if not plain and name not in top:
                w *= MEMBER_EDGE
            if len(targets) > COMMON_PENALTY:
                w *= COMMON_PENALTY / len(targets)
            if name.startswith("_"):
                w *= PRIVATE_PENALTY
            if users[name] > ubiquitous:
                w *= ubiquitous / users[name]
            src_dir = dirs(src)
            for dst in targets:
                if dst != src:
                    # of several files defining a name, the neighbour is the likelier meaning
                    near = NEIGHBOUR_BOOST if len(targets) > 1 and dirs(dst) == src_dir else 1.0
                    edges[(src, dst, name)] += w * near
        n = self.n = len(self.files)
        out_w = [0.0] * n
        for (a, _, _), w in edges.items():
            out_w[a] += w
        pair: dict[tuple[int, int], float] = defaultdict(float)
        per_def: dict[tuple[int, str], tuple[list[int], list[float]]] = {}
        for (a, b, name), w in edges.items():
            wn = w / out_w[a]
            pair[(a, b)] += wn
            srcs, wts = per_def.setdefault((b, name), ([], []))
            srcs.append(a)
            wts.append(wn)
        # each file keeps its strongest edges (renormalised): the iteration's cost is then
        # bounded by files x MAX_OUT_EDGES whatever the fan-out of common names
        by_src: dict[int, list[tuple[float, int]]] = defaultdict(list)
        for (a, b), wn in pair.items():
            by_src[a].append((wn, b))
        self.in_srcs: list[list[int]] = [[] for _ in range(n)]
        self.in_wts: list[list[float]] = [[] for _ in range(n)]
        for a, outs in by_src.items():
            if len(outs) > MAX_OUT_EDGES:
                outs = sorted(outs, reverse=True)[:MAX_OUT_EDGES]
            total = sum(wn for wn, _ in outs)
            for wn, b in outs:
                self.in_srcs[b].append(a)
                self.in_wts[b].append(wn / total)
        self.in_get = [_getter(s) for s in self.in_srcs]
        self.dangling = [i for i in range(n) if out_w[i] == 0.0]
        self.def_in = [per_def.get((f, name)) for f, name, *_ in self.defs]
        self.def_get = [_getter(d[0]) if d else None for d in self.def_in]
        self.defs_per_file = [0] * n
        for f, *_ in self.defs:
            self.defs_per_file[f] += 1
        self.file_weight = [PERIPHERAL if peripheral(rel) else 1.0 for rel in self.files]
        # what a definition's score is multiplied by: its file, how many files define its name,
        # its kind, dunder or not
        self.def_weight = []
        defined = defaultdict(int)
        for _, name, *_ in self.defs:
            defined[name] += 1
        for f, name, kind, *_ in self.defs:
            w = self.file_weight[f] / defined[name]
            w *= KIND_WEIGHT.get(kind, 1.0)
            if name.startswith("__") and name.endswith("__"):
                w *= DUNDER
            self.def_weight.append(w)


def _getter(srcs: list[int]):
    # itemgetter returns a bare value for one index: wrap it so callers always get a tuple
    if not srcs:
        return lambda seq: ()
    if len(srcs) == 1:
        i = srcs[0]
        return lambda seq: (seq[i],)
    return operator.itemgetter(*srcs)


def _graph(index: CodeIndex) -> _Graph:
    gen = index.generation
    hit = index.derived.get("repomap")
    if hit is not None and hit[0] == gen:
        return hit[1]  # type: ignore[return-value]
    g = _Graph(index)
    index.derived["repomap"] = (gen, g)
    return g


def _pagerank(g: _Graph, personal: list[float]) -> list[float]:
    n, mul = g.n, operator.mul
    rank = list(personal)
    for _ in range(MAX_ITERATIONS):
        leak = DAMPING * sum(rank[i] for i in g.dangling)
        new = [0.0] * n
        for b in range(n):
            get = g.in_get[b]
            flow = sum(map(mul, get(rank), g.in_wts[b])) if g.in_srcs[b] else 0.0
            new[b] = DAMPING * flow + ((1 - DAMPING) + leak) * personal[b]
        delta = sum(abs(x - y) for x, y in zip(new, rank))
        rank = new
        if delta < TOLERANCE:
            break
    return rank


def repo_map(index: CodeIndex, *, paths: Iterable[Path | str] = (),
             mentions: Iterable[str] = (), max_tokens: int = 1024) -> RepoMapResult:
    """The files and definitions that matter most, toward `paths` (files the caller is working
    on) and `mentions` (identifiers it named), as `path:` lines with the definitions' first
    lines under them, within `max_tokens` (estimated)."""
    if not isinstance(max_tokens, int) or max_tokens < 16:
        raise IntelError("max_tokens must be an integer of at least 16")
    paths = list(paths)[:MAX_PATHS]
    mentioned = {m for m in list(mentions)[:MAX_MENTIONS] if isinstance(m, str) and m}
    g = _graph(index)
    n = g.n
    note = index.note()  # partial index or capped: the map says so too
    if n == 0:
        return RepoMapResult("", 0, 0, note=note or "nothing indexed")

    focus: set[int] = set()
    unknown = []
    for p in paths:
        rel = index.relative(p)
        if rel is not None and rel in g.fidx:
            focus.add(g.fidx[rel])
        else:
            unknown.append(str(p))
    for name in mentioned:
        focus.update(g.definers.get(name, ()))
    if focus:
        personal = [1.0 / len(focus) if i in focus else 0.0 for i in range(n)]
    else:
        total = sum(g.file_weight)
        personal = [w / total for w in g.file_weight]
    rank = _pagerank(g, personal)

    mul = operator.mul
    scored: list[tuple[float, int]] = []
    for k, (f, name, kind, line, sig, container) in enumerate(g.defs):
        inc = g.def_in[k]
        r = sum(map(mul, g.def_get[k](rank), inc[1])) if inc else 0.0
        # a small share of the file's own rank: a focused file's unreferenced definitions show
        r += rank[f] * 0.01 / g.defs_per_file[f]
        r *= g.def_weight[k]
        if name in mentioned:
            r = (r + rank[f]) * MENTION_BOOST
        scored.append((-r, k))
    scored.sort()
    ranked = []
    for neg, k in scored[: max_tokens]:  # each shown line costs at least one token
        f, name, kind, line, sig, container = g.defs[k]
        ranked.append(RankedSymbol(index.absolute(g.files[f]), name, kind, line, sig, container,
                                   -neg))

    text, shown = _fit(ranked, index, max_tokens)
    if unknown:
        extra = f"not in the index: {', '.join(unknown[:5])}"
        note = f"{note}; {extra}" if note else extra
    files: list[Path] = []
    for s in shown:
        if s.path not in files:
            files.append(s.path)
    return RepoMapResult(text=text, tokens=_tokens(text), chars=len(text), symbols=shown,
                         files=files, candidates=len(g.defs), note=note)


def _tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _render(symbols: list[RankedSymbol], index: CodeIndex) -> str:
    by_file: dict[Path, list[RankedSymbol]] = {}
    for s in symbols:  # files appear in the order of their best symbol
        by_file.setdefault(s.path, []).append(s)
    parts = []
    for path, syms in by_file.items():
        try:
            shown = path.relative_to(index.root).as_posix()
        except ValueError:
            shown = str(path)
        parts.append(f"{shown}:")
        for s in sorted(syms, key=lambda s: s.line):
            indent = "    " if s.container else "  "
            parts.append(f"{indent}{s.line}: {s.signature}")
    return "\n".join(parts) + ("\n" if parts else "")


def _fit(ranked: list[RankedSymbol], index: CodeIndex, max_tokens: int
         ) -> tuple[str, list[RankedSymbol]]:
    """The most top-ranked definitions whose rendering fits the budget (binary search)."""
    lo, hi = 0, min(len(ranked), max_tokens)  # every shown symbol costs at least a token
    best = ""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        text = _render(ranked[:mid], index)
        if _tokens(text) <= max_tokens:
            lo, best = mid, text
        else:
            hi = mid - 1
    if lo and not best:
        best = _render(ranked[:lo], index)
    return best, ranked[:lo]
