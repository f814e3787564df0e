"""Codex compatibility cases: the case table, the workspaces, and the normalisation that makes
a real Codex run and a codebelt run comparable. Shared by the recorder
(`scripts/codex/record.py`, which drives the real `codex exec`) and the replay test
(`tests/compat/test_codex.py`, which runs codebelt's Codex profile). Standard library only;
workspaces, snapshots and text blocks come from the Claude Code harness.

A case is one line of `tests/fixtures/codex/cases/<group>.jsonl`:

    {"id": "echo", "ws": "plain", "calls": [["exec_command", {"cmd": "echo hi"}]]}

A call's input is the function call's arguments (an object), or for the freeform
`apply_patch` tool the raw patch (a string). In inputs `$WS` is the workspace's absolute
path and `$SESSION1`, `$SESSION2` … the ids of the exec sessions earlier calls of the case left
running (a string that is exactly a placeholder becomes the number).

What is normalised, and only that:
- the workspace's path → `$WS` (and its parent, the run's own directory, → `$WS/..`);
- `Chunk ID: <hex>` → `Chunk ID: $CHUNK` and `Wall time: <s> seconds` → `Wall time: $WALL
  seconds` (random and timing);
- exec session ids → `$SESSION1` … in order of appearance (random in Codex, counters here);
- image parts → their media type and pixel size; texts past 8,000 characters → digest and ends.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.compat import harness

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
CASES_DIR = FIXTURES / "cases"
GOLDENS_DIR = FIXTURES / "goldens"
WORKSPACES_FILE = FIXTURES / "workspaces.json"
TOOLS_FILE = FIXTURES / "tools.json"
VERSION_FILE = FIXTURES / "VERSION"
DIFFERENCES_FILE = Path(__file__).resolve().parent / "codex_differences.json"

CUSTOM_TOOLS = ("apply_patch",)  # freeform tools: the input is the raw text

_SESSION = re.compile(r"session ID (\d+)")
_CHUNK = re.compile(r"^Chunk ID: [0-9a-f]+$", re.M)
_WALL = re.compile(r"^Wall time: \d+(?:\.\d+)? seconds$", re.M)


@dataclass(frozen=True)
class Case:
    group: str
    name: str
    workspace: str
    calls: tuple[tuple[str, Any], ...]
    why: str = ""

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"


def load_cases(groups: list[str] | None = None) -> list[Case]:
    cases: list[Case] = []
    for path in sorted(CASES_DIR.glob("*.jsonl")):
        if groups and path.stem not in groups:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            raw = json.loads(line)
            cases.append(Case(path.stem, raw["id"], raw["ws"], tuple((c[0], c[1]) for c in raw["calls"]),
                              raw.get("why", "")))
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


def workspaces() -> dict[str, Any]:
    return json.loads(WORKSPACES_FILE.read_text(encoding="utf-8"))


def build_workspace(name: str, dest: Path) -> None:
    harness.build_workspace(name, dest, workspaces())


@dataclass
class Sessions:
    """Exec session ids in order of appearance."""

    ids: list[str] = field(default_factory=list)

    def learn(self, text: str) -> None:
        for m in _SESSION.finditer(text):
            if m.group(1) not in self.ids:
                self.ids.append(m.group(1))


def substitute(value: Any, ws: str, seen: Sessions) -> Any:
    if isinstance(value, str):
        for i in range(len(seen.ids), 0, -1):
            if value == f"$SESSION{i}":
                return int(seen.ids[i - 1])
            value = value.replace(f"$SESSION{i}", seen.ids[i - 1])
        return value.replace("$WS", ws)
    if isinstance(value, list):
        return [substitute(v, ws, seen) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, ws, seen) for k, v in value.items()}
    return value


def normalise_text(text: str, ws: str, seen: Sessions) -> str:
    seen.learn(text)
    for i in range(len(seen.ids), 0, -1):
        text = re.sub(rf"(?<![0-9]){seen.ids[i - 1]}(?![0-9])", f"$SESSION{i}", text)
    text = _CHUNK.sub("Chunk ID: $CHUNK", text)
    text = _WALL.sub("Wall time: $WALL seconds", text)
    real = str(Path(ws).resolve())
    text = text.replace(ws, "$WS")
    if real != ws:
        text = text.replace(real, "$WS")
    return text.replace(str(Path(real).parent) + "/", "$WS/../")  # the run's own directory


def normalise_output(output: Any, ws: str, seen: Sessions) -> Any:
    """A function_call_output's `output` (text, or a list of content parts) as stored."""
    if isinstance(output, str):
        return harness._text_block(normalise_text(output, ws, seen))
    if isinstance(output, list):
        parts = []
        for part in output:
            if not isinstance(part, dict):
                parts.append(part)
            elif part.get("type") == "input_image":
                url = str(part.get("image_url", ""))
                media, _, data = url.partition(";base64,")
                size = harness._image_size(base64.b64decode(data)) if data else None
                parts.append({"type": "input_image", "media_type": media.removeprefix("data:"),
                              "size": list(size) if size else None,
                              **({"detail": part["detail"]} if "detail" in part else {})})
            elif part.get("type") in ("input_text", "output_text"):
                parts.append({**part, "text": normalise_text(part.get("text", ""), ws, seen)})
            else:
                parts.append(part)
        return parts
    return output


def golden_path(group: str) -> Path:
    return GOLDENS_DIR / f"{group}.json"


def load_goldens(group: str) -> dict[str, Any]:
    path = golden_path(group)
    return json.loads(path.read_text(encoding="utf-8"))["cases"] if path.exists() else {}


def load_differences() -> dict[str, Any]:
    return json.loads(DIFFERENCES_FILE.read_text(encoding="utf-8")) if DIFFERENCES_FILE.exists() else {}
