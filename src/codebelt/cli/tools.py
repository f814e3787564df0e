"""`codebelt tools [--format text|json|openai|anthropic]`: the tools and their schemas."""

from __future__ import annotations

import argparse
import json
import sys

from .common import make_session


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json", "openai", "anthropic"), default="text")


def run(args: argparse.Namespace) -> int:
    with make_session(args, interactive=False, audit=False) as session:
        if args.format == "json":
            out = session.tool_specs()
        elif args.format == "openai":
            from ..adapters import openai_tools

            out = openai_tools(session)
        elif args.format == "anthropic":
            from ..adapters import anthropic_tools

            out = anthropic_tools(session)
        else:
            for spec in session.tool_specs():
                flags = [f for f in ("read_only", "concurrency_safe") if spec[f]]
                first = spec["description"].strip().splitlines()[0] if spec["description"] else ""
                schema = spec["input_schema"]
                required = set(schema.get("required", []))
                params = ", ".join(p if p in required else f"{p}?" for p in schema.get("properties", {}))
                sys.stdout.write(f"{spec['name']}({params})  [{', '.join(flags) or 'writes'}]\n    {first}\n")
            return 0
    json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0
