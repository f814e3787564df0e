"""update_plan (Codex's profile): the model's plan, as steps with a status. Nothing runs: the
plan is kept for the session (`Session.plan`) and reported to the client, and the model reads
Codex's "Plan updated"."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..tool import ToolContext, ToolResult
from ._codex import CodexTool, CodexInput, codex_texts

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string", "description": "Optional explanation for this plan update."},
        "plan": {"type": "array", "description": "The list of steps", "items": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "description": "Step status.",
                           "enum": ["pending", "in_progress", "completed"]},
                "step": {"type": "string", "description": "Task step text."},
            },
            "required": ["step", "status"],
            "additionalProperties": False,
        }},
    },
    "required": ["plan"],
    "additionalProperties": False,
}


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: str
    status: Literal["pending", "in_progress", "completed"]


class UpdatePlanInput(CodexInput):
    explanation: str | None = None
    plan: list[PlanStep]


class UpdatePlan(CodexTool):
    name = "update_plan"
    description = codex_texts().description("update_plan")
    Input = UpdatePlanInput
    read_only = True
    concurrency_safe = True
    idempotent = True
    search_hint = "keep a step-by-step plan"
    schema = SCHEMA

    def run(self, params: UpdatePlanInput, ctx: ToolContext) -> ToolResult:
        plan = [s.model_dump() for s in params.plan]
        ctx.emit("plan", {"explanation": params.explanation, "plan": plan})
        return ToolResult(text=codex_texts(ctx)("update_plan.updated"), data={"explanation": params.explanation, "plan": plan})
