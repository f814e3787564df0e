"""`codebelt call TOOL [JSON | -] [--json] [--session NAME] [--new-session]`: one tool call, its
result text on stdout.

Calls share a persistent session per workspace (`--session` picks one, default "default";
`--new-session` starts it afresh): a Read lets a later Edit work, a `cd` carries over. A
foreground Bash command runs to its timeout with its output shown live on a terminal (once: what
was shown live is not printed again there); background tasks would die with the process, so
`run_in_background` is refused. What a result points to (a large output's file) is kept with the
CLI session, for the next call to Read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from . import UsageError
from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", help="tool name, e.g. Read")
    parser.add_argument("input", nargs="?", default="{}", help="JSON object, or - to read it from stdin")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--session", default="default", metavar="NAME",
                        help="the persistent session to use (read files and the shell's directory are kept; default: default)")
    parser.add_argument("--new-session", action="store_true", help="start the session afresh")


def parse_input(text: str) -> dict:
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"input is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(value, dict):
        raise UsageError(f"input must be a JSON object, got {type(value).__name__}")
    return value


# one call and gone: no background tasks, nothing warmed up for calls that will not come
ONE_SHOT = {"bash": {"backgroundTasks": False, "autoBackground": False}, "intel": {"startWithSession": False}}
NOT_READ_HINT = ("From the command line, Read it first with `codebelt call Read '{\"file_path\": ...}'` "
                 "in the same workspace and session (--root, --session); the session remembers it.")


def run(args: argparse.Namespace) -> int:
    from .session_state import SessionState

    params = parse_input(args.input)
    state = SessionState(Path(args.root), args.session)
    if args.new_session:
        state.clear()
    state.prune_results()
    with make_session(args, settings=ONE_SHOT, session_id=state.session_id(), results_root=state.results) as session:
        if args.tool not in session.tools:
            raise UsageError(f"unknown tool {args.tool!r}; available: {', '.join(sorted(session.tools))}")
        state.load_into(session)
        live = _LiveOutput() if args.tool == "Bash" and not args.json and sys.stderr.isatty() else None
        result = session.call(args.tool, params, progress=live)
        state.save_from(session)
    if result.is_error and "has not been read yet" in result.text:
        sys.stderr.write(NOT_READ_HINT + "\n")  # for the person at the terminal; the result stays the tool's
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        stream = sys.stderr if result.is_error else sys.stdout
        text = result.text
        if live is not None and live.started:
            # Shown as it came; on a terminal it is not printed again (into a pipe or a file, the
            # whole result goes as always: that is where the output is wanted).
            rest = live.finish(result)
            if stream.isatty():
                text = rest
        if text:
            stream.write(text if text.endswith("\n") else text + "\n")
        if result.images:
            sys.stderr.write(f"[{len(result.images)} image(s) omitted; use --json to get them]\n")
    return 1 if result.is_error else 0


class _LiveOutput:
    """A Bash command's output on the terminal while it runs, all of it: each progress report
    (about once a second) names the file the output goes to, and what it gained since is shown.
    The descriptor stays open, so the rest can be shown after the command even if the file was
    deleted meanwhile. Past LIVE_MAX_BYTES the live view stops (the result says where it all is)."""

    LIVE_MAX_BYTES = 4 << 20

    def __init__(self) -> None:
        self.fd: int | None = None
        self.shown = 0
        self.capped = False
        self.fallback_lines = 0  # lines shown from the reports themselves when the file cannot be opened

    @property
    def started(self) -> bool:
        return self.fd is not None

    def __call__(self, message: str, data: dict[str, Any]) -> None:
        path = data.get("outputPath")
        if self.fd is None and isinstance(path, str):
            try:
                self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                pass
        if self.fd is not None:
            self._show(final=False)
            return
        total, last = int(data.get("totalLines") or 0), list(data.get("lastLines") or [])
        new = total - self.fallback_lines
        if new <= 0:
            return
        if new > len(last):
            sys.stderr.write(f"… ({new - len(last)} more lines)\n")
        for line in last[-new:]:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.fallback_lines = total

    def _show(self, final: bool) -> None:
        """What the output gained since the last look: whole lines only, unless the command ended."""
        assert self.fd is not None
        while not self.capped:
            chunk = os.pread(self.fd, min(1 << 20, self.LIVE_MAX_BYTES - self.shown), self.shown)
            if not chunk:
                break
            if not final:
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:
                    break  # a line still being written: shown once it is whole
                chunk = chunk[:cut]
            sys.stderr.buffer.write(chunk)
            self.shown += len(chunk)
            if self.shown >= self.LIVE_MAX_BYTES:
                self.capped = True
        sys.stderr.flush()

    def finish(self, result: Any) -> str:
        """Show the rest of the output, and return what of the result is still to be printed:
        its status lines and notes, not the output again."""
        assert self.fd is not None
        try:
            self._show(final=True)
            if self.shown and not os.pread(self.fd, 1, self.shown - 1).endswith(b"\n"):
                sys.stderr.write("\n")
        finally:
            os.close(self.fd)
        data = result.data or {}
        stdout = data.get("stdout") or ""
        core = stdout.strip("\n")
        rest = result.text
        if core and core in rest:  # the output, wherever the result has it (after `Exit code N`)
            before, _, after = rest.partition(core)
            rest = "\n".join(part.strip("\n") for part in (before, after) if part.strip("\n"))
        if self.capped:
            where = data.get("outputPath")
            rest = (f"[live view stopped after {self.LIVE_MAX_BYTES >> 20} MB"
                    + (f"; the whole output is in {where}]" if where else "]") + ("\n" + rest if rest else ""))
        return rest
