"""`codebelt call TOOL [JSON | -] [--json]`: one tool call, its result text on stdout."""

from __future__ import annotations

import argparse
import json
import sys

from . import UsageError
from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", help="tool name, e.g. Read")
    parser.add_argument("input", nargs="?", default="{}", help="JSON object, or - to read it from stdin")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")


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


def run(args: argparse.Namespace) -> int:
    params = parse_input(args.input)
    with make_session(args) as session:
        if args.tool not in session.tools:
            raise UsageError(f"unknown tool {args.tool!r}; available: {', '.join(sorted(session.tools))}")
        result = session.call(args.tool, params)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        stream = sys.stderr if result.is_error else sys.stdout
        stream.write(result.text if result.text.endswith("\n") else result.text + "\n")
        if result.images:
            sys.stderr.write(f"[{len(result.images)} image(s) omitted; use --json to get them]\n")
    return 1 if result.is_error else 0
