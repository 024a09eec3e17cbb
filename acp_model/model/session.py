"""The session machine's model object: its extended state, guards (checks) and actions.

Control states are the foreground states a session reports (``unreported`` until the first
``state_update``, then ``idle`` / ``running`` / ``requires_action`` / ``custom`` for ``_x`` and
future states). Everything else the rules need (prompts awaiting acceptance, accepted prompts
awaiting their user message, open permission requests, outstanding cancels, tool calls of the
current work) lives in :class:`SessionModel`, which is also the machine's model object.

Events are classified wire messages in both directions (``vocab.EVENTS``); the machine that
they move is declared in :mod:`acp_model.model.lifecycle`. Every transition's guards are
*checks*: pure predicates tagged with the rule they enforce (``@check``). When a check fails,
the transition is refused, which is a violation of that rule; the monitor records it and
then takes the transition anyway (the client must keep following what the agent reports), so
one bug does not drown the rest of the trace in follow-up errors.

Race soundness. The agent runs concurrently with the client; the trace is in the order the
client sent and received messages. Stdio is FIFO per direction, so once the agent has answered a
client request sent at trace index ``i`` it has provably read every client message up to ``i``:
``Context.read`` asks the read frontier (:mod:`acp_model.model.context`). A check never relies
on the agent having read something unless the frontier proves it. The cancel bookkeeping
(``CancelRec``, statuses ``CancelStatus``) is the small automaton that follows each
``session/cancel`` through that reasoning:

* ``W`` -- sent while the client saw foreground work. Once provably read, the work must end
  with ``cancelled`` (CANCEL-07); until then an ``end_turn`` is a legal race and the cancel
  becomes ``I``.
* ``I`` -- sent (or left over) while the session was quiet. At the next work start it is
  *stale* if the agent provably read it before that work began and no prompt sent before it was
  still unfinished: it cannot justify a ``cancelled`` stop reason (CANCEL-11, the "late cancel
  kills the next turn" bug). Otherwise it becomes ``A``. While quiet it tolerates one
  ``idle(cancelled)`` in reply (reading A-04).
* ``A`` -- ambiguous: it may or may not have been read before the work began, so it justifies a
  ``cancelled`` stop reason but creates no obligation.
"""


from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from acp_model.model.check import allowance, check
from acp_model.model.context import Context
from acp_model.model.events import Ev
from acp_model.model.evidence import EvidenceMixin
from acp_model.model.obligations import ObligationsMixin
from acp_model.model.race_facts import OWING, RaceFactsMixin
from acp_model.model.records import (
    EXPLAINS,
    LIVE_CONTENT,
    LIVE_ONLY,
    RETIRED,
    CancelRec,
    PermRec,
    PromptRec,
    ToolRec,
)
from acp_model.model.vocab import (
    PROCEEDING_TOOL_STATUSES,
    QUIET,
    WORK,
    Answer,
    CancelStatus,
    Level,
    PermState,
    PromptStatus,
    State,
    StopReason,
)

__all__ = ["SessionModel"]

REJECTED_KEPT = 32  # rejected prompts whose text SDK-PROMPT-03 still looks for
LATE_CONTENT_UPDATES = frozenset({"agent_message_chunk", "agent_thought_chunk"})


@dataclass
class SessionModel(RaceFactsMixin, EvidenceMixin, ObligationsMixin):
    """Extended state of one session, and every lifecycle check and action."""

    # what the shared context decides beyond the read frontier (see model.snapshot)
    SNAPSHOT_QUERIES: ClassVar[tuple[str, ...]] = ("probably_read_cancels",)

    sid: str
    ctx: Context = field(default_factory=Context)
    state: str = "unreported"
    prompts: list[PromptRec] = field(default_factory=list)
    early_user_messages: int = 0
    cancels: list[CancelRec] = field(default_factory=list)
    perms: dict[Any, PermRec] = field(default_factory=dict)
    # Requests done with, out of the scans (:meth:`retire`), found by id for their tools.
    retired: dict[Any, PermRec] = field(default_factory=dict, metadata=RETIRED)
    tools: dict[str, ToolRec] = field(default_factory=dict)
    work_tools: set[str] = field(default_factory=set)
    cancelled_tools: set[str] = field(default_factory=set)
    # The newer revision's receipts: ids of receipts not yet echoed by a user message (-> the
    # receipt's index), every receipt id, and every user message id reported.
    receipts_owed: dict[str, int] = field(default_factory=dict, metadata=LIVE_ONLY)
    receipt_ids: dict[str, int] = field(default_factory=dict, metadata=LIVE_ONLY)
    user_ids: set[str] = field(default_factory=set, metadata=LIVE_ONLY)
    # Explanations only (not in the snapshot): where the current work began, and the cancels
    # dropped at its start because the agent had provably read them before (CANCEL-11).
    work_began: int = field(default=-1, metadata=EXPLAINS)
    # A prompt was rejected since the last idle (reading A-28=may): the work it started before
    # its rejection may still run, unreported, until an idle ends it.
    rejected_work: bool = False
    # The client stopped work another way since the last idle: it withdrew a prompt with
    # $/cancel_request (its activity may be cancelled, cancellation.mdx; an idle keeps this
    # while such a prompt is listed, its work still to come), or, in the newer revision,
    # refused a permission ("an interaction the agent offers"): either may explain a
    # cancelled stop reason, and neither obliges one.
    client_stopped: bool = False
    # the first text of prompts answered with an error -> (prompt, response) (SDK-PROMPT-03)
    rejected_texts: dict[str, tuple[int, int]] = field(default_factory=dict,
                                                       metadata=LIVE_ONLY)
    stale_cancels: list[int] = field(default_factory=list, metadata=EXPLAINS)
    # where work last ended cancelled, no prompt since (-1: none): v1's CANCEL-09 reads it
    cancelled_end: int = field(default=-1, metadata=LIVE_CONTENT)

    # =====================================================================================
    # Checks (guards). Pure: they read the model and the event, never change anything.
    # =====================================================================================

    @check("A-01.forbid", reading="A-01", levels={"join": "off", "forbid": "rule"})
    def prompt_while_busy_allowed(self, ev: Ev) -> bool:
        """Under reading A-01=forbid the client may only prompt a quiet session whose prompts
        are all answered and ended (v1: 'Once a prompt turn completes')."""
        return self.state not in WORK and not self.prompts

    @check("CANCEL-04")
    def answer_honours_cancel(self, ev: Ev) -> bool:
        """After session/cancel the client answers pending permissions with `cancelled`."""
        allowed = self.required_answers(ev.id)
        if allowed is None:
            return True
        code = ev.error_code if ev.answer == Answer.ERROR else None
        return (ev.answer, code) in allowed

    @check("PROMPT-05")
    def acknowledgement_only(self, ev: Ev) -> bool:
        """The prompt result acknowledges acceptance; a v1-style stopReason is a leftover."""
        return not ev.result_keys or "stopReason" not in ev.result_keys

    @check("SDK-RECEIPT-03", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="receipt_evidence")
    def receipt_names_a_new_message(self, ev: Ev) -> bool:
        """A receipt names a user message no earlier receipt of the session named (message ids
        are unique per type within a session; two prompts are two messages)."""
        return ev.message_id is None or ev.message_id not in self.receipt_ids

    @check("SDK-PROMPT-02", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="insertion_evidence")
    def no_error_after_insertion(self, ev: Ev) -> bool:
        """A prompt whose user message was inserted is not answered with an error."""
        p = self._prompt(ev.id)
        return p is None or p.echo_idx < 0

    @check("SDK-PROMPT-03", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "rule"},
           evidence="rejected_insertion_evidence")
    def rejected_prompt_not_inserted(self, ev: Ev) -> bool:
        """A prompt answered with an error was not inserted: no user message carries it."""
        return self.inserted_rejected(ev) is None

    def inserted_rejected(self, ev: Ev) -> tuple[int, int] | None:
        """The (prompt, error response) whose first text this user message carries, when no
        prompt still open has that text (only a unique match tells whose it is)."""
        found = self.rejected_texts.get(ev.text_key or "")
        if found is None or any(p.text_key == ev.text_key for p in self.prompts):
            return None
        return found

    @check("A-03.diagram", reading="A-03", levels={"free": "off", "diagram": "rule"})
    def user_message_after_accept(self, ev: Ev) -> bool:
        """Diagram order: the user message follows the prompt response."""
        if ev.new_message is False:
            return True
        return self.count(PromptStatus.ACCEPTED) > 0 or self.count(PromptStatus.PENDING) == 0

    @check("A-03.diagram", reading="A-03", levels={"free": "off", "diagram": "rule"})
    def running_after_user_message(self, ev: Ev) -> bool:
        """Diagram order: running follows the prompt response and the user message."""
        if self.count(PromptStatus.ACCEPTED) > 0:
            return False
        return not (self.count(PromptStatus.PENDING) > 0
                    and self.count(PromptStatus.INSERTED) == 0)

    @check("A-07.forbid", reading="A-07", levels={"allow": "off", "forbid": "rule"})
    def work_has_a_prompt(self, ev: Ev) -> bool:
        """Under A-07=forbid, foreground work only exists because of a prompt."""
        return bool(self.prompts)

    @check("STATE-01", reading="A-16", levels={"strict": "rule", "lenient": "warn",
                                               "allow": "off"})
    def running_before_blocking(self, ev: Ev) -> bool:
        """requires_action straight from a quiet session skips the running report."""
        return False

    @check("STATE-01", reading="A-09", levels={"strict": "rule", "lenient": "warn"})
    def prompt_work_announced(self, ev: Ev) -> bool:
        """An idle with a stop reason after accepted prompts ends work that never ran (a
        cancelled idle answering a cancel excepted: that work was cancelled before it
        started)."""
        if ev.reason == StopReason.CANCELLED and self._justifying():
            return True  # instant cancel: accept, user message, idle(cancelled)
        return not (ev.reason is not None and self._prompt_work_pending())

    @check("A-04.idle-cancelled", reading="A-04",
           levels={"noop": "off", "idle-cancelled": "rule"}, evidence="reply_evidence")
    def idle_cancel_answered(self, ev: Ev) -> bool:
        """Under A-04=idle-cancelled a cancel read while idle is answered before new work
        (or a newer prompt's acceptance) begins."""
        return not self.replies_owed_before_work()

    @check("STATE-03")
    def stop_reason_present(self, ev: Ev) -> bool:
        """The idle that ends foreground work names why it ended."""
        return ev.reason is not None

    @check("CANCEL-07", reading="A-11", levels={"provable": "rule", "sent": "rule",
                                                "never": "off"}, evidence="cancel_evidence")
    def cancel_honoured(self, ev: Ev) -> bool:
        """Work during which the agent read session/cancel ends with `cancelled` (provably
        read, or under reading A-11=sent merely sent while the work was reported)."""
        return ev.shown is False or ev.reason == StopReason.CANCELLED \
            or not self.binding_cancels()  # (v1, a silent turn: cancel_probably_honoured)

    @check("CANCEL-07", level=Level.WARN, evidence="probable_evidence")
    def cancel_probably_honoured(self, ev: Ev) -> bool:
        """Work during which the agent probably read session/cancel (it acted on a later
        client message) ends with `cancelled`; no response proves the read, so a warning.
        (v1: an error answering a prompt whose turn showed nothing, after a read cancel, is an
        abort error or the prompt's own refusal: the wire cannot tell, so a warning too.)"""
        if ev.reason == StopReason.CANCELLED:
            return True
        if ev.shown is False:
            return not self.binding_cancels()
        if not self.ctx.readings.chose("A-11", "provable"):
            return True
        return not self.probable_cancels()

    @check("A-10.cancel", reading="A-10", levels={"any": "warn", "cancel": "rule", "keep": "off"},
           evidence="held_evidence")
    def held_prompt_cancelled(self, ev: Ev) -> bool:
        """A prompt held behind other work when the agent read a cancel is cancelled too
        (reading A-10: the seed's text leaves it open, by default a warning; the sdk-2.4.0
        revision decides it)."""
        return ev.reason == StopReason.CANCELLED or not self.held_cancels()

    @check("A-04.idle-cancelled", reading="A-04",
           levels={"noop": "off", "idle-cancelled": "rule"}, evidence="swallow_evidence")
    def idle_cancel_not_swallowed(self, ev: Ev) -> bool:
        """Under A-04=idle-cancelled, a cancel the agent provably read before this work ended
        is answered with `cancelled`: read during the work it cancels it, read before the
        work began it was owed an idle(cancelled) before that work."""
        return ev.reason == StopReason.CANCELLED or not self.swallowed_cancels()

    @check("CANCEL-11", evidence="cause_evidence")
    def cancelled_has_cause(self, ev: Ev) -> bool:
        """`cancelled` answers a cancel that could still apply to the work being ended."""
        if ev.reason != StopReason.CANCELLED or self.client_stopped:
            return True
        if ev.id is not None and len(self.prompts) > 1 and self.ctx.readings.chose("A-01","forbid"):
            return True  # v1: the client held a second prompt open (forbidden); it may end this
        if self._ends_work(ev):
            return bool(self._justifying())
        return any(c.status == CancelStatus.QUIET for c in self.cancels)

    @check("ACPM-ONE-STOP", reading="A-05",
           levels={"warn": "rule", "forbid": "A-05.forbid", "allow": "off"})
    def one_stop_reason(self, ev: Ev) -> bool:
        """An idle that ends no work carries no stop reason (a cancelled reply excepted)."""
        return ev.reason is None or ev.reason == StopReason.CANCELLED or self._prompt_work_pending()

    @check("STATE-05")
    def blocked_state_reported(self, ev: Ev) -> bool:
        """A permission wait that is over should have been reported as requires_action."""
        return not any(p.unreported_block and p.state != PermState.OPEN
                       for p in self.perms.values())

    @check("CANCEL-05", evidence="new_work_evidence")
    def no_new_work_after_cancel(self, ev: Ev) -> bool:
        """After provably reading a cancel, the agent does not ask for more permissions."""
        return not self.read_work_cancels()

    @check("TOOL-02")
    def tool_titled_on_first_report(self, ev: Ev) -> bool:
        """The first tool_call_update of a toolCallId should carry its title."""
        return not ev.first_report or bool(ev.has_title) or ev.update != "update"

    @check("PERM-11", evidence="answer_evidence")
    def tool_respects_answer(self, ev: Ev) -> bool:
        """A guarded tool proceeds only after an allow; v1 forbids only going against an
        answer it read (before one, v1 says only that it SHOULD wait for the grant)."""
        perm = self.unapproved_start(ev)
        return perm is None or (self.ctx.readings.chose("SPEC", "v1")
                                and (perm.answer is None or not self._read(perm.answer_idx)))

    @check("STATE-06")
    def resumption_reported(self, ev: Ev) -> bool:
        """An approved tool that starts while requires_action is still shown: no running."""
        if self.state != "requires_action" or ev.status not in PROCEEDING_TOOL_STATUSES:
            return True
        perm = self._guard(ev)
        if perm is None or perm.answer != Answer.ALLOW:
            return True
        return any(p.state == PermState.OPEN for p in self.perms.values())

    @check("CANCEL-09", reading="A-13", levels={"fail": "rule", "warn": "warn", "allow": "off"})
    def not_after_cancelled_idle(self, ev: Ev) -> bool:
        """Tool calls of cancelled work get no updates after the cancelled idle."""
        return ev.tool_call_id not in self.cancelled_tools

    @check("CANCEL-09", reading="SPEC", levels={"seed": "off", "sdk-2.4.0": "off", "v1": "rule"},
           evidence="late_content_evidence")
    def content_before_cancelled_end(self, ev: Ev) -> bool:
        """v1: content and tool calls of a cancelled turn come before the prompt's response
        (no message, thought or tool call after it while no prompt came since)."""
        if self.cancelled_end < 0 or ev.tool_call_id in self.cancelled_tools:
            return True  # nothing cancelled, or a tool of that work (the check above judges)
        return not (ev.update in LATE_CONTENT_UPDATES or ev.tool_call_id is not None)

    # =====================================================================================
    # Actions. They run after the checks and update the extended state.
    # =====================================================================================

    @allowance("PROMPT-10", "PROMPT-08")
    def note_prompt(self, ev: Ev) -> None:
        self.cancelled_end = -1
        self.prompts.append(PromptRec(ev.idx, ev.id, content_key=ev.content_key,
                                      text_key=ev.text_key))

    def _prompt(self, req_id: Any) -> PromptRec | None:
        return next((p for p in self.prompts if p.id == req_id
                     and type(p.id) is type(req_id)), None)

    @allowance("CANCEL-01")
    def note_cancel(self, ev: Ev) -> None:
        if self.state in WORK:
            self.cancels.append(CancelRec(ev.idx, CancelStatus.WORK))
        else:
            prior = self._prior(ev.idx)
            self.cancels.append(CancelRec(ev.idx, CancelStatus.QUIET, prior=prior,
                                          owes_reply=not prior))
        for perm in self.perms.values():
            if perm.state != PermState.ANSWERED:
                perm.owed_cancel = True

    @allowance("CANCEL-13")
    def note_prompt_cancel_request(self, ev: Ev) -> None:
        """$/cancel_request for a pending prompt: the response is still owed (CANCEL-14), and
        the agent may cancel the prompt's activity (its work may then end cancelled)."""
        self.client_stopped = True
        prompt = self._prompt(ev.id)
        if prompt is not None:
            prompt.withdrawn = True

    @allowance("PERM-09")
    def note_permission_answer(self, ev: Ev) -> None:
        perm = self.perms.get(ev.id)
        if perm is None:
            return
        if ev.answer != Answer.ALLOW and self.ctx.readings.chose("A-29", "may") \
                and self.state in WORK:
            self.client_stopped = True  # a refusal may tell the agent to stop
        perm.state = PermState.ANSWERED
        perm.answer = ev.answer
        perm.answer_idx = ev.idx
        for other in self.perms.values():  # each was sent before this answer
            if other is not perm:
                other.sibling_answered = True
        perm.overlapped = False  # read only while it waits

    def note_accept(self, ev: Ev) -> None:
        if ev.message_id is not None:  # a receipt (the newer revision's acknowledgement)
            self.receipt_ids.setdefault(ev.message_id, ev.idx)
            if ev.message_id not in self.user_ids:
                self.receipts_owed[ev.message_id] = ev.idx
        for p in self.prompts:
            if p.id == ev.id and p.status == PromptStatus.PENDING:
                if self.early_user_messages:
                    self.early_user_messages -= 1
                    p.status = PromptStatus.INSERTED
                else:
                    p.status = PromptStatus.ACCEPTED
                break

    def note_reject(self, ev: Ev) -> None:
        rejected = self._prompt(ev.id)
        if rejected is not None and rejected.text_key is not None \
                and rejected.status == PromptStatus.PENDING:
            self.rejected_texts[rejected.text_key] = (rejected.idx, ev.idx)
            while len(self.rejected_texts) > REJECTED_KEPT:
                del self.rejected_texts[next(iter(self.rejected_texts))]
        self.prompts = [p for p in self.prompts
                        if not (p.id == ev.id and p.status == PromptStatus.PENDING)]
        if self.ctx.readings.chose("A-28", "may"):
            # The work it may have started lives on until an idle: every cancel sent so far
            # keeps what it could stop, and later ones may stop that work too. The work that
            # ends next may be this prompt's, which the cancels sent before it do not reach.
            self.rejected_work = True
            if rejected is not None and rejected.status == PromptStatus.PENDING:
                for c in self.cancels:
                    c.outrun = c.outrun or c.idx < rejected.idx
            return
        self.client_stopped = False  # (A-28=none) what a withdrawal could stop ended here
        for c in self.cancels:  # a rejected prompt is no longer work a cancel could stop
            c.prior = c.prior and self._prior(c.idx)
        self._settle_prompts()

    @allowance("MSG-02", "PROMPT-06", "SDK-RECEIPT-02")
    def note_user_message(self, ev: Ev) -> None:
        if ev.message_id is not None:
            self.user_ids.add(ev.message_id)
            self.receipts_owed.pop(ev.message_id, None)
        if ev.content_key is not None:  # whose content is it? (only a unique match tells)
            open_with_it = [p for p in self.prompts if p.status == PromptStatus.PENDING
                            and p.content_key == ev.content_key]
            if len(open_with_it) == 1 and open_with_it[0].echo_idx < 0:
                open_with_it[0].echo_idx = ev.idx
        if ev.message_id is None or ev.new_message is False:
            return
        accepted = [p for p in self.prompts if p.status == PromptStatus.ACCEPTED]
        if accepted:
            # Which prompt it belongs to is not on the wire; marking the latest one
            # keeps the earliest prompts "unfinished", the cautious choice for CANCEL-11.
            accepted[-1].status = PromptStatus.INSERTED
        else:
            self.early_user_messages += 1

    def start_work(self, ev: Ev) -> None:
        """Quiet -> work: sort leftover cancels into stale (dropped) and ambiguous."""
        kept = []
        self.work_began = ev.idx
        self.stale_cancels = []
        for c in self.cancels:
            if c.status == CancelStatus.QUIET:
                if self._is_stale(c):
                    self.stale_cancels.append(c.idx)
                    continue
                c.status = CancelStatus.AMBIGUOUS
            kept.append(c)
        self.cancels = kept
        self.cancelled_tools = set()
        self.work_tools = set()
        self.cancelled_end = -1
        for p in self.prompts:
            p.ran = True

    def note_blocked(self, ev: Ev) -> None:
        for perm in self.perms.values():
            perm.unreported_block = perm.overlapped = False  # it says the work is blocked now

    def note_resumed(self, ev: Ev) -> None:
        for perm in self.perms.values():
            if perm.state != PermState.OPEN:
                perm.unreported_block = False

    def note_overlap(self, ev: Ev) -> None:
        """Running reported while a request waits: the agent says other work progresses."""
        for perm in self.perms.values():
            if perm.state == PermState.OPEN:
                perm.overlapped = True

    def note_resumption(self, ev: Ev) -> None:
        """Blocked work runs again: the agent probably read the answers that unblocked it."""
        self.note_resumed(ev)
        for perm in self.perms.values():
            if perm.state == PermState.ANSWERED:
                self.ctx.acted_on(perm.answer_idx, ev.idx)

    @allowance("STATE-04", "STATE-02", "CANCEL-06")
    def end_work(self, ev: Ev) -> None:
        """An idle that ends foreground work: settle cancels, prompts and tool calls."""
        self.rejected_work = False  # what stopped the work ends with it
        if self.state in QUIET:
            self.start_work(ev)  # unreported work (already reported under STATE-01)
        cancelled = ev.reason == StopReason.CANCELLED
        served: list[CancelRec] = []  # cancels this idle answered or already judged
        if cancelled:
            justifying = [c for c in self.cancels if c.status in OWING]
            served += justifying[:1]
            self.cancelled_tools = set(self.work_tools)
            # v1's "before responding" is said of session/cancel: a turn ended cancelled
            # only because the client withdrew its prompt ($/cancel_request) is not bound
            self.cancelled_end = ev.idx if justifying else -1
        # Read during this work: judged by CANCEL-07 above.
        served += [c for c in self.cancels
                   if c.status == CancelStatus.WORK and self._read(c.idx) and c not in served]
        self.prompts = [p for p in self.prompts if not p.ended_by(ev.id)]
        for p in self.prompts:
            p.ran = True
        # ... but a withdrawn prompt whose work is still to come may see it end cancelled
        self.client_stopped = self._withdrawal_pending()
        kept = []
        keep_held = not self.ctx.readings.chose("A-10", "keep")
        for c in self.cancels:
            c.outrun = False  # the rejected prompts' work ended here too
            if c in served:
                if not self._prior(c.idx) or not keep_held:
                    continue
                # A prompt sent before it is still open (not yet accepted, say): it was held
                # behind this work, and whether the same cancel reaches it is reading A-10.
                c.status, c.prior, c.owes_reply = CancelStatus.QUIET, True, False
                c.held = True
            elif c.status in OWING:
                # Unread when the work ended (a race): the agent meets it while quiet. After a
                # cancelled idle it may already have been answered. A prompt sent before it
                # may have been held behind this work when the agent read it: nothing on the
                # wire can show the cancel was read after the work ended (it was sent
                # before), so whether it reaches that prompt is reading A-10.
                prior = self._prior(c.idx)
                c.owes_reply = not cancelled and (c.status == CancelStatus.WORK
                                                  or c.owes_reply)
                c.held = c.held or prior
                c.status = CancelStatus.QUIET
                c.prior = prior
                if c.held and not keep_held:
                    continue
            kept.append(c)
        self.cancels = kept
        self._settle_prompts()
        self.work_tools = set()
        self.note_resumed(ev)

    def settle_idle(self, ev: Ev) -> None:
        """An idle that ends no work; a cancelled one answers a cancel read while quiet."""
        if self._ends_work(ev):
            self.end_work(ev)
            return
        self.rejected_work = False  # nothing outlives an idle but a withdrawn prompt's work
        self.client_stopped = self._withdrawal_pending()
        for c in self.cancels:
            c.outrun = False
        if ev.reason == StopReason.CANCELLED:
            quiet = [c for c in self.cancels if c.status == CancelStatus.QUIET]
            if quiet:  # under A-04=idle-cancelled, answer the one that owes a reply first
                owing = [c for c in quiet if c.owes_reply] if self._replies_owed() else []
                self.cancels.remove((owing or quiet)[0])
        self.note_resumed(ev)

    def _settle_prompts(self) -> None:
        if not self.prompts and not self.rejected_work:
            for c in self.cancels:
                c.prior = False

    @allowance("PERM-01", "PERM-13")
    def note_permission_request(self, ev: Ev) -> None:
        # a reused id names the new request from now on, the newest in order
        self.retired.pop(ev.id, None)
        self.perms.pop(ev.id, None)
        perm = PermRec(ev.id, ev.idx, ev.tool_call_id, MappingProxyType(dict(ev.options or {})))
        perm.owed_cancel = self._owing_cancel()
        self.perms[ev.id] = perm
        if ev.tool_call_id is not None:
            tool = self.tools.setdefault(ev.tool_call_id, ToolRec())
            tool.perm = ev.id
            if self.state in WORK:
                self.work_tools.add(ev.tool_call_id)

    def note_withdraw(self, ev: Ev) -> None:
        perm = self.perms.get(ev.id)
        if perm is not None and perm.state == PermState.OPEN:
            perm.state = PermState.WITHDRAWN
            perm.withdrawn = True
            perm.overlapped = False  # read only while it waits

    @allowance("TOOL-10", "CANCEL-08")
    def note_tool_update(self, ev: Ev) -> None:
        perm = self._guard(ev)
        if perm is not None and perm.state == PermState.ANSWERED and ev.status is not None:
            self.ctx.acted_on(perm.answer_idx, ev.idx)  # it moved the tool the answer decided
        tool = self.tools.setdefault(ev.tool_call_id or "", ToolRec())
        if ev.status in PROCEEDING_TOOL_STATUSES:
            tool.started = True
        if self.state in WORK:
            self.work_tools.add(ev.tool_call_id or "")
        self._note_silent_block()

    @allowance("STATE-07", "USAGE-01", "PROMPT-13")
    def note_output(self, ev: Ev) -> None:
        """Other session updates: legal in every state; they never change the state."""
        self._note_silent_block()

    def _note_silent_block(self) -> None:
        """The agent wrote something while a request it sent blocks the work it reports as
        running: it could have reported requires_action (STATE-05). A request a cancel
        reached holds nothing up any more: the work is winding down, running is its state.
        Nor does one the agent reported running after, or one whose sibling was answered
        since it was sent: other work (the answered request's tool, say) may be what
        progresses ("If other foreground work can progress, the state remains running",
        sdk-2.4.0 $defs.StateUpdate; the seed's "blocked" alike)."""
        if self.state == State.RUNNING:
            for perm in self.perms.values():
                if perm.state == PermState.OPEN and not perm.owed_cancel \
                        and not perm.overlapped and not perm.sibling_answered:
                    perm.unreported_block = True
