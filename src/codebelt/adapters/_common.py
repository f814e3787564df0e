"""Shared by the adapters: reading dicts or SDK objects alike, and running a batch of calls."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from ..session import Session
    from ..tool import ToolResult


def field(obj: Any, name: str, default: Any = None) -> Any:
    """`obj[name]` for a dict, `obj.name` for an SDK object (pydantic model, dataclass)."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def parse_arguments(raw: Any, tool: str) -> tuple[dict[str, Any] | None, str | None]:
    """Turn a model's `arguments` (JSON text, or an already-parsed object) into a dict.

    Returns (arguments, None) or (None, an error the model can act on).
    """
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            value = json.loads(raw)
        except ValueError as e:
            return None, (
                f"The arguments for {tool} are not valid JSON ({e}). "
                "Call the tool again with the arguments as one JSON object."
            )
        if isinstance(value, dict):
            return value, None
        return None, (
            f"The arguments for {tool} must be a JSON object, got {type(value).__name__}. "
            "Call the tool again with the arguments as one JSON object."
        )
    return None, (
        f"The arguments for {tool} must be a JSON object, got {type(raw).__name__}. "
        "Call the tool again with the arguments as one JSON object."
    )


async def run_batch(
    session: "Session", calls: list[tuple[str, dict[str, Any] | None, str | None]]
) -> list["ToolResult"]:
    """Run (name, arguments, parse_error) triples through `Session.call_many`, in order.

    Calls whose arguments could not be parsed become error results without reaching the session;
    the rest keep their relative order, so `call_many` still runs consecutive concurrency-safe
    calls in parallel and everything else one at a time.
    """
    from ..tool import ToolResult

    runnable = [(i, name, args) for i, (name, args, err) in enumerate(calls) if err is None]
    outs = await session.call_many([(name, args or {}) for _, name, args in runnable]) if runnable else []
    results: list[ToolResult | None] = [None] * len(calls)
    for (i, _, _), r in zip(runnable, outs):
        results[i] = r
    for i, (_, _, err) in enumerate(calls):
        if err is not None:
            results[i] = ToolResult.error(err)
    return [r for r in results if r is not None]


def run_sync(coro_fn: Any, *args: Any) -> Any:
    """Run an adapter's async helper from synchronous code."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn(*args))
    raise RuntimeError(
        "called from inside a running event loop; use the async variant "
        f"(await {coro_fn.__name__}(...)) instead"
    )


def as_list(items: Any) -> Iterable[Any]:
    if items is None:
        return []
    if isinstance(items, dict):
        return [items]
    return list(items)
