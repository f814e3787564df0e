"""What Edit and MultiEdit share: apply the edits (all or nothing) and describe the result."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import EditError, ToolError
from ..files.editing import EditOutcome, EditSpec, apply_edits, snippet
from ..tool import ToolContext, ToolResult
from . import _diagnostics
from ._opening import beneath
from ._services import file_states, line_indexes


def describe_outcome(rel: str, outcome: EditOutcome) -> str:
    """The confirmation shared by Edit and MultiEdit: what changed, and the edited lines."""
    if outcome.created:
        head = f"Created {rel}."
    else:
        edits = len(outcome.replacements)
        total = sum(outcome.replacements)
        extra = f" with {edits} edits" if edits > 1 else ""
        extra += f" ({total} replacements)" if total > edits else ""
        head = f"The file {rel} has been updated{extra}."
    tolerant = sorted({h for h in outcome.how if h not in ("exact", "fill empty file")})
    if tolerant:
        head += f" (old_string matched after normalising: {', '.join(tolerant)}"
        head += f"; {'; '.join(outcome.notes)}.)" if outcome.notes else ".)"
    lo, hi = outcome.region
    return f"{head} Here's the result of running `cat -n` on a snippet of the edited file:\n" + snippet(
        outcome.text, lo, hi, encoding=outcome.fmt.encoding, line_base=outcome.line_base
    )


def check_edits(file_path: str, specs: list[EditSpec], ctx: ToolContext) -> None:
    """Everything that can fail without side effects, before the permission decision."""
    from ..files.editing import check_edits as check

    path = ctx.resolve(file_path)
    if not ctx.workspace.is_inside(path):
        return  # the permission decision speaks first: writing outside is refused as such
    try:
        check(path, specs, ctx.service(file_states), ctx.workspace.relative, beneath(ctx))
    except EditError as e:
        raise ToolError(str(e)) from None


def run_edits(file_path: str, specs: list[EditSpec], ctx: ToolContext) -> ToolResult:
    """Edit and MultiEdit's run: apply the edits (all or nothing) and describe the result."""
    path = ctx.resolve(file_path)  # the path the decision was made on
    rel = ctx.workspace.relative(path)
    checked = _diagnostics.before(ctx, path)
    try:
        outcome = apply_edits(path, specs, ctx.service(file_states), ctx.workspace.relative,
                              line_indexes=ctx.service(line_indexes), max_bytes=ctx.settings.edit.max_file_mb << 20,
                              beneath=beneath(ctx))
    except EditError as e:
        raise ToolError(str(e)) from None
    result = ToolResult(describe_outcome(rel, outcome), data=outcome_data(rel, outcome))
    return _diagnostics.attach(result, ctx, _diagnostics.after(ctx, checked))


class EditOutput(BaseModel):
    filePath: str
    created: bool = Field(description="The file did not exist (an empty old_string created it)")
    replacements: list[int] = Field(description="Replacements made by each edit")
    matchedBy: list[str] = Field(description="How each old_string was found: exact, or the normalisation used")
    bytes: int
    encoding: str
    lineEnding: str = Field(description="LF | CRLF | mixed")
    diagnostics: list[dict] | None = Field(None, description="Problems the change introduced")


def outcome_data(rel: str, outcome: EditOutcome) -> dict:
    return {
        "filePath": rel,
        "created": outcome.created,
        "replacements": outcome.replacements,
        "matchedBy": outcome.how,
        "bytes": outcome.size,
        "encoding": outcome.fmt.encoding,
        "lineEnding": {"\n": "LF", "\r\n": "CRLF"}.get(outcome.fmt.eol, "mixed"),
    }
