"""What Codex's tools share: their exec sessions, the texts a Codex-trained model reads, and the
way Codex words a bad input. The tools themselves (exec_command, write_stdin, codex_patch,
view_image, update_plan) are faces on codebelt's engines — the same TaskManager, terminal,
sandbox, patch engine and permission requests as the Claude Code-shaped tools.

The texts are Codex's current release as recorded by scripts/codex/record.py
(tests/fixtures/codex/), kept as data in texts/codex.toml and rendered by the session's texts;
docs/compat.md lists where codebelt deliberately differs.
"""

from __future__ import annotations

import json
import random
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import ConfigDict, ValidationError

from ..errors import ShellError
from ..shell.execution.pty_session import Pty
from ..shell.execution.spool import read_range
from ..shell.execution.tasks import Task, TaskManager
from ..texts import Texts
from ..texts import load as load_texts
from ..tool import Tool, ToolContext, ToolError, ToolInput
from ._services import task_manager

# What Codex sets for every command it runs, so none colours, pages or asks for a terminal type.
CODEX_ENV = {"NO_COLOR": "1", "TERM": "dumb", "LANG": "C.UTF-8", "LC_CTYPE": "C.UTF-8", "LC_ALL": "C.UTF-8",
             "COLORTERM": "", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat"}
DEFAULT_MAX_OUTPUT_TOKENS = 10_000
OUTPUT_CAP_BYTES = 1 << 20  # new output read per call at most (a flood is cut in the middle)


def codex_texts(ctx: ToolContext | None = None) -> Texts:
    """The texts the codex tools speak: the session's (its profile is codex's) — or, for a codex
    tool in a session of another profile, or asked outside any call, codex.toml's."""
    texts = ctx.texts if ctx is not None else None
    return texts if texts is not None and texts.has("exec_command.chunk") else load_texts("codex")


class CodexInput(ToolInput):
    """Codex ignores arguments it does not know."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# -- bad input, as Codex's argument parser words it ------------------------------------------------
class CodexTool(Tool):
    """A tool of the codex profile: its input schema is Codex's own, recorded whole (`schema`),
    and bad input is answered as Codex words it."""

    profile: ClassVar[str] = "codex"
    schema: ClassVar[dict[str, Any]]

    @classmethod
    def input_schema(cls, texts: object = None) -> dict[str, Any]:
        return cls.schema

    def input_error(self, raw: dict[str, Any], error: ValidationError) -> str:
        return parse_error(raw, error)


def _json_kind(texts: Texts, value: Any) -> str:
    """serde's words for the JSON value it was given."""
    if isinstance(value, bool):
        kind, shown = "boolean", json.dumps(value)
    elif isinstance(value, int):
        kind, shown = "integer", str(value)
    elif isinstance(value, float):
        kind, shown = "float", str(value)
    elif isinstance(value, str):
        kind, shown = "string", json.dumps(value)
    else:
        kind, shown = {list: "sequence", dict: "map"}.get(type(value), "null"), ""
    return texts(f"arguments.given_{kind}", value=shown)


def _expected(texts: Texts, error_type: str) -> str:
    """serde's name for the type pydantic's error type stands for."""
    names = texts.value("arguments.expected", {})
    return names.get(error_type) or texts("arguments.expected_other")


def _position(raw: dict[str, Any], loc: tuple[Any, ...], missing: bool) -> int:
    """The column (1-based, one line) where serde stops reading `raw` as JSON text: after the
    bad value, or at the end of the object a field is missing from."""
    text = json.dumps(raw)
    if missing:
        loc = loc[:-1]
    if not loc:
        return len(text)
    # serialise again, noting where each path ends
    ends: dict[tuple[Any, ...], int] = {}

    def walk(value: Any, path: tuple[Any, ...], out: list[str]) -> None:
        if isinstance(value, dict):
            out.append("{")
            for i, (k, v) in enumerate(value.items()):
                if i:
                    out.append(", ")
                out.append(json.dumps(k) + ": ")
                walk(v, (*path, k), out)
            out.append("}")
        elif isinstance(value, list):
            out.append("[")
            for i, v in enumerate(value):
                if i:
                    out.append(", ")
                walk(v, (*path, i), out)
            out.append("]")
        else:
            out.append(json.dumps(value))
        ends[path] = sum(map(len, out))

    walk(raw, (), [])
    return ends.get(tuple(loc), len(text))


def parse_error(raw: dict[str, Any], error: ValidationError) -> str:
    """Codex's "failed to parse function arguments: …" for the first problem pydantic found."""
    texts = codex_texts()
    e = error.errors()[0]
    loc = tuple(e.get("loc") or ())
    kind = e.get("type", "")
    if kind == "missing":
        what, missing = texts("arguments.missing", name=loc[-1]), True
    elif kind in ("literal_error", "enum"):
        options = (e.get("ctx") or {}).get("expected", "")
        names = ", ".join(f"`{o.strip()}`" for o in str(options).replace("'", "").replace(" or ", ", ").split(","))
        what, missing = texts("arguments.unknown_variant", given=e.get("input"), options=names), False
    else:
        what = texts("arguments.invalid_type", given=_json_kind(texts, e.get("input")), expected=_expected(texts, kind))
        missing = False
    return texts("arguments.parse_error", what=what, column=_position(raw, loc, missing))


# -- exec sessions ----------------------------------------------------------------------------------
@dataclass
class ExecSessions:
    """The numbered sessions of exec_command that are still running, over the TaskManager's
    tasks (Codex numbers them at random; so does this)."""

    manager: TaskManager
    ids: dict[int, str] = field(default_factory=dict)  # session id → task id
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, task_id: str) -> int:
        with self.lock:
            while True:
                number = random.randint(1000, 99_999)
                if number not in self.ids:
                    self.ids[number] = task_id
                    return number

    def get(self, number: int) -> Task | None:
        with self.lock:
            task_id = self.ids.get(number)
        if task_id is None:
            return None
        try:
            return self.manager.get(task_id)
        except KeyError:
            return None

    def drop(self, number: int) -> None:
        with self.lock:
            self.ids.pop(number, None)

    def close(self) -> None:
        pass  # the TaskManager ends the processes


def exec_sessions(ctx: ToolContext) -> ExecSessions:
    return ExecSessions(ctx.service(task_manager))


# -- output, as Codex shows it ----------------------------------------------------------------------
def approx_tokens(n_bytes: int) -> int:
    return (n_bytes + 3) // 4


def truncate(texts: Texts, text: str, original_tokens: int, max_tokens: int) -> str:
    """Codex's token budget: the first and last half of `max_tokens`·4 bytes, the middle replaced
    by how many tokens were left out, after a warning with the totals."""
    data = text.encode("utf-8")
    if approx_tokens(len(data)) <= max_tokens and original_tokens <= max_tokens:
        return text
    budget = max(0, max_tokens) * 4
    head_n = budget // 2
    tail_n = budget - head_n
    head = data[:head_n].decode("utf-8", "ignore")
    tail = data[len(data) - tail_n:].decode("utf-8", "ignore") if tail_n else ""
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    removed = max(0, original_tokens - max_tokens)
    return texts("exec_command.truncated", tokens=original_tokens, lines=lines, head=head, removed=removed, tail=tail)


def chunk_text(texts: Texts, *, wall_s: float, exit_code: int | None, session: int | None, raw_bytes: int,
               output: str, max_tokens: int) -> str:
    tokens = approx_tokens(raw_bytes)
    status = (texts("exec_command.exited", code=exit_code) if session is None
              else texts("exec_command.running", session=session))
    return texts("exec_command.chunk", chunk=secrets.token_hex(3), wall=wall_s, status=status, tokens=tokens,
                 output=truncate(texts, output, tokens, max_tokens))


def read_new(manager: TaskManager, task: Task, size: int) -> tuple[str, int]:
    """The output of `task` since the last read, up to byte `size`: (text, raw bytes). A
    terminal's output is rendered; a pipe's is decoded as it is."""
    start = task.reader.offset
    raw = max(0, size - start)
    if task.io is not None and task.io.tty:
        text, _ = manager.read_to(task, size, OUTPUT_CAP_BYTES)
        return text, raw
    end = size
    if raw > OUTPUT_CAP_BYTES:  # a flood: its start and end
        half = OUTPUT_CAP_BYTES // 2
        text = (read_range(task.output_path, start, start + half).decode("utf-8", "replace") + "\n…\n"
                + read_range(task.output_path, end - half, end).decode("utf-8", "replace"))
    else:
        text = read_range(task.output_path, start, end).decode("utf-8", "replace")
    task.reader.offset = end
    return text, raw


def finish(ctx: ToolContext, sessions: ExecSessions, manager: TaskManager, task: Task, number: int | None,
           started: float, size: int, max_tokens: int) -> str:
    """The chunk for what the task did since the last read; a task that ended is forgotten."""
    text, raw = read_new(manager, task, size)
    running = task.process.running
    if not running and number is not None:
        sessions.drop(number)
    if not running:
        task.reported = True
    out = task.process.outcome
    return chunk_text(codex_texts(ctx), wall_s=time.monotonic() - started, exit_code=out.exit_code if out else None,
                      session=number if running else None, raw_bytes=raw, output=text, max_tokens=max_tokens)


def start_process(ctx: ToolContext, manager: TaskManager, command: str, cwd: Any, *, tty: bool, shell: list[str],
                  wrap: Any, on_exit: Any = None) -> Task:
    """Start `command` as an exec session's task; `on_exit(proc)` is set up before the task is
    adopted, so what it does at the end is done when the task's end is announced."""
    idle_ms = ctx.settings.bash.interactive_idle_timeout_ms
    try:
        proc = manager.spawn(command, cwd, None, record_cwd=False, wrap=wrap, stdio=Pty() if tty else None,
                             idle_timeout_s=idle_ms / 1000 if idle_ms else None, env=CODEX_ENV, shell=shell)
    except ShellError as e:
        raise ToolError(codex_texts(ctx)("exec_command.spawn_failed", error=e)) from None
    if on_exit is not None:
        on_exit(proc)
    return manager.adopt(proc, command, None, "session")
