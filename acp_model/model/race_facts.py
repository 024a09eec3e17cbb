"""The named queries the lifecycle checks and their evidence share: one per race fact.

Which cancels bind the work now ending, which were read, which are stale or held, what the
client may still answer: a guard asks one of these, and the evidence of the same check asks the
same one (:mod:`acp_model.model.evidence`), so a proof cannot drift from the verdict it
explains. :class:`RaceFacts` owns no state: it reads the session's books (prompts, cancels,
permissions, work) against what the agent has read (the shared ``Context``).
"""

from __future__ import annotations

from typing import Any, Protocol

from acp_model.model.cancel_book import OWING, CancelBook
from acp_model.model.context import Context
from acp_model.model.events import Payload
from acp_model.model.permission_book import PermissionBook
from acp_model.model.prompt_queue import PromptQueue
from acp_model.model.records import CancelRec, PermRec, PromptRec
from acp_model.model.vocab import (
    PROCEEDING_TOOL_STATUSES,
    QUIET,
    WORK,
    Answer,
    CancelStatus,
    PermState,
)
from acp_model.model.work import Work

__all__ = ["RaceFacts", "Session"]


class Session(Protocol):
    """What the views read of a :class:`~acp_model.model.session.SessionModel` (declared here,
    where the views start, so that they need not import the model that makes them)."""

    ctx: Context
    state: str
    queue: PromptQueue
    cancel_book: CancelBook
    perm_book: PermissionBook
    work: Work
    facts: RaceFacts


class RaceFacts:
    """The derived views of one :class:`~acp_model.model.session.SessionModel`."""

    __slots__ = ("m",)

    def __init__(self, m: Session) -> None:
        self.m = m

    def read(self, idx: int) -> bool:
        """The agent provably read the client message at ``idx`` (the read frontier)."""
        return self.m.ctx.read(idx)

    def is_stale(self, c: CancelRec) -> bool:
        """Met no work, read before it could reach any: not even a prompt it may have been
        read together with (``joined``) is still open."""
        return CancelBook.is_stale(c, self.m.ctx.read) and not self.joined(c)

    def joined(self, c: CancelRec) -> bool:
        """A prompt sent after the cancel while it was not yet provably read is still open:
        the agent may have read the two together and taken the prompt up first."""
        return c.joint and self.m.queue.sent_between(c.idx, c.joint_upto)

    def joint_only(self) -> list[CancelRec]:
        """The cancels that can explain a cancelled end of the work now ending, when each was
        read before that work began and only the order the agent handled it and the work's
        prompt in may make it reach the work (none else can explain it: empty)."""
        justifying = self.justifying()
        return justifying if justifying and all(c.joint_read for c in justifying) else []

    def ends_work(self, ev: Payload) -> bool:
        """An idle ends work when work was reported, or carries a reason after prompt work."""
        m = self.m
        return m.state in WORK or (ev.reason is not None and m.queue.work_pending())

    def busy(self) -> bool:
        """Foreground work, or accepted prompts whose work has not ended with an idle yet."""
        return self.m.state not in QUIET or bool(self.m.queue.prompts)

    def justifying(self) -> list[CancelRec]:
        """Cancels that can explain a cancelled stop reason for the work now ending."""
        cancels = self.m.cancel_book.cancels
        if self.m.state in WORK:
            return [c for c in cancels if c.status in OWING]
        return [c for c in cancels if c.status in OWING
                or (c.status == CancelStatus.QUIET and not self.is_stale(c))]

    def replies_owed(self) -> bool:
        """Only reading A-04=idle-cancelled makes a cancel that met no work owe an idle."""
        return self.m.ctx.readings.chose("A-04", "idle-cancelled")

    def concerns_work(self, c: CancelRec) -> bool:
        """Does this cancel concern the work in progress? (A held prompt's work is concerned
        only under A-10=cancel: a cancel also cancels the prompts held behind the work.)"""
        if c.reopened >= 0:
            return False  # it may not reach this work (replay.cancel_after_reopen)
        return c.status == CancelStatus.WORK or (
            c.status == CancelStatus.AMBIGUOUS
            and (not c.held or self.m.ctx.readings.chose("A-10", "cancel")))

    def owing_cancel(self) -> bool:
        return any(self.concerns_work(c) for c in self.m.cancel_book.cancels)

    def prior(self, c_idx: int) -> bool:
        """A prompt sent before ``c_idx`` may still be unfinished: it is open, or it was
        rejected but the work it started may outlive the rejection (A-28)."""
        return self.m.work.rejected or self.m.queue.sent_before(c_idx)

    def later_prompt_may_own(self, c: CancelRec) -> bool:
        """A prompt sent after the cancel may own the work that ends: it was accepted, or it
        was rejected but the work it started may outlive the rejection (A-28)."""
        return c.outrun or self.m.queue.accepted_after(c.idx)

    def binding_cancels(self) -> list[CancelRec]:
        """Cancels that oblige the work now ending to end ``cancelled`` (CANCEL-07).

        A cancel sent during observed work, or while a prompt it could cancel was still open
        (read before that prompt's work ended, it cancels it under every A-10 reading) unless a
        prompt sent after the cancel may own this work (accepted, or rejected with work that
        may outlive the rejection, A-28). Under reading A-11=sent, every cancel sent during
        observed work binds, read or not.
        """
        strict = self.m.ctx.readings.chose("A-33", "strict")
        return [c for c in _would_bind(self) if c.reopened < 0 and (c.done < 0 or strict)]

    def done_cancels(self) -> list[CancelRec]:
        """Cancels that would bind the work now ending (:meth:`binding_cancels`) but were
        written once the scripted model had released the turn's final response (``CancelRec
        .done``): nothing was left to abort, so by default (reading A-33=done) CANCEL-07
        only warns (A-33=strict: none, they bind)."""
        if self.m.ctx.readings.chose("A-33", "strict"):
            return []
        return [c for c in _would_bind(self) if c.reopened < 0 and c.done >= 0]

    def reopened_cancels(self) -> list[CancelRec]:
        """Cancels that would bind the work now ending (:meth:`binding_cancels`) but were sent
        after the client reopened the session while that work ran: whether they reach it is
        open (``replay.cancel_after_reopen``), so CANCEL-07 only warns."""
        return [c for c in _would_bind(self) if c.reopened >= 0]

    def held_cancels(self) -> list[CancelRec]:
        """Cancels read while the prompt whose work now ends was held behind other work: under
        A-10=cancel they bind this work too; by default the prompt may outlive them."""
        return [c for c in self.m.cancel_book.cancels
                if c.status == CancelStatus.AMBIGUOUS and c.held and c.prior and c.reopened < 0
                and not self.later_prompt_may_own(c) and self.read(c.idx)]

    def probable_cancels(self) -> list[CancelRec]:
        """Cancels sent during this work that no response proves read, but that the agent
        probably read: it acted on a later client message (a permission answer)."""
        ctx = self.m.ctx
        return [c for c in self.m.cancel_book.cancels if c.status == CancelStatus.WORK
                and c.reopened < 0 and not ctx.read(c.idx) and ctx.probably_read(c.idx)]

    def probably_read_cancels(self) -> int:
        """How many of this work's unread cancels the agent probably read: all that the
        probable frontier (shared, only growing) can still change for a verdict, since later
        cancels are sent after every index it can move to. None while the probable frontier
        is not above the proven one (every snapshot asks)."""
        ctx = self.m.ctx
        if not self.m.cancel_book.cancels or ctx.probable <= ctx.frontier:
            return 0
        return len(self.probable_cancels())

    def read_work_cancels(self) -> list[CancelRec]:
        """Cancels sent during this work that the agent provably read (CANCEL-05: no new
        permission requests after them, nor elicitations under reading A-32=new-work)."""
        return [c for c in self.m.cancel_book.cancels
                if c.status == CancelStatus.WORK and c.reopened < 0 and self.read(c.idx)]

    def replies_owed_before_work(self) -> list[CancelRec]:
        """Cancels that met no work, were read before new work began, and still owe their
        idle(cancelled) (reading A-04=idle-cancelled)."""
        read = self.m.ctx.read
        return [c for c in self.m.cancel_book.cancels
                if c.owes_reply and CancelBook.is_stale(c, read)]

    def swallowed_cancels(self) -> list[CancelRec]:
        """Cancels that owed an idle(cancelled), were provably read before this work ended,
        and are still unanswered (reading A-04=idle-cancelled)."""
        return [c for c in self.m.cancel_book.cancels
                if c.status == CancelStatus.AMBIGUOUS and c.owes_reply and self.read(c.idx)]

    def required_answers(self, perm_id: Any) -> frozenset[tuple[str, int | None]] | None:
        """The answers the client may still give to a permission request (CANCEL-04; reading
        A-14=both also allows error -32800 for a withdrawn one), ``None``: any answer."""
        return self.m.perm_book.required_answers(
            perm_id, error_too=self.m.ctx.readings.chose("A-14", "both"))

    def unapproved_start(self, ev: Payload) -> PermRec | None:
        """The permission request this tool update proceeds without (PERM-11), if any: an
        answer other than an allow option that the agent provably read, or no allow at all
        for a tool that never started before: the request still open (the client had sent
        nothing, so no timing can explain it: a stale answer taken for this request), or
        answered without an allow the agent may not have read yet (then it went ahead with
        no answer; had it read it, against one). A request the agent withdrew is its own to
        settle."""
        book = self.m.perm_book
        perm = book.guard(ev.tool_call_id)
        if ev.status not in PROCEEDING_TOOL_STATUSES or perm is None:
            return None
        if perm.answer in (Answer.ALLOW, Answer.CUSTOM_OPTION):
            return None  # a custom option kind means whatever the agent defined
        if perm.answer is not None and self.read(perm.answer_idx):
            return perm
        return None if book.started(ev.tool_call_id) or perm.withdrawn else perm

    # --- what a snapshot keeps of a record (``canon`` metadata, model.snapshot) -------------
    def canon_ran(self, ran: bool, rec: PromptRec) -> bool:
        """``PromptRec.ran`` in a snapshot: read only while quiet, and every work end sets it,
        so during work it is noise."""
        return ran or self.m.state in WORK

    def canon_owes_reply(self, owes: bool, rec: CancelRec) -> bool:
        """``CancelRec.owes_reply`` in a snapshot: read only under A-04=idle-cancelled."""
        return owes and self.replies_owed()

    def canon_outrun(self, outrun: bool, rec: CancelRec) -> bool:
        """``CancelRec.outrun`` in a snapshot: read only for a cancel that may reach an
        earlier prompt's work (``prior``, not yet during work); an idle clears it."""
        return outrun and rec.prior and rec.status != CancelStatus.WORK

    def canon_overlapped(self, overlapped: bool, rec: PermRec) -> bool:
        """``PermRec.overlapped`` in a snapshot: it only keeps ``unreported_block`` from being
        set, which is moot once the block is noted (only requires_action clears it, and the
        flag with it) or a cancel reached the request (``PermissionBook.silent_block``)."""
        return overlapped and not rec.unreported_block and not rec.owed_cancel

    def canon_sibling_answered(self, answered: bool, rec: PermRec) -> bool:
        """``PermRec.sibling_answered`` in a snapshot: read only while the request waits."""
        return answered and rec.state == PermState.OPEN

    def canon_joint(self, joint: bool, rec: CancelRec) -> bool:
        """``CancelRec.joint`` in a snapshot: read only through :meth:`joined` (``unjoin``
        only clears it). With no open prompt between the cancel and ``joint_upto`` it is dead:
        a later prompt is sent after ``joint_upto``, open prompts only leave, and the next
        ``prompt_sent`` that sets it sets ``joint_upto`` anew."""
        return joint and self.joined(rec)

    def canon_joint_upto(self, upto: int, rec: CancelRec) -> int:
        """``CancelRec.joint_upto`` in a snapshot: read only by :meth:`joined`, over the
        prompts open now (every later one is sent after it), so the last open prompt up to it
        stands for it; -1 (dead) when the cancel is joined with none (see
        :meth:`canon_joint`)."""
        if not rec.joint:
            return -1
        return max((p.idx for p in self.m.queue.prompts if rec.idx < p.idx <= upto),
                   default=-1)

    def canon_answer_idx(self, idx: int, rec: PermRec) -> int:
        """``PermRec.answer_idx`` in a snapshot: every check asks only whether the agent
        provably read the answer (PERM-11, STATE-06), which stays so once true (the frontier
        only grows); the resumption's ``acted_on`` and compaction's horizon compare it with
        the frontier too, and for a read answer neither moves anything above it. So a read
        answer's index is dead (-1, as no answer: the request's state and answer tell them
        apart)."""
        return -1 if self.m.ctx.read(idx) else idx

    def canon_rejected(self, rejected: bool, rec: None) -> bool:
        """``Work.rejected`` in a snapshot: read only through :meth:`prior`, by a cancel sent
        while quiet (``note_cancel``) and by the A-28=none rejection's recheck of the
        cancels' ``prior`` (``recheck_prior``, ``_settle_prompts``: both only clear a
        cancel's ``prior``). During work a cancel is recorded with no ``prior`` (it asks none),
        and work ends only with an idle, whose ``end_work`` clears the flag before it asks:
        during work it is dead unless some cancel still has ``prior``."""
        m = self.m
        return rejected and (m.state not in WORK
                             or any(c.prior for c in m.cancel_book.cancels))

    def canon_client_stopped(self, stopped: bool, rec: None) -> bool:
        """``Work.client_stopped`` in a snapshot: read only by CANCEL-11's checks of an
        idle(cancelled), whose action then sets it anew, and both pass whatever it says when
        that idle ends work a cancel owes (``justifying``; the warning also needs work that
        showed content, which the explorer's alphabet never reports). During work a cancel
        the work owes (``OWING``) stays until the idle that ends it: it is dead then."""
        m = self.m
        return stopped and not (m.state in WORK and any(c.status in OWING
                                                        for c in m.cancel_book.cancels))

    def canon_settled(self, value: Any, rec: PermRec) -> Any:
        """A permission request's answer, ``withdrawn`` and ``owed_cancel`` in a snapshot: once
        it is answered they are read only through the tool call it guards (PERM-11, STATE-06;
        the client never answers it again, CANCEL-04), so for a request guarding none they
        are noise (leaving them out halved the one-session exploration)."""
        tools = self.m.perm_book.tools
        if rec.state == PermState.ANSWERED and not (tools and any(
                t.perm == rec.id for t in tools.values())):
            return None
        return value


def _would_bind(f: RaceFacts) -> list[CancelRec]:
    """The cancels that bind the work now ending but for a reopen or a done turn (a function:
    the three queries above share it)."""
    cancels = f.m.cancel_book.cancels
    if f.m.ctx.readings.chose("A-11", "sent"):
        return [c for c in cancels if c.status == CancelStatus.WORK]
    return [c for c in cancels
            if (c.status == CancelStatus.WORK
                or (c.status == CancelStatus.AMBIGUOUS and c.prior and not c.held
                    and not f.later_prompt_may_own(c)))
            and f.read(c.idx)]
