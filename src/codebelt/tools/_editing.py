"""What Edit and MultiEdit share: apply the edits (all or nothing) and describe the result."""

from __future__ import annotations

from pathlib import Path


from ..errors import EditError, ToolError
from ..files.editing import EditOutcome, EditSpec, apply_edits, snippet
from ..files.lines import row_format
from ..tool import DeclaredModel, Param, ToolContext, ToolResult
from . import _diagnostics
from ._opening import beneath
from ._services import file_states, line_indexes
from ._texts import edit_error, symlink_refusal


def describe_outcome(ctx: ToolContext, given: str, outcome: EditOutcome, specs: list[EditSpec],
                     whole: bool, multi: bool = False) -> str:
    """The confirmation, as Claude Code's Edit words it; `whole`: the model had the whole file
    before the edit, so it has it now (the profile then says so); `multi`: MultiEdit's call (one
    edit of it reads as an Edit, unless the profile lists MultiEdit's edits)."""
    t = ctx.texts
    if multi and (len(specs) > 1 or t.has("MultiEdit.item")):
        key = "MultiEdit.updated"
    else:
        key = "Edit.updated_all" if specs[0].replace_all else "Edit.updated"
    facts = {"path": given, "count": len(specs), "old_string": specs[0].old_string, "new_string": specs[0].new_string}
    if t.has("MultiEdit.item"):  # older releases listed MultiEdit's edits
        facts["edits"] = t("MultiEdit.edit" if len(specs) == 1 else "MultiEdit.edits")
        facts["items"] = "\n".join(t("MultiEdit.item", n=n, old_string=e.old_string, new_string=e.new_string)
                                   for n, e in enumerate(specs, 1))
    if "{snippet}" in (t.template(key) or ""):  # older releases showed the edited lines
        facts["snippet"] = snippet(outcome.text, *outcome.region, context=4, max_rows=10_000, width=10**9,
                                   encoding=outcome.fmt.encoding, line_base=outcome.line_base,
                                   row=row_format(t.template("Read.row")), as_split=True)
    head = t(key, **facts)
    if whole or outcome.created:
        head += ctx.texts("common.state_current")
    tolerant = sorted({h for h in outcome.how if h not in ("exact", "fill empty file")})
    if tolerant:
        head += f" (old_string matched after normalising: {', '.join(tolerant)}"
        head += f"; {'; '.join(outcome.notes)}.)" if outcome.notes else ".)"
    return head


def _refusal(ctx: ToolContext, file_path: str, path: Path, specs: list[EditSpec], e: EditError) -> str:
    single = specs[0].old_string if len(specs) == 1 else None
    if len(specs) > 1 and e.reason not in ("not_read", "modified", "file_missing", "directory", "notebook"):
        return str(e)  # MultiEdit's own wording names the edit that failed
    return edit_error(ctx, e, file_path, single, path)


def check_edits(file_path: str, specs: list[EditSpec], ctx: ToolContext) -> None:
    """Everything that can fail without side effects, before the permission decision."""
    from ..files.editing import check_edits as check

    path = ctx.resolve(file_path)
    if not ctx.workspace.is_inside(path):
        return  # the permission decision speaks first: writing outside is refused as such
    refusal = symlink_refusal(ctx, file_path, path)
    if refusal:
        raise ToolError(refusal)
    try:
        check(path, specs, ctx.service(file_states), ctx.workspace.relative, beneath(ctx))
    except EditError as e:
        raise ToolError(_refusal(ctx, file_path, path, specs, e)) from None


def run_edits(file_path: str, specs: list[EditSpec], ctx: ToolContext, multi: bool = False) -> ToolResult:
    """Edit and MultiEdit's run: apply the edits (all or nothing) and describe the result."""
    path = ctx.resolve(file_path)  # the path the decision was made on
    rel = ctx.workspace.relative(path)
    refusal = symlink_refusal(ctx, file_path, path)
    if refusal:
        raise ToolError(refusal)
    states = ctx.service(file_states)
    before = states.get(path)
    whole = before is not None and before.complete
    checked = _diagnostics.before(ctx, path)
    try:
        outcome = apply_edits(path, specs, states, ctx.workspace.relative,
                              line_indexes=ctx.service(line_indexes), max_bytes=ctx.settings.edit.max_file_mb << 20,
                              beneath=beneath(ctx))
    except EditError as e:
        raise ToolError(_refusal(ctx, file_path, path, specs, e)) from None
    result = ToolResult(describe_outcome(ctx, file_path, outcome, specs, whole, multi), data=outcome_data(rel, outcome))
    return _diagnostics.attach(result, ctx, _diagnostics.after(ctx, checked))


class EditOutput(DeclaredModel):
    filePath: str
    created: bool = Param(description="The file did not exist (an empty old_string created it)")
    replacements: list[int] = Param(description="Replacements made by each edit")
    matchedBy: list[str] = Param(description="How each old_string was found: exact, or the normalisation used")
    bytes: int
    encoding: str
    lineEnding: str = Param(description="LF | CRLF | mixed")
    diagnostics: list[dict] | None = Param(None, description="Problems the change introduced")


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
