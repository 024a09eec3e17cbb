"""The lifecycle checks on the foreground state the agent reports, and on its tool calls.

:class:`StateRules` owns no state: each check reads the session's foreground state, its prompts
and its :class:`~acp_model.model.permission_book.PermissionBook`. The lifecycle names the
checks by reference (``cond=guards(StateRules.one_stop_reason)``); the engine runs each on the
part of ``SessionModel.PARTS`` that holds it.
"""

from __future__ import annotations

from acp_model.model.check import check
from acp_model.model.events import Payload
from acp_model.model.race_facts import ModelSession
from acp_model.model.vocab import PROCEEDING_TOOL_STATUSES, Answer, PermState, Role, StopReason

__all__ = ["StateRules"]


class StateRules:
    """Checks on state reports (running, requires_action, idle) and tool call updates."""

    __slots__ = ("m",)

    def __init__(self, m: ModelSession) -> None:
        self.m = m

    @check("STATE-01", reading="A-16", levels={"strict": "rule", "lenient": "warn",
                                               "allow": "off"}, role=Role.GUARD)
    def running_before_blocking(self, ev: Payload) -> bool:
        """requires_action straight from a quiet session skips the running report."""
        return False

    @check("STATE-01", reading="A-09", levels={"strict": "rule", "lenient": "warn"},
           role=Role.GUARD)
    def prompt_work_announced(self, ev: Payload) -> bool:
        """An idle with a stop reason after accepted prompts ends work that never ran (a
        cancelled idle answering a cancel excepted: that work was cancelled before it
        started)."""
        if ev.reason == StopReason.CANCELLED and self.m.facts.justifying():
            return True  # instant cancel: accept, user message, idle(cancelled)
        return not (ev.reason is not None and self.m.queue.work_pending())

    @check("STATE-03", role=Role.GUARD)
    def stop_reason_present(self, ev: Payload) -> bool:
        """The idle that ends foreground work names why it ended."""
        return ev.reason is not None

    @check("ACPM-ONE-STOP", reading="A-05",
           levels={"warn": "rule", "forbid": "A-05.forbid", "allow": "off"}, role=Role.GUARD)
    def one_stop_reason(self, ev: Payload) -> bool:
        """An idle that ends no work carries no stop reason (a cancelled reply excepted)."""
        return ev.reason is None or ev.reason == StopReason.CANCELLED \
            or self.m.queue.work_pending()

    @check("STATE-05", role=Role.GUARD)
    def blocked_state_reported(self, ev: Payload) -> bool:
        """A user-action wait (a permission request or a session-scoped elicitation) that is
        over should have been reported as requires_action."""
        return not self.m.perm_book.block_unreported()

    @check("TOOL-02", role=Role.GUARD)
    def tool_titled_on_first_report(self, ev: Payload) -> bool:
        """The first tool_call_update of a toolCallId should carry its title."""
        return not ev.first_report or bool(ev.has_title) or ev.update != "update"

    @check("PERM-11", evidence="answer_evidence", role=Role.GUARD)
    def tool_respects_answer(self, ev: Payload) -> bool:
        """A guarded tool proceeds only after an allow; v1 forbids only going against an
        answer it read (before one, v1 says only that it SHOULD wait for the grant). A status
        sent while a reopen replayed the session's history proves nothing: it may be the
        history's (a load of a working session replays its tools as they ended)."""
        if ev.replayed:
            return True
        perm = self.m.facts.unapproved_start(ev)
        # (v1's leniency is its decision of reading A-31)
        return perm is None or (self.m.ctx.readings.chose("A-31", "read-answer")
                                and (perm.answer is None or not self.m.ctx.read(perm.answer_idx)))

    @check("STATE-06", role=Role.GUARD)
    def resumption_reported(self, ev: Payload) -> bool:
        """An approved tool that starts while requires_action is still shown: no running. So
        is a tool an answered elicitation was tied to that proceeds (whatever the user's
        action: the work it waited on goes on), with no other request open."""
        if self.m.state != "requires_action" or ev.status not in PROCEEDING_TOOL_STATUSES:
            return True
        book = self.m.perm_book
        perm = book.guard(ev.tool_call_id)
        if perm is None or perm.answer != Answer.ALLOW:
            perm = book.elicitation_for(ev.tool_call_id)
            if perm is None or perm.state != PermState.ANSWERED:
                return True
        return book.any_open()
