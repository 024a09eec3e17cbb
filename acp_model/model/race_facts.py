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
from acp_model.model.records import CancelRec, PermRec
from acp_model.model.vocab import (
    PROCEEDING_TOOL_STATUSES,
    QUIET,
    WORK,
    Answer,
    CancelStatus,
)
from acp_model.model.work import Work

__all__ = ["ModelSession", "RaceFacts"]


class ModelSession(Protocol):
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

    def __init__(self, m: ModelSession) -> None:
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
