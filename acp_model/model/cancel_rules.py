"""The lifecycle checks on cancellation: what a cancel obliges, and what justifies `cancelled`.

:class:`CancelRules` owns no state: each check asks the race facts
(:class:`~acp_model.model.race_facts.RaceFacts`) that its evidence
(:class:`~acp_model.model.evidence.Proofs`) asks too. The lifecycle names the checks
by reference (``cond=guards(CancelRules.cancel_honoured)``); the engine runs each on the part
of ``SessionModel.PARTS`` that holds it.
"""

from __future__ import annotations

from acp_model.model import wire_table
from acp_model.model.check import check
from acp_model.model.events import Payload
from acp_model.model.race_facts import ModelSession
from acp_model.model.vocab import Answer, CancelStatus, Level, Role, StopReason

__all__ = ["LATE_CONTENT_UPDATES", "CancelRules"]

LATE_CONTENT_UPDATES = wire_table.late_kinds()  # content a cancelled turn may still stream


class CancelRules:
    """Checks on ``session/cancel``: honoured, answered, not invented, not ignored."""

    __slots__ = ("m",)

    def __init__(self, m: ModelSession) -> None:
        self.m = m

    @check("CANCEL-04", role=Role.GUARD)
    def answer_honours_cancel(self, ev: Payload) -> bool:
        """After session/cancel the client answers pending permissions with `cancelled`."""
        allowed = self.m.facts.required_answers(ev.id)
        if allowed is None:
            return True
        code = ev.error_code if ev.answer == Answer.ERROR else None
        return (ev.answer, code) in allowed

    @check("A-04.idle-cancelled", reading="A-04",
           levels={"noop": "off", "idle-cancelled": "rule"}, evidence="reply_evidence",
           role=Role.GUARD)
    def idle_cancel_answered(self, ev: Payload) -> bool:
        """Under A-04=idle-cancelled a cancel read while idle is answered before new work
        (or a newer prompt's acceptance) begins."""
        return not self.m.facts.replies_owed_before_work()

    @check("CANCEL-07", reading="A-11", levels={"provable": "rule", "sent": "rule",
                                                "never": "off"}, evidence="cancel_evidence",
           role=Role.GUARD)
    def cancel_honoured(self, ev: Payload) -> bool:
        """Work during which the agent read session/cancel ends with `cancelled` (provably
        read, or under reading A-11=sent merely sent while the work was reported)."""
        return bool(ev.maybe_refusal) or ev.reason == StopReason.CANCELLED \
            or not self.m.facts.binding_cancels()  # (maybe a refusal: the warning below)

    @check("CANCEL-07", level=Level.WARN, evidence="probable_evidence", role=Role.GUARD)
    def cancel_probably_honoured(self, ev: Payload) -> bool:
        """Work during which the agent probably read session/cancel (it acted on a later
        client message) ends with `cancelled`; no response proves the read, so a warning.
        (v1: an error answering a prompt whose turn showed nothing, after a read cancel, is an
        abort error or the prompt's own refusal: the wire cannot tell, so a warning too.)"""
        if ev.reason == StopReason.CANCELLED:
            return True
        if ev.maybe_refusal:
            return not self.m.facts.binding_cancels()
        if not self.m.ctx.readings.chose("A-11", "provable"):
            return True
        return not self.m.facts.probable_cancels()

    @check("CANCEL-07", level=Level.WARN, evidence="reopened_evidence", role=Role.GUARD)
    def cancel_after_reopen_honoured(self, ev: Payload) -> bool:
        """Work during which the agent read a session/cancel sent after the client reopened
        the session (session/load, session/resume) ends with `cancelled`. Whether a reopen
        replaces the session the work runs in is not in the text, so the cancel may not
        reach it: a warning (agents' maintainers have fixed ignoring such a cancel as a bug)."""
        return ev.reason == StopReason.CANCELLED or not self.m.facts.reopened_cancels()

    @check("CANCEL-07", level=Level.WARN, evidence="done_evidence", role=Role.GUARD)
    def cancel_after_done_honoured(self, ev: Payload) -> bool:
        """Work during which the agent read a session/cancel written once the scripted model
        had released the turn's whole final response (no tool call in it, no model request
        open) ends with `cancelled`. The text binds `cancelled` to aborting ongoing
        operations, and none was left: answering with the turn's real end is defensible, so
        by default (reading A-33=done) a warning; A-33=strict fails it (the check above)."""
        return ev.reason == StopReason.CANCELLED or not self.m.facts.done_cancels()

    @check("A-10.cancel", reading="A-10", levels={"any": "warn", "cancel": "rule", "keep": "off"},
           evidence="held_evidence", role=Role.GUARD)
    def held_prompt_cancelled(self, ev: Payload) -> bool:
        """A prompt held behind other work when the agent read a cancel is cancelled too
        (reading A-10: the seed's text leaves it open, by default a warning; the sdk-2.4.0
        revision decides it)."""
        return ev.reason == StopReason.CANCELLED or not self.m.facts.held_cancels()

    @check("A-04.idle-cancelled", reading="A-04",
           levels={"noop": "off", "idle-cancelled": "rule"}, evidence="swallow_evidence",
           role=Role.GUARD)
    def idle_cancel_not_swallowed(self, ev: Payload) -> bool:
        """Under A-04=idle-cancelled, a cancel the agent provably read before this work ended
        is answered with `cancelled`: read during the work it cancels it, read before the
        work began it was owed an idle(cancelled) before that work."""
        return ev.reason == StopReason.CANCELLED or not self.m.facts.swallowed_cancels()

    @check("CANCEL-11", evidence="cause_evidence", role=Role.GUARD)
    def cancelled_has_cause(self, ev: Payload) -> bool:
        """`cancelled` answers a cancel that could still apply to the work being ended."""
        m = self.m
        if ev.reason != StopReason.CANCELLED or m.work.client_stopped:
            return True
        if ev.id is not None and len(m.queue.prompts) > 1 \
                and m.ctx.readings.chose("A-01", "forbid"):
            return True  # v1: the client held a second prompt open (forbidden); it may end this
        if m.facts.ends_work(ev):
            return bool(m.facts.justifying())
        return any(c.status == CancelStatus.QUIET for c in m.cancel_book.cancels)

    @check("CANCEL-11", level=Level.WARN, evidence="joint_evidence", role=Role.GUARD)
    def cancelled_not_only_by_order(self, ev: Payload) -> bool:
        """`cancelled` for work that showed content, whose only possible cause is a cancel
        read before the work began that may have reached it only because the agent handled
        it after the work's prompt, which the client sent before the cancel was provably read
        (as when both are written together): probable, a warning."""
        m = self.m
        if ev.reason != StopReason.CANCELLED or m.work.client_stopped \
                or not m.facts.ends_work(ev) or m.work.showed < 0:
            return True
        return not m.facts.joint_only()

    @check("SDK-ELICIT-01", evidence="elicitation_evidence", role=Role.GUARD)
    def blocking_elicitations_withdrawn(self, ev: Payload) -> bool:
        """Blocked work that ends cancelled withdrew ($/cancel_request) the elicitations it
        was blocked on before its cancelled idle, unless the client answered them (the agent
        said the work waited on them: requires_action while they were open)."""
        return ev.reason != StopReason.CANCELLED or not self.m.perm_book.unwithdrawn_blocking()

    @check("CANCEL-05", evidence="new_work_evidence", role=Role.GUARD)
    def no_new_work_after_cancel(self, ev: Payload) -> bool:
        """After provably reading a cancel, the agent does not ask for more permissions."""
        return not self.m.facts.read_work_cancels()

    @check("CANCEL-05", reading="A-32", levels={"accept": "off", "new-work": "rule"},
           evidence="new_elicitation_evidence", role=Role.GUARD)
    def no_new_elicitation_after_cancel(self, ev: Payload) -> bool:
        """Under A-32=new-work, after provably reading a cancel the agent does not ask the
        user for input either (a session-scoped elicitation is new work, as a permission
        request is)."""
        return self.no_new_work_after_cancel(ev)

    @check("CANCEL-09", reading="A-13", levels={"fail": "rule", "warn": "warn", "allow": "off"},
           role=Role.GUARD)
    def not_after_cancelled_idle(self, ev: Payload) -> bool:
        """Tool calls of cancelled work get no updates after the cancelled idle."""
        return ev.tool_call_id not in self.m.work.cancelled_tools

    @check("CANCEL-09", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "off", "v1": "rule"},
           evidence="late_content_evidence", role=Role.GUARD)
    def content_before_cancelled_end(self, ev: Payload) -> bool:
        """v1: content and tool calls of a cancelled turn come before the prompt's response
        (no message, thought or tool call after it while no prompt came since)."""
        if self.m.cancel_book.cancelled_end < 0 or ev.tool_call_id in self.m.work.cancelled_tools:
            return True  # nothing cancelled, or a tool of that work (the check above judges)
        return not (ev.update in LATE_CONTENT_UPDATES or ev.tool_call_id is not None)

    @check("V1-TURN-01", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "off", "v1": "rule"},
           evidence="late_turn_evidence", role=Role.GUARD)
    def content_before_turn_end(self, ev: Payload) -> bool:
        """v1: a turn's content comes before the response that ends it (no message, thought
        or tool call after it while no prompt came since); a warning (the rule's notes)."""
        if self.m.work.ended < 0:
            return True
        return not (ev.update in LATE_CONTENT_UPDATES or ev.tool_call_id is not None)
