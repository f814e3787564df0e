"""Regular expressions that come from outside codebelt — a model's `filter`, a hook `matcher` in a
settings file, a permission rule — run in time linear in their input.

Python's `re` backtracks: `(a+)+$` against 30 `a`s and a `!` takes minutes, and in the MCP server
that freezes every client. Here every such pattern runs on RE2 (`google-re2`), whose automata
never backtrack, so a search costs O(pattern × text) at worst.

The pattern language is Python's, because that is what callers are told to write: the pattern
is first checked by `re` (its error messages), then rewritten where RE2 reads the same text
differently — `\\d \\w \\s` and their negations keep Python's Unicode meaning, `\\Z` is RE2's
`\\z`, `\\uXXXX`/`\\N{name}`/octal escapes become `\\x{…}`, `{,n}` is `{0,n}`, a `[` inside a class
is a literal as in Python (RE2 would read `[[:alpha:]]` as a POSIX class). What RE2 cannot run at
all (backreferences, lookahead and lookbehind, atomic groups, possessive quantifiers,
conditionals, verbose mode) is refused with a message that says so; a repetition count over 1000
or a program too large for the memory budget is refused too.

Known differences that remain: `\\b`/`\\B` are ASCII word boundaries, and `$` matches only at the
very end (Python also matches before a final newline); `\\W`/`\\S` inside a class are ASCII.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import warnings
from typing import Any

from .errors import RegexError

__all__ = ["LinearPattern", "compile", "RegexError"]

# RE2 compiles a pattern into a program within this much memory (a larger one is refused); the
# search's DFA cache lives in the same budget. `\w{600}` (a Unicode class) takes about 13 MB.
MAX_PROGRAM_BYTES = 16 << 20
# Compiled patterns are reused; only small programs are kept, so the cache stays small too.
_CACHE_ENTRIES = 256
_CACHE_PROGRAM_SIZE = 20_000

# Python's `\s` for str patterns (str.isspace), as an RE2 class body.
_SPACE = r"\t\n\v\f\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_WORD = r"\p{L}\p{N}_"  # Python's `\w`: str.isalnum() or "_"
_OCTAL = re.compile(r"0[0-7]{0,2}|[0-7]{3}")
_REPEAT_NO_MIN = re.compile(r"\{,(\d*)\}")
_VERBOSE = re.compile(r"\(\?[aiLmsux-]*x")
_GLOBAL_FLAGS = re.compile(r"(?:\(\?([aimsu]+)\))+")

# RE2's `invalid perl operator` → the Python construct it was, for the message.
_UNSUPPORTED = [
    ("(?=", "a lookahead (?=…)"),
    ("(?!", "a negative lookahead (?!…)"),
    ("(?<=", "a lookbehind (?<=…)"),
    ("(?<!", "a negative lookbehind (?<!…)"),
    ("(?>", "an atomic group (?>…)"),
    ("(?(", "a conditional group (?(…)…)"),
]


def _hex(code: int) -> str:
    return f"\\x{{{code:x}}}"


def _translate(pattern: str, ascii_classes: bool) -> str:
    """Python syntax → RE2 syntax with the same meaning (the pattern is valid for `re`)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = -1  # index just after `[` or `[^`: a `]` there is a literal
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            i += 2
            if e in "dDwWsS" and not ascii_classes:
                out.append(_class_escape(e, in_class))
            elif e == "Z":
                out.append(r"\z")
            elif e == "b" and in_class:
                out.append(r"\x08")  # backspace inside a class, as in Python
            elif e == "u":
                out.append(_hex(int(pattern[i:i + 4], 16)))
                i += 4
            elif e == "U":
                out.append(_hex(int(pattern[i:i + 8], 16)))
                i += 8
            elif e == "N":
                end = pattern.index("}", i)
                out.append(_hex(ord(unicodedata.lookup(pattern[i + 1:end]))))
                i = end + 1
            elif e.isdigit():
                m = _OCTAL.match(pattern, i - 1)
                if m:  # octal escape; anything else with digits is a backreference (refused below)
                    out.append(_hex(int(m.group(), 8)))
                    i = m.end()
                else:
                    out.append("\\" + e)
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]" and i != class_start:
                in_class = False
                out.append(c)
            elif c == "[":
                out.append(r"\[")
            else:
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            out.append(pattern[i:j])
            class_start = j
            i = j
            continue
        if c == "{":
            m = _REPEAT_NO_MIN.match(pattern, i)
            if m and m.group(1) and out and out[-1] not in ("(", "|"):
                out.append("{0," + m.group(1) + "}")
                i = m.end()
                continue
        if pattern.startswith("(?#", i):  # a comment
            i = pattern.index(")", i) + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _class_escape(e: str, in_class: bool) -> str:
    body = {"d": r"\p{Nd}", "w": _WORD, "s": _SPACE}[e.lower()]
    if e == "d":
        return body
    if e == "D":
        return r"\P{Nd}"
    if e.islower():
        return body if in_class else f"[{body}]"
    # \W, \S: a negated set cannot be spliced into another class; RE2's ASCII one is used there.
    return "\\" + e if in_class else f"[^{body}]"


def _refusal(pattern: str, why: str) -> RegexError:
    if why.startswith("invalid perl operator: "):
        op = why.split(": ", 1)[1]
        if op == "(?P" and "(?P=" in pattern:
            return _unsupported(pattern, "a named backreference (?P=name)")
        for needle, what in _UNSUPPORTED:
            if op.startswith(needle):
                return _unsupported(pattern, what)
    if re.fullmatch(r"invalid escape sequence: \\\d+", why):
        return _unsupported(pattern, "a backreference (\\1)")
    if why.startswith("bad repetition operator: ") and why.endswith("+"):
        return _unsupported(pattern, "a possessive quantifier (*+, ++, ?+)")
    if why.startswith("invalid repetition size"):
        return RegexError(
            f"The regular expression {_show(pattern)} repeats something more than 1000 times "
            f"(nested counts multiply; {why}); write smaller counts, or match a shorter run.")
    if "too large" in why or "too big" in why:
        return RegexError(
            f"The regular expression {_show(pattern)} is too large to run ({why}): its repetitions "
            "multiply into a program over the memory budget. Use smaller repetition counts.")
    return RegexError(f"The regular expression {_show(pattern)} cannot be used: {why}.")


def _unsupported(pattern: str, what: str) -> RegexError:
    return RegexError(
        f"The regular expression {_show(pattern)} uses {what}, which codebelt does not run: its "
        "regex engine (RE2) never backtracks, so no pattern can hang it, and so it has no "
        "backreferences, lookaround, atomic groups, possessive quantifiers or conditionals. "
        "Rewrite the pattern without it (e.g. match a little more text instead of a lookaround).")


def _show(pattern: str, limit: int = 120) -> str:
    shown = pattern if len(pattern) <= limit else pattern[:limit] + "…"
    return "`" + shown.replace("\n", "\\n").replace("\r", "\\r") + "`"


class LinearPattern:
    """A compiled pattern: `search`, `match`, `fullmatch` as in `re` (returning RE2's match
    objects), and `matching_lines` for many lines at once."""

    __slots__ = ("pattern", "_re", "_multiline")

    def __init__(self, pattern: str, compiled: Any, multiline: Any | None):
        self.pattern = pattern
        self._re = compiled
        self._multiline = multiline

    @property
    def program_size(self) -> int:
        return self._re.programsize

    def search(self, text: str) -> Any:
        return self._re.search(_utf8_safe(text))

    def match(self, text: str) -> Any:
        return self._re.match(_utf8_safe(text))

    def fullmatch(self, text: str) -> Any:
        return self._re.fullmatch(_utf8_safe(text))

    def matching_lines(self, blob: bytes) -> list[tuple[int, int]]:
        """(start, end) byte spans, without the newline, of the lines of `blob` (valid UTF-8,
        lines separated by b"\\n") that the pattern finds a match in, as `search` would on each
        line alone. One scan of the whole blob finds candidates; only those lines are checked
        on their own, so the cost stays linear however many lines there are."""
        spans: list[tuple[int, int]] = []
        n = len(blob)
        if self._multiline is None:  # anchors tied to the whole text: line by line
            pos = 0
            while pos <= n:
                end = blob.find(b"\n", pos)
                end = n if end < 0 else end
                if self._re.search(blob[pos:end]) is not None:
                    spans.append((pos, end))
                pos = end + 1
            return spans
        pos = 0
        while pos <= n:
            m = self._multiline.search(blob, pos)
            if m is None:
                break
            start = blob.rfind(b"\n", 0, m.start()) + 1
            if start < pos:
                start = pos
            end = blob.find(b"\n", start)
            end = n if end < 0 else end
            if self._re.search(blob[start:end]) is not None:
                spans.append((start, end))
            pos = end + 1
        return spans


def _utf8_safe(text: str) -> str:
    """RE2 reads UTF-8: a lone surrogate (from a JSON `\\udc80`) becomes U+FFFD instead of an error."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def compile(pattern: str, flags: int = 0) -> LinearPattern:  # noqa: A001 - the `re` name, on purpose
    """Compile a Python-syntax pattern (flags: re.IGNORECASE, re.DOTALL, re.MULTILINE, re.ASCII)
    for linear-time matching, or raise RegexError saying why it cannot run."""
    if not isinstance(pattern, str):
        raise RegexError(f"a regular expression must be text, not {type(pattern).__name__}")
    key = (pattern, flags)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None:
        return hit
    compiled = _compile(pattern, flags)
    if compiled.program_size <= _CACHE_PROGRAM_SIZE:
        with _cache_lock:
            if len(_cache) >= _CACHE_ENTRIES:
                _cache.pop(next(iter(_cache)))
            _cache[key] = compiled
    return compiled


_cache: dict[tuple[str, int], LinearPattern] = {}
_cache_lock = threading.Lock()


def _compile(pattern: str, flags: int) -> LinearPattern:
    try:
        with warnings.catch_warnings():  # "possible nested set": the translation keeps Python's reading
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern, flags)
    except re.error as e:
        raise RegexError(f"Invalid regular expression {_show(pattern)}: {e}.") from None
    except (RecursionError, OverflowError, MemoryError):
        raise RegexError(f"The regular expression {_show(pattern)} is nested too deeply or too large to use.") from None
    if flags & re.VERBOSE or _VERBOSE.search(pattern):
        raise _unsupported(pattern, "verbose mode (?x)")
    # Python's global flags lead the pattern: ASCII changes how classes are translated, and
    # Unicode is the default for text patterns anyway; the rest is prefixed again below.
    body = pattern
    m = _GLOBAL_FLAGS.match(body)
    if m:
        letters = m.group(0)
        flags |= (re.ASCII if "a" in letters else 0) | (re.IGNORECASE if "i" in letters else 0) \
            | (re.MULTILINE if "m" in letters else 0) | (re.DOTALL if "s" in letters else 0)
        body = body[m.end():]
    ascii_classes = bool(flags & re.ASCII)
    try:
        translated = _translate(body, ascii_classes)
    except (ValueError, KeyError, IndexError):  # an escape `re` accepted and we could not map
        raise RegexError(f"The regular expression {_show(pattern)} uses an escape codebelt cannot translate.") from None
    prefix = "".join(f for flag, f in ((re.IGNORECASE, "i"), (re.DOTALL, "s"), (re.MULTILINE, "m")) if flags & flag)
    if prefix:
        translated = f"(?{prefix}){translated}"
    import re2

    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        compiled = re2.compile(translated, options)
    except re2.error as e:
        why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise _refusal(pattern, why) from None
    # For many lines at once: the same pattern with ^ and $ at line ends finds every line that
    # matches alone (and perhaps a few more, checked one by one). Not when the pattern pins the
    # whole text (\A, \z) or turns multi-line mode off somewhere.
    multiline = None
    if not re.search(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m", translated):
        try:
            multiline = re2.compile(f"(?m){translated}", options)
        except re2.error:
            multiline = None
    return LinearPattern(pattern, compiled, multiline)
