"""`codebelt call TOOL [JSON | -] [--json] [--session NAME] [--new-session]`: one tool call, its
result text on stdout.

Calls share a persistent session per workspace (`--session` picks one, default "default";
`--new-session` starts it afresh): a Read lets a later Edit work, a `cd` carries over. A
foreground Bash command runs to its timeout with its output shown live on a terminal; background
tasks would die with the process, so `run_in_background` is refused.
"""

from __future__ import annotations

import argparse
import json
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


ONE_SHOT = {"bash": {"backgroundTasks": False, "autoBackground": False}}
NOT_READ_HINT = ("From the command line, Read it first with `codebelt call Read '{\"file_path\": ...}'` "
                 "in the same workspace and session (--root, --session); the session remembers it.")


def run(args: argparse.Namespace) -> int:
    from .session_state import SessionState

    params = parse_input(args.input)
    state = SessionState(Path(args.root), args.session)
    if args.new_session:
        state.clear()
    with make_session(args, settings=ONE_SHOT) as session:
        if args.tool not in session.tools:
            raise UsageError(f"unknown tool {args.tool!r}; available: {', '.join(sorted(session.tools))}")
        state.load_into(session)
        live = _LiveOutput() if args.tool == "Bash" and not args.json and sys.stderr.isatty() else None
        result = session.call(args.tool, params, progress=live)
        state.save_from(session)
    if result.is_error and "has not been read yet" in result.text:
        result.text += " " + NOT_READ_HINT
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        stream = sys.stderr if result.is_error else sys.stdout
        stream.write(result.text if result.text.endswith("\n") else result.text + "\n")
        if result.images:
            sys.stderr.write(f"[{len(result.images)} image(s) omitted; use --json to get them]\n")
    return 1 if result.is_error else 0


class _LiveOutput:
    """A Bash command's new lines on the terminal while it runs (progress arrives about once a
    second with the last lines and the running line count)."""

    def __init__(self) -> None:
        self.shown = 0

    def __call__(self, message: str, data: dict[str, Any]) -> None:
        total, last = int(data.get("totalLines") or 0), list(data.get("lastLines") or [])
        new = total - self.shown
        if new <= 0:
            return
        if new > len(last):
            sys.stderr.write(f"… ({new - len(last)} more lines)\n")
        for line in last[-new:]:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.shown = total
