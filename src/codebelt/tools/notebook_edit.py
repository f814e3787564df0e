"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook, as Claude Code's tool.

The notebook must have been read (and be unchanged since), as for Write and Edit; the new file is
written atomically and keeps the notebook's own formatting (indent, key order, trailing
newline, how sources are stored, nbformat's version)."""

from __future__ import annotations

import os
import stat as stat_mod
import uuid
from typing import Literal

from pydantic import BaseModel, Field

from ..errors import NotebookError
from ..files.atomic import AtomicWriteError, write_atomic
from ..files.codec import UTF8
from ..files.notebook import edit_notebook
from ..permissions.requests import PathRequest
from ..tool import Tool, ToolContext, ToolError, ToolInput, ToolResult
from ._services import file_states
from ._texts import not_found, state_problem, symlink_refusal

DESCRIPTION = """Replaces, inserts, or deletes a single cell in a Jupyter notebook (.ipynb file)."""


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(
        description="The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)")
    cell_id: str | None = Field(
        None, description="The ID of the cell to edit. When inserting a new cell, the new cell will be inserted "
        "after the cell with this ID, or at the beginning if not specified.")
    new_source: str = Field(description="The new source for the cell")
    cell_type: Literal["code", "markdown"] | None = Field(
        None, description="The type of the cell (code or markdown). If not specified, it defaults to the current "
        "cell type. If using edit_mode=insert, this is required.")
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(
        None, description="The type of edit to make (replace, insert, delete). Defaults to replace.")


class NotebookEditOutput(BaseModel):
    notebookPath: str
    action: str = Field(description="updated | inserted | deleted")
    cellId: str | None = Field(None, description="The cell edited or inserted")


class NotebookEdit(Tool):
    name = "NotebookEdit"
    permission_family = "edit"
    description = DESCRIPTION
    Input = NotebookEditInput
    Output = NotebookEditOutput
    destructive = True
    max_result_chars = None  # one sentence and the new source
    search_hint = "edit a cell of a Jupyter notebook"

    def summarize(self, params: NotebookEditInput) -> str:
        return params.notebook_path

    def validate(self, params: NotebookEditInput, ctx: ToolContext) -> None:
        if not params.notebook_path.lower().endswith(".ipynb"):
            raise ToolError(ctx.texts("NotebookEdit.not_notebook"))

    def precheck(self, params: NotebookEditInput, ctx: ToolContext) -> None:
        path = ctx.workspace.resolve(params.notebook_path)
        if ctx.workspace.is_inside(path):
            self._check_state(path, params, ctx)

    def permission_requests(self, params: NotebookEditInput, ctx: ToolContext) -> list[PathRequest]:
        return [PathRequest("write", ctx.workspace.resolve(params.notebook_path))]

    def _check_state(self, path, params: NotebookEditInput, ctx: ToolContext) -> os.stat_result:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            # as Claude Code: a notebook never read is refused as such, existing or not
            if ctx.service(file_states).get(path) is None:
                raise ToolError(ctx.texts("common.not_read")) from None
            raise ToolError(ctx.texts("common.error", message=not_found(ctx, path))) from None
        if not stat_mod.S_ISREG(st.st_mode):
            raise ToolError(ctx.texts("common.error", message=f"{params.notebook_path} is not a regular file."))
        problem = ctx.service(file_states).check(path, st)
        if problem:
            raise ToolError(state_problem(ctx, problem))
        return st

    def run(self, params: NotebookEditInput, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve(params.notebook_path)
        refusal = symlink_refusal(ctx, params.notebook_path, path)
        if refusal:
            raise ToolError(refusal)
        st = self._check_state(path, params, ctx)
        mode = params.edit_mode or "replace"
        try:
            raw = path.read_bytes()
            change = edit_notebook(raw, mode=mode, cell_id=params.cell_id, new_source=params.new_source,
                                   cell_type=params.cell_type, new_id=uuid.uuid4().hex[:8])
        except OSError as e:
            raise ToolError(f"Cannot read {params.notebook_path}: {e.strerror}.") from None
        except NotebookError as e:
            if e.reason == "bad_json":
                raise ToolError(ctx.texts("Read.notebook_bad_json", reason=e.facts.get("detail", str(e)))) from None
            raise ToolError(ctx.texts(f"NotebookEdit.{e.reason}", cell_id=params.cell_id or "")) from None
        now = os.stat(path)
        if (now.st_mtime_ns, now.st_size) != (st.st_mtime_ns, st.st_size):
            raise ToolError(ctx.texts("common.modified"))
        try:
            write_atomic(path, change.data)
        except AtomicWriteError as e:
            raise ToolError(f"Could not write {params.notebook_path}: {e}. The notebook is unchanged.") from None
        states = ctx.service(file_states)
        try:
            states.record_write(path, change.data, UTF8)
        except OSError:
            states.forget(path)
        if change.action == "deleted":
            text = ctx.texts("NotebookEdit.deleted", cell_id=change.cell_id)
        elif change.action == "inserted":
            text = (ctx.texts("NotebookEdit.inserted", cell_id=change.cell_id, source=params.new_source)
                    if change.cell_id else ctx.texts("NotebookEdit.inserted_no_id", source=params.new_source))
        else:
            text = ctx.texts("NotebookEdit.updated", cell_id=change.cell_id, source=params.new_source)
        return ToolResult(text, data={"notebookPath": ctx.workspace.relative(path), "action": change.action,
                                      "cellId": change.cell_id})
