"""An MCP client in a process of its own, for tests that kill it: connects to `codebelt serve`
over stdio with the SDK's client, makes the calls it is given, says "ready", then either waits
forever or makes its last call (saying "calling" first) and waits for that.

    python stdio_client.py SPEC_JSON
    SPEC: {"command": [...], "env": {...}, "calls": [[tool, input], ...], "last": [tool, input] | null,
           "answer": false to leave a question (elicitation) unanswered, saying "asked"}
"""

from __future__ import annotations

import json
import sys

import anyio


async def main(spec: dict) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    command, *args = spec["command"]
    server = StdioServerParameters(command=command, args=args, env=spec["env"])
    kwargs = {}
    if not spec.get("answer", True):
        async def never_answer(context, params):
            print("asked", flush=True)
            await anyio.sleep_forever()

        kwargs["elicitation_callback"] = never_answer
    async with Client(server, mode="legacy", **kwargs) as client:
        for tool, arguments in spec["calls"]:
            result = await client.call_tool(tool, arguments)
            print(json.dumps({"tool": tool, "error": result.is_error}), flush=True)
        print("ready", flush=True)
        if spec["last"] is not None:
            print("calling", flush=True)
            await client.call_tool(*spec["last"])
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
