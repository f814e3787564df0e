"""Claude Code compatibility cases: the case table, the workspaces they run in, and the
normalisation that makes two runs comparable. Shared by the recorder
(`scripts/claude_code/record.py`, which runs the real Claude Code) and the replay test
(`tests/compat/test_claude_code.py`, which runs codebelt). Standard library only.

A case is one line of `tests/fixtures/claude_code/cases/<group>.jsonl`:

    {"id": "empty-file", "ws": "text", "calls": [["Read", {"file_path": "$WS/empty.txt"}]]}

`ws` names a workspace of `workspaces.json`; in inputs `$WS` is the workspace's absolute path,
`$TASK1`, `$TASK2` … the ids of the background tasks earlier calls of the case started, and
`$TASKOUT1` … their output files, `$CELL1` … the ids of notebook cells they inserted. Every
call's result is recorded and compared, and so is what
the calls left in the workspace.

What is normalised, and only that (everything else must match byte for byte):
- the workspace's absolute path → `$WS` (each run has its own temp directory);
- background task ids → `$TASK1` … in order of appearance, their output files → `$TASKOUT1` …
  (random in Claude Code, counters in codebelt; both live in a per-run temp directory), and
  the ids of inserted notebook cells → `$CELL1` … (random in both);
- paths in the run's private directories (Claude Code's config dir, where it saves an output
  too large to show; codebelt's session directory) → `$PRIVATE_FILE`;
- in codebelt's Grep content paging note, the total → `$TOTAL` (exact or a lower bound,
  depending on whether ripgrep finished before the page was full: timing);
- a text longer than 8,000 characters is kept as its sha256, length and both ends (compared as
  exactly as the whole text, but the fixtures stay small);
- image and PDF blocks → their media type and size (pixel dimensions for images), not their
  bytes (two encoders never produce the same bytes).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
CASES_DIR = FIXTURES / "cases"
GOLDENS_DIR = FIXTURES / "goldens"
FILES_DIR = FIXTURES / "files"
WORKSPACES_FILE = FIXTURES / "workspaces.json"
TOOLS_FILE = FIXTURES / "tools.json"
VERSION_FILE = FIXTURES / "VERSION"
PROFILES_DIR = Path(__file__).resolve().parents[2] / "src" / "codebelt" / "texts"
DEFAULT_PROFILE = "claude-code"
PROGRAM = "Claude Code"

# Fixed modification times: file i of a workspace is BASE_MTIME + 60·i seconds old-to-new, so
# "newest first" orders are the same on every machine and in every run.
BASE_MTIME = 1_700_000_000
SNAPSHOT_TEXT_BYTES = 4096
LONG_TEXT = 8000
SHOWN_ENDS = 600


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    workspace: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    why: str = ""

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"


# -- releases --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Release:
    """A recorded Claude Code release and the compat profile that follows it. The current one
    (the default profile, pinned by VERSION) lives at the top of the fixtures; an older one in
    a folder named by its version, with its goldens, tools.json, report.md and the cases of the
    tools only it had (`cases/`); each profile has its own differences table."""

    profile: str
    version: str
    folder: Path

    @property
    def default(self) -> bool:
        return self.profile == DEFAULT_PROFILE

    @property
    def goldens_dir(self) -> Path:
        return self.folder / "goldens"

    @property
    def tools_file(self) -> Path:
        return self.folder / "tools.json"

    @property
    def report_file(self) -> Path:
        return self.folder / "report.md"

    @property
    def differences_file(self) -> Path:
        name = "differences.json" if self.default else f"differences.{self.profile}.json"
        return Path(__file__).with_name(name)


def _profile_table(name: str) -> dict[str, Any]:
    import tomllib

    table = tomllib.loads((PROFILES_DIR / f"{name}.toml").read_text(encoding="utf-8")).get("profile", {})
    parent = table.get("extends")
    return {**(_profile_table(parent) if parent else {}), **table}


def releases() -> list[Release]:
    """Every Claude Code release a profile follows, the default profile's first."""
    out = []
    for path in sorted(PROFILES_DIR.glob("*.toml")):
        table = _profile_table(path.stem)
        if table.get("program") != PROGRAM:
            continue
        if path.stem == DEFAULT_PROFILE:
            out.insert(0, Release(path.stem, VERSION_FILE.read_text().strip(), FIXTURES))
        else:
            out.append(Release(path.stem, table["release"], FIXTURES / table["release"]))
    return out


def release(profile: str | None = None) -> Release:
    name = profile or DEFAULT_PROFILE
    for r in releases():
        if r.profile == name:
            return r
    raise ValueError(f"no Claude Code profile {name!r}; expected one of {', '.join(r.profile for r in releases())}")


def load_cases(groups: list[str] | None = None, release: Release | None = None) -> list[Case]:
    """The shared case table, and the cases of the release's own tools."""
    cases: list[Case] = []
    seen: set[str] = set()
    paths = sorted(CASES_DIR.glob("*.jsonl"))
    if release is not None and not release.default:
        paths += sorted((release.folder / "cases").glob("*.jsonl"))
    for path in paths:
        group = path.stem
        if groups and group not in groups:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            try:
                row = json.loads(line)
                case = Case(group, row["id"], row["ws"], tuple((c[0], c[1]) for c in row["calls"]), row.get("why", ""))
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise ValueError(f"{path.name}:{n}: not a case: {e}") from None
            if case.id in seen:
                raise ValueError(f"{path.name}:{n}: duplicate case id {case.id}")
            seen.add(case.id)
            cases.append(case)
    return cases


# -- workspaces ------------------------------------------------------------------------------------
def _workspaces() -> dict[str, Any]:
    return json.loads(WORKSPACES_FILE.read_text(encoding="utf-8"))


def _content(spec: Any) -> bytes:
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if "text" in spec:
        data = spec["text"].encode(spec.get("encoding", "utf-8"))
        return (b"\xef\xbb\xbf" if spec.get("bom") else b"") + data
    if "hex" in spec:
        return bytes.fromhex(spec["hex"])
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    if "repeat" in spec:
        return (spec["repeat"] * spec["times"]).encode(spec.get("encoding", "utf-8"))
    if "lines" in spec:
        fmt, eol = spec.get("format", "line {n}"), spec.get("eol", "\n")
        body = eol.join(fmt.format(n=i) for i in range(1, spec["lines"] + 1))
        return (body + (eol if spec.get("final_eol", True) else "")).encode("utf-8")
    if "fixture" in spec:
        return (FILES_DIR / spec["fixture"]).read_bytes()
    raise ValueError(f"unknown file spec {spec!r}")


def build_workspace(name: str, dest: Path, workspaces: dict[str, Any] | None = None) -> None:
    """Create workspace `name` (of workspaces.json, or of `workspaces`) in the empty directory
    `dest`, with fixed mtimes."""
    spec = (workspaces or _workspaces())[name]
    dest.mkdir(parents=True, exist_ok=True)
    if spec.get("git"):
        subprocess.run(["git", "init", "-q", str(dest)], check=True)
    dirs: set[Path] = set()
    for i, (rel, item) in enumerate(spec.get("files", {}).items(), 1):
        path = dest / rel
        mtime = BASE_MTIME + 60 * (item.get("mtime", i) if isinstance(item, dict) else i)
        if isinstance(item, dict) and item.get("dir"):
            path.mkdir(parents=True, exist_ok=True)
            dirs.add(path)
            os.utime(path, (mtime, mtime))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(item, dict) and "symlink" in item:
            os.symlink(item["symlink"], path)
            continue
        path.write_bytes(_content(item))
        if isinstance(item, dict) and "mode" in item:
            os.chmod(path, int(item["mode"], 8))
        os.utime(path, (mtime, mtime))
    # directories last (writing a file touches its parent)
    for path in sorted({p for p in dest.rglob("*") if p.is_dir() and ".git" not in p.parts} - dirs, reverse=True):
        os.utime(path, (BASE_MTIME, BASE_MTIME))


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root (not .git): path → sha256 of its bytes."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for f in filenames:
            p = Path(dirpath) / f
            if p.is_symlink():
                out[str(p.relative_to(root))] = "symlink:" + os.readlink(p)
                continue
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def changes(root: Path, before: dict[str, str]) -> dict[str, Any]:
    """What the calls changed: path → its new content (text when short UTF-8, else its
    sha256 and size), or None when it was removed."""
    after = snapshot(root)
    out: dict[str, Any] = {}
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel):
            continue
        if rel not in after:
            out[rel] = None
            continue
        data = (root / rel).read_bytes()
        try:
            text = data.decode("utf-8")
            out[rel] = text if len(data) <= SNAPSHOT_TEXT_BYTES else {"sha256": after[rel], "bytes": len(data)}
        except UnicodeDecodeError:
            out[rel] = {"sha256": after[rel], "bytes": len(data)}
    return out


# -- placeholders and normalisation ----------------------------------------------------------------
# how a background task is announced: "… in background with ID: X." / "… to the background (ID: X)"
_TASK_ID = re.compile(r"background(?: with)? \(?ID: ([A-Za-z0-9_-]+)")
_CELL_ID = re.compile(r"^Inserted cell ([A-Za-z0-9_-]+) with ")
_GREP_TOTAL = re.compile(r"(\(More results: )(?:more than )?\d+")
_WRITTEN_TO = re.compile(r"written to:? (/\S+)")
_TIMESTAMP = re.compile(r"<timestamp>[0-9T:.Z-]+</timestamp>")  # BashOutput's, in older releases
_PATH_TOKEN = re.compile(r"/[^\s'\"<>`]+")


@dataclass
class Placeholders:
    """What one run made up, learnt from its results in order: background task ids and their
    output files, ids of inserted notebook cells; and the run's private directories (where a
    tool saves what it did not show), whose paths differ by nature."""

    private: tuple[str, ...] = ()
    ids: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)

    def learn(self, text: str) -> None:
        for m in _TASK_ID.finditer(text):
            task_id = m.group(1)
            if task_id in self.ids:
                continue
            self.ids.append(task_id)
            output = ""
            after = text[m.end():]
            named = _WRITTEN_TO.search(after)  # "Output is being written to: PATH."
            for token in ([named.group(1)] if named else []) + _PATH_TOKEN.findall(after):
                token = token.rstrip(".,;:)")
                if named or task_id in token or token.endswith(".output"):
                    output = token
                    break
            self.outputs.append(output)
        m = _CELL_ID.match(text)
        if m and m.group(1) not in self.cells:
            self.cells.append(m.group(1))


def substitute(value: Any, ws: str, seen: Placeholders) -> Any:
    """Placeholders in a case's input → this run's values."""
    if isinstance(value, str):
        for i in range(len(seen.ids), 0, -1):  # $TASK10 before $TASK1
            value = value.replace(f"$TASKOUT{i}", seen.outputs[i - 1]).replace(f"$TASK{i}", seen.ids[i - 1])
        for i in range(len(seen.cells), 0, -1):
            value = value.replace(f"$CELL{i}", seen.cells[i - 1])
        return value.replace("$WS", ws)
    if isinstance(value, list):
        return [substitute(v, ws, seen) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ws, seen) for k, v in value.items()}
    return value


def _word(token: str) -> str:
    return rf"(?<![A-Za-z0-9_-]){re.escape(token)}(?![A-Za-z0-9_-])"


def normalise_text(text: str, ws: str, seen: Placeholders) -> str:
    for i in range(len(seen.ids), 0, -1):
        if seen.outputs[i - 1]:
            text = text.replace(seen.outputs[i - 1], f"$TASKOUT{i}")
        text = re.sub(_word(seen.ids[i - 1]), f"$TASK{i}", text)
    for i in range(len(seen.cells), 0, -1):
        text = re.sub(_word(seen.cells[i - 1]), f"$CELL{i}", text)
    real = os.path.realpath(ws)
    text = text.replace(ws, "$WS")
    if real != ws:
        text = text.replace(real, "$WS")
    # codebelt's Grep content paging note: the total is exact when ripgrep ran to the end and a
    # lower bound when it was stopped once the page was full — which happens first is timing
    text = _GREP_TOTAL.sub(r"\1$TOTAL", text)
    text = _TIMESTAMP.sub("<timestamp>$TIME</timestamp>", text)
    for private in seen.private:  # after the workspace, which may lie inside one
        text = re.sub(re.escape(private) + r"(?:/[^\s'\"<>`,]*)?", "$PRIVATE_FILE", text)
    return text


def normalise_files(files: dict[str, Any], ws: str, seen: Placeholders) -> dict[str, Any]:
    return {path: normalise_text(v, ws, seen) if isinstance(v, str) else v for path, v in files.items()}


def _image_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8 ":
            w, h = struct.unpack("<HH", data[26:30])
            return w & 0x3FFF, h & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if chunk == b"VP8X":
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        return None
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xC0, 0xC1, 0xC2):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
    return None


def _text_block(text: str) -> dict[str, Any]:
    """A text as stored: whole, or — past LONG_TEXT characters — its digest, length and both
    ends (still compared exactly, through the digest; the ends show what it is)."""
    if len(text) <= LONG_TEXT:
        return {"type": "text", "text": text}
    return {"type": "text", "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
            "chars": len(text), "head": text[:SHOWN_ENDS], "tail": text[-SHOWN_ENDS:]}


def normalise_block(block: Any, ws: str, tasks: Placeholders) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return _text_block(normalise_text(block.get("text", ""), ws, tasks))
    if kind in ("image", "document"):
        source = block.get("source") or {}
        out: dict[str, Any] = {"type": kind, "media_type": source.get("media_type")}
        if source.get("type") == "base64":
            data = base64.b64decode(source.get("data", ""))
            if kind == "image":
                size = _image_size(data)
                out["size"] = list(size) if size else None
            else:
                out["bytes"] = len(data)
        return out
    if kind == "tool_result":
        content = block.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        return {
            "type": "tool_result",
            "content": [normalise_block(b, ws, tasks) for b in blocks],
            "is_error": bool(block.get("is_error")),
        }
    if kind == "system":  # a system turn the harness added after the result
        return {"type": "system", "content": [normalise_block(b, ws, tasks) for b in block.get("content") or []]}
    return {k: v for k, v in block.items() if k not in ("tool_use_id", "id")}


_NOTIFICATION = re.compile(r"\n\n(<task-notification>.*</task-notification>)\Z", re.S)


def _split_notifications(block: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """codebelt puts the <task-notification> of a task that ended at the end of the next result
    (a tool layer has no turn of its own); Claude Code sends it as a system turn. Either way it
    is not the tool's result: it goes with the blocks compared apart."""
    content = block.get("content")
    if not isinstance(content, list) or not content or content[0].get("type") != "text":
        return block, []
    m = _NOTIFICATION.search(content[0].get("text", ""))
    if not m:
        return block, []
    first = {**content[0], "text": content[0]["text"][:m.start()]}
    return {**block, "content": [first, *content[1:]]}, [{"type": "text", "text": m.group(1)}]


# Claude Code 1.0 told the model about background shells in reminders it attached to the next
# results ("Background Bash ID (command: …) (status: …) …"); codebelt (older profile) tells it
# once, when the shell ended. Like the <task-notification> above they are the conversation's,
# not the tool's, and when they come is a matter of timing: they are compared apart.
_SHELL_REMINDER = re.compile(r"(?:\A|\n\n)<system-reminder>\nBackground Bash [^\n]*\n</system-reminder>\Z")


def without_shell_reminders(result: Any) -> Any:
    """A tool_result without the background-shell reminders at the end of its first text."""
    if not isinstance(result, dict) or not isinstance(result.get("content"), list) or not result["content"]:
        return result
    first = result["content"][0]
    if first.get("type") != "text" or not isinstance(first.get("text"), str):  # (a long text is kept as a digest)
        return result
    text = first["text"]
    while (m := _SHELL_REMINDER.search(text)) is not None:
        text = text[:m.start()]
    if text == first.get("text"):
        return result
    return {**result, "content": [{**first, "text": text}, *result["content"][1:]]}


def result_of(reply: list[Any], ws: str, tasks: Placeholders) -> dict[str, Any]:
    """From the user message answering one tool_use: its normalised tool_result, and the other
    blocks the harness put next to it (reminders, notifications)."""
    result = None
    extra = []
    split: list[Any] = []
    for block in reply:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            block, notes = _split_notifications(block)
            split += [block, *notes]
        else:
            split.append(block)
    for block in split:
        if isinstance(block, dict) and block.get("type") == "tool_result" and result is None:
            # task ids first: normalising needs them
            for b in ([{"text": block["content"]}] if isinstance(block.get("content"), str) else block.get("content") or []):
                if isinstance(b, dict) and isinstance(b.get("text"), str):
                    tasks.learn(b["text"])
            result = normalise_block(block, ws, tasks)
        else:
            extra.append(normalise_block(block, ws, tasks))
    out: dict[str, Any] = {"result": result}
    if extra:
        out["extra"] = extra
    return out


def golden_path(group: str, release: Release | None = None) -> Path:
    return (release.goldens_dir if release is not None else GOLDENS_DIR) / f"{group}.json"


def load_goldens(group: str, release: Release | None = None) -> dict[str, Any]:
    path = golden_path(group, release)
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["cases"]
