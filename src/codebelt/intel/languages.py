"""Which tree-sitter grammar reads which file, and the grammar, parser and tags query per
language.

Grammars come from `tree-sitter-language-pack` 0.13 (bundled in its wheel; 1.x fetches grammars
at run time, which fails offline). A tree-sitter `Parser` is not thread-safe, so parsers are
kept one per thread; `Language` and `Query` objects are immutable and shared.

Every parse is bounded in time (`parse`): a grammar's worst case is not linear (code followed by
8,000 comment lines takes tree-sitter-python 5 s, 16,000 about four times that), and a parse
holds the interpreter, so one hostile file would stop every thread of a session. The source is
handed to the parser in chunks by a callback that ends the input once the budget is spent. The
budget is the parsing thread's CPU time, so that a loaded machine, which deschedules the thread,
does not make an ordinary file "too slow"; a wall-clock bound many times larger stays for a parse
that makes no progress at all.
"""

from __future__ import annotations

import os
import threading
import time
from functools import lru_cache
from importlib import resources
from pathlib import Path, PurePath

from tree_sitter import Language, Parser, Query, Tree

from ..errors import ParseTooSlow, UnknownLanguage

PARSE_BUDGET_S = 2.0  # CPU seconds of the parsing thread; a 10,000-line file takes ~0.1 s
PARSE_WALL_S = 30.0  # wall-clock seconds, whatever the load
_CHUNK = 64 * 1024
_TEXT_CHUNK = 256

# extension (lower case, with the dot) -> language name in tree-sitter-language-pack
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp",
    ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash",
}
# whole file names that carry no telling extension
FILENAMES: dict[str, str] = {
    "Rakefile": "ruby", "Gemfile": "ruby", ".bashrc": "bash", ".bash_profile": "bash",
    ".profile": "bash",
}
LANGUAGES: tuple[str, ...] = tuple(sorted(set(EXTENSIONS.values()) | set(FILENAMES.values())))


def language_for(path: PurePath | str) -> str | None:
    """The language of a file judged by its name, or None when no grammar here reads it."""
    # string slicing, not PurePath: this runs once per listed file
    name = os.path.basename(os.fspath(path))
    dot = name.rfind(".")
    return FILENAMES.get(name) or (EXTENSIONS.get(name[dot:].lower()) if dot > 0 else None)


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise UnknownLanguage(
            f"no tree-sitter grammar for language {language!r}; known: {', '.join(LANGUAGES)}"
        )
    return language


@lru_cache(maxsize=None)
def grammar(language: str) -> Language:
    from tree_sitter_language_pack import get_language

    return get_language(check_language(language))  # type: ignore[arg-type]


_local = threading.local()


def parser(language: str) -> Parser:
    """This thread's parser for `language` (created on first use)."""
    cache: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    p = cache.get(language)
    if p is None:
        p = cache[language] = Parser(grammar(language))
    return p


def parse(language: str, data: bytes, budget_s: float | None = None) -> Tree:
    """`data` parsed as `language` by this thread's parser, within `budget_s` seconds of this
    thread's CPU time (PARSE_BUDGET_S by default) and PARSE_WALL_S of wall-clock time;
    ParseTooSlow past either."""
    budget_s = PARSE_BUDGET_S if budget_s is None else budget_s
    cpu_deadline = time.thread_time() + budget_s
    wall_deadline = time.monotonic() + max(PARSE_WALL_S, budget_s)
    over: str | None = None
    parsing = True

    def read(offset: int, _point: object) -> bytes:
        nonlocal over
        if not parsing:
            # The tree reads a node's `.text` through here once parsed, a call per chunk: a
            # small chunk, or every identifier's text would copy 64 KB; and no deadline, or
            # text read two seconds after the parse would come back empty.
            return data[offset:offset + _TEXT_CHUNK]
        if over is None:
            if time.thread_time() > cpu_deadline:
                over = f"longer than {budget_s:g} s of CPU time (a worst case of the {language} grammar)"
            elif time.monotonic() > wall_deadline:
                over = f"longer than {max(PARSE_WALL_S, budget_s):g} s (the machine too busy to parse it)"
        if over is not None:
            return b""  # the end of the input: the parser finishes at once
        return data[offset:offset + _CHUNK]

    tree = parser(language).parse(read)
    parsing = False
    if over is not None:
        raise ParseTooSlow(f"parsing this file took {over}; it is skipped")
    return tree


def query_source(language: str) -> str:
    check_language(language)
    return (resources.files(__package__) / "queries" / f"{language}.scm").read_text("utf-8")


@lru_cache(maxsize=None)
def tags_query(language: str) -> Query:
    """The compiled tags query: `@definition.KIND` / `@reference.KIND` around a `@name`."""
    return Query(grammar(language), query_source(language))


def queries_dir() -> Path:
    return Path(str(resources.files(__package__) / "queries"))
