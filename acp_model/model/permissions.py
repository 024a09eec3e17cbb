"""Permission answers: what a response means for the rules, and which option means what.

One classification serves the oracle (a client's response, as the agent must read it: PERM-11),
the fuzz client (which option to pick for an intended answer) and the explorer (whose abstract
answers name the same categories).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_model.model.answering import Showing
from acp_model.model.check import check
from acp_model.model.vocab import Answer, Reads, Role, ToolStatus


def option_answer(kind: Any) -> Answer:
    """What selecting an option of this kind means: only ``allow_*`` approves, a custom
    ``_x`` kind means whatever the agent defined; anything else (an option never offered
    included, RULES.md A-12) is a rejection."""
    if isinstance(kind, str):
        if kind.startswith("allow_"):
            return Answer.ALLOW
        if kind.startswith("_"):
            return Answer.CUSTOM_OPTION
    return Answer.REJECT


def classify(options: Mapping[str, Any] | None, result: Any, has_error: bool) -> Answer:
    """Reduce a permission response to what PERM-11 and CANCEL-04 care about."""
    if has_error:
        return Answer.ERROR
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else None
    if kind == "cancelled":
        return Answer.CANCELLED
    if kind != "selected":
        return Answer.CUSTOM
    return option_answer((options or {}).get(outcome.get("optionId")))


def option_for(options: Mapping[str, Any], answer: Answer) -> str | None:
    """An offered optionId whose selection means ``answer`` (None: none is offered)."""
    for option_id, kind in options.items():
        if kind is not None and option_answer(kind) == answer:
            return option_id
    return None


@check("TOOL-12", role=Role.FINDING, reads=[Reads.TOOL_USE])
def allowed_tool_reported_running(s: Showing) -> str | None:
    """A tool call an allow approved (at ``s.allowed_at``) reports in_progress before it
    reports completed (failed may mean it never ran: a cancel, a refusal of the tool)."""
    status = s.payload.get("status")
    if s.allowed_at is None or status != ToolStatus.COMPLETED:
        return None
    return (f"tool call {s.payload.get('toolCallId')!r}, approved by the allow answered at "
            f"#{s.allowed_at}, went to {status} without reporting in_progress: once "
            "permission is granted the agent should report the tool running")
