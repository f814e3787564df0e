"""`ask` decisions answered by the MCP client that made the call, through elicitation.

One Session serves every request of the server, so the Session's approver cannot know which
request it is answering for. Each `tools/call` therefore runs its tool in a worker thread under a
copied context holding that request's `CallScope` (a ContextVar), and the session-wide
`ElicitationApprover` routes each question to the scope of the thread asking. Concurrent calls
never see each other's client, and a question asked outside any MCP request is refused.

Two protocol eras, two transports for the same question:
- handshake era (<= 2025-11-25): the approver sends `elicitation/create` mid-call, on the
  request's own back-channel, and blocks its worker thread until the client answers;
- 2026-07-28: servers may not send requests mid-call. The approver records the question and
  refuses; the bridge discards that first result and returns an `InputRequiredResult` carrying the
  question. The client asks its user and retries the same call with the answer
  (`input_responses`) and our sealed `request_state`; this time the approver finds the answer.
A question is identified by a digest of its exact text, so an answer is only ever used for the
question the user was shown.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextvars
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..permissions.approvers import ApprovalRefused

if TYPE_CHECKING:
    from ..permissions.approvers import ApprovalRequest, Approver

# The key of our question in `InputRequiredResult.input_requests` / `input_responses`.
APPROVAL_KEY = "codebelt.approval"
STATE_VERSION = 1

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Allow codebelt to run this tool call once.",
            "default": False,
        }
    },
    "required": ["approve"],
}


class ApprovalUnavailable(ApprovalRefused):
    """Nobody can be asked: the Session turns this into a deny that names what would allow it."""


class ApprovalPending(Exception):
    """The question goes back to the client in an InputRequiredResult (2026-07-28 era)."""


def approval_message(request: "ApprovalRequest") -> str:
    """The elicitation's text: the same question the terminal asks, with every untrusted part
    quoted so that a command or path cannot forge a line of it (permissions/question.py)."""
    return request.question()


def question_digest(message: str) -> str:
    raw = json.dumps({"message": message, "schema": APPROVAL_SCHEMA}, sort_keys=True).encode()
    return base64.urlsafe_b64encode(hashlib.sha256(raw).digest()[:16]).decode().rstrip("=")


def encode_state(digest: str) -> str:
    return json.dumps({"v": STATE_VERSION, "asked": digest}, separators=(",", ":"))


def decode_state(state: str | None) -> str | None:
    """The digest of the question asked last round, or None (absent, malformed, other version)."""
    if not state:
        return None
    try:
        value = json.loads(state)
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("v") == STATE_VERSION and isinstance(value.get("asked"), str):
        return value["asked"]
    return None


def answer_approves(answer: Any) -> bool:
    """accept with approve=true → True; anything else (decline, cancel, approve=false) → False."""
    if getattr(answer, "action", None) != "accept":
        return False
    content = getattr(answer, "content", None) or {}
    return content.get("approve") is True


@dataclass
class CallScope:
    """What the approver needs to ask the client of one `tools/call` request."""

    ctx: Any  # mcp.server.ServerRequestContext
    loop: asyncio.AbstractEventLoop
    cancel_event: threading.Event
    input_responses: dict[str, Any] | None = None
    asked_digest: str | None = None  # from our request_state: the question shown last round
    pending_message: str | None = None  # set when the question must go back to the client
    answered: list[bool] = field(default_factory=list)

    @property
    def input_required_era(self) -> bool:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def client_supports_form_elicitation(self) -> bool:
        caps = self.ctx.session.client_capabilities
        elicitation = getattr(caps, "elicitation", None) if caps is not None else None
        # A bare `elicitation: {}` (before modes existed) means form support; url-only does not.
        return elicitation is not None and (
            getattr(elicitation, "form", None) is not None or getattr(elicitation, "url", None) is None
        )

    def approve(self, request: "ApprovalRequest") -> bool:
        """Called from the worker thread running the tool; blocks until the client answers."""
        if not self.client_supports_form_elicitation:
            raise ApprovalUnavailable(
                "the MCP client does not support elicitation, so the user could not be asked"
            )
        message = approval_message(request)
        if self.input_required_era and request.while_running:
            # this era answers questions by retrying the whole call: a command would run twice
            raise ApprovalUnavailable("this MCP client's protocol takes questions only before a call runs, not "
                                      "while a command runs")
        if self.input_required_era:
            approved = self._answer_from_retry(message)
        elif self.ctx.session.can_send_request:
            approved = self._ask_now(message)
        else:
            raise ApprovalUnavailable(
                "this connection cannot send the question to the user in the middle of a call"
            )
        self.answered.append(approved)
        return approved

    def _ask_now(self, message: str) -> bool:
        """Handshake era: send elicitation/create on this request's back-channel and wait."""
        coro = self.ctx.session.elicit_form(
            message=message, requested_schema=APPROVAL_SCHEMA, related_request_id=self.ctx.request_id
        )
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        while True:
            try:
                answer = future.result(timeout=0.25)
                break
            except concurrent.futures.TimeoutError:
                if self.cancel_event.is_set():  # the call was cancelled while the user was asked
                    future.cancel()
                    raise ApprovalUnavailable("the call was cancelled while waiting for the user") from None
            except Exception as e:  # the client failed to answer: nobody approved
                raise ApprovalUnavailable(f"asking the user through the MCP client failed: {e}") from None
        return answer_approves(answer)

    def _answer_from_retry(self, message: str) -> bool:
        """2026-07-28 era: use the client's answer to this exact question, or ask for one."""
        digest = question_digest(message)
        answer = (self.input_responses or {}).get(APPROVAL_KEY)
        if answer is not None and self.asked_digest == digest:
            return answer_approves(answer)
        self.pending_message = message
        raise ApprovalPending("the question goes back to the MCP client")


current_call: contextvars.ContextVar[CallScope | None] = contextvars.ContextVar(
    "codebelt_mcp_call", default=None
)


class ElicitationApprover:
    """The Session's approver while it serves MCP: asks the client of the calling request.

    Calls made on the same Session outside any MCP request (a library user sharing it) go to
    the approver the Session had before, if any.
    """

    def __init__(self, fallback: "Approver | None" = None):
        self.fallback = fallback

    def __call__(self, request: "ApprovalRequest") -> bool:
        scope = current_call.get()
        if scope is not None:
            return scope.approve(request)
        if self.fallback is not None:
            return bool(self.fallback(request))
        raise ApprovalUnavailable("the call did not come from an MCP request, so nobody could be asked")
