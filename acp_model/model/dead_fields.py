"""What a snapshot keeps of a session's records: each field the model states dead in some
configuration (a ``canon`` entry in the field's metadata, read by :mod:`acp_model.model.snapshot`)
maps to its canonical value there, so the explorer gives configurations that differ only in
dead values one node. Each method says which checks read the field and why none can any more;
``explore(canon=False)`` keys by every value, and the canon test compares the two graphs.
A view that owns no state, beside :class:`~acp_model.model.race_facts.RaceFacts` whose queries
it asks.
"""

from __future__ import annotations

from typing import Any

from acp_model.model.cancel_book import OWING
from acp_model.model.race_facts import ModelSession, RaceFacts
from acp_model.model.records import CancelRec, PermRec, PromptRec
from acp_model.model.vocab import WORK, CancelStatus, PermState, State

__all__ = ["DeadFields"]

# Plain references to the members these methods compare on every snapshot (a member read
# through its enum class goes through EnumType's __getattr__ hook on Python 3.11, about 2.5
# times a plain class attribute; the explorer's observers do the same, explorer.config).
_QUIET, _AMBIGUOUS = CancelStatus.QUIET, CancelStatus.AMBIGUOUS
_OPEN, _ANSWERED = PermState.OPEN, PermState.ANSWERED
_RUNNING = State.RUNNING


class DeadFields:
    """The canonical value of each field a snapshot may find dead (``canon`` metadata)."""

    __slots__ = ("facts", "m")

    def __init__(self, m: ModelSession) -> None:
        self.m = m
        # the race facts several methods ask, made once per view (a snapshot asks a few
        # per record: made on each use, they were a fifth of the views a snapshot made)
        self.facts = RaceFacts(m)

    def canon_ran(self, ran: bool, rec: PromptRec) -> bool:
        """``PromptRec.ran`` in a snapshot: read only while quiet, and every work end sets it,
        so during work it is noise."""
        return ran or self.m.state in WORK

    def canon_owes_reply(self, owes: bool, rec: CancelRec) -> bool:
        """``CancelRec.owes_reply`` in a snapshot: read only under A-04=idle-cancelled."""
        return owes and self.facts.replies_owed()

    def canon_outrun(self, outrun: bool, rec: CancelRec) -> bool:
        """``CancelRec.outrun`` in a snapshot: read only through
        ``RaceFacts.later_prompt_may_own``, by ``held_cancels`` and ``_would_bind`` for an
        ambiguous cancel with ``prior`` (where :meth:`canon_prior` folds it in), and an idle
        clears it: so it is live only on a quiet cancel with ``prior``, the outrun it carries
        into the work, and not while a prompt sent after it is accepted (which
        ``later_prompt_may_own`` reads as well, :meth:`_owned_later`)."""
        return outrun and rec.prior and rec.status == _QUIET \
            and not self._owned_later(rec)

    def canon_prior(self, prior: bool, rec: CancelRec) -> bool:
        """``CancelRec.prior`` in a snapshot: of an ambiguous cancel (met while work ran) it is
        read only by ``held_cancels`` and ``_would_bind`` (CANCEL-07/-11 at the idle ending
        the work), both only when no later prompt may own the work
        (``later_prompt_may_own``: ``outrun``, or a prompt sent after the cancel is accepted),
        and ``end_work`` sets it anew without reading it. Until then ``prior`` can only be
        cleared (``recheck_prior``), ``outrun`` only set (``outrun_by``) and an accepted
        prompt only stay (:meth:`_owned_later`), so the one bit those checks read is
        ``prior`` and not ``later_prompt_may_own``. (A quiet cancel's is read by
        ``is_stale`` whatever the prompts.)"""
        if rec.status == _AMBIGUOUS:
            return prior and not rec.outrun and not self._owned_later(rec)
        return prior

    def _owned_later(self, rec: CancelRec) -> bool:
        """A prompt sent after the cancel is accepted (``PromptQueue.accepted_after``): it
        stays so until the idle that ends the work (an accepted prompt leaves the queue only
        through ``PromptQueue.end``, in ``end_work``, which clears ``outrun`` and sets the
        ambiguous cancels' ``prior`` anew), so ``later_prompt_may_own`` holds until then."""
        return self.m.queue.accepted_after(rec.idx)

    def canon_overlapped(self, overlapped: bool, rec: PermRec) -> bool:
        """``PermRec.overlapped`` in a snapshot: it only keeps ``unreported_block`` from being
        set, which is moot once the block is noted (only requires_action clears it, and the
        flag with it), a cancel reached the request or a sibling was answered
        (``PermissionBook.silent_block``; neither is ever cleared). ``silent_block`` runs only
        while running, and every way into running reports running, whose ``note_overlap``
        sets the flag of every waiting request: in any other state it is dead."""
        return overlapped and self.m.state == _RUNNING and not rec.unreported_block \
            and not rec.owed_cancel and not rec.sibling_answered

    def canon_held(self, held: bool, rec: CancelRec) -> bool:
        """``CancelRec.held`` in a snapshot: read only of an ambiguous cancel (``held_cancels``,
        ``_would_bind``, ``concerns_work``) and by ``end_work``, which meets no quiet cancel.
        A quiet cancel that is stale (``RaceFacts.is_stale``: read, no ``prior``, joined with
        no open prompt) stays so (the frontier only grows, ``prior`` and ``joint`` are set
        only for a cancel sent or met at the time) and is dropped when work starts, or
        answered by an idle while quiet: it never turns ambiguous, so its ``held`` is dead."""
        return held and not (rec.status == _QUIET and self.facts.is_stale(rec))

    def canon_sibling_answered(self, answered: bool, rec: PermRec) -> bool:
        """``PermRec.sibling_answered`` in a snapshot: read only while the request waits, by
        ``PermissionBook.silent_block``, which skips a request a cancel reached (``owed_cancel``
        is never cleared)."""
        return answered and rec.state == _OPEN and not rec.owed_cancel

    def canon_joint(self, joint: bool, rec: CancelRec) -> bool:
        """``CancelRec.joint`` in a snapshot: read only through ``RaceFacts.joined`` (``unjoin``
        only clears it). With no open prompt between the cancel and ``joint_upto`` it is dead:
        a later prompt is sent after ``joint_upto``, open prompts only leave, and the next
        ``prompt_sent`` that sets it sets ``joint_upto`` anew."""
        return joint and self.facts.joined(rec)

    def canon_joint_upto(self, upto: int, rec: CancelRec) -> int:
        """``CancelRec.joint_upto`` in a snapshot: read only by ``RaceFacts.joined``, over the
        prompts open now (every later one is sent after it), so the last open prompt up to it
        stands for it; -1 (dead) when the cancel is joined with none (see
        :meth:`canon_joint`)."""
        last = -1
        if rec.joint:  # a loop, not max() of a generator: every key asks, twice per cancel
            for p in self.m.queue.prompts:
                if rec.idx < p.idx <= upto and p.idx > last:
                    last = p.idx
        return last

    def canon_answer_idx(self, idx: int, rec: PermRec) -> int:
        """``PermRec.answer_idx`` in a snapshot: every check asks only whether the agent
        provably read the answer (PERM-11, STATE-06), which stays so once true (the frontier
        only grows); the resumption's ``acted_on`` and compaction's horizon compare it with
        the frontier too, and for a read answer neither moves anything above it. So a read
        answer's index is dead (-1, as no answer: the request's state and answer tell them
        apart)."""
        return -1 if self.m.ctx.read(idx) else idx

    def canon_rejected(self, rejected: bool, rec: None) -> bool:
        """``Work.rejected`` in a snapshot: read only through ``RaceFacts.prior``, by a cancel sent
        while quiet (``note_cancel``) and by the A-28=none rejection's recheck of the
        cancels' ``prior`` (``recheck_prior``, ``_settle_prompts``: both only clear a
        cancel's ``prior``). During work a cancel is recorded with no ``prior`` (it asks none),
        and work ends only with an idle, whose ``end_work`` clears the flag before it asks:
        during work it is dead unless some cancel's ``prior`` is still live (a dead one stays
        dead through ``recheck_prior``, :meth:`canon_prior`). Under A-28=may it is dead while
        a prompt is open too: a cancel sent now comes after that prompt (``sent_before``
        answers for it), and the queue empties only by a rejection, which sets the flag
        again, or by the idle ending the work, which clears it."""
        m = self.m
        if not rejected or (m.queue.prompts and m.ctx.readings.chose("A-28", "may")):
            return False
        return m.state not in WORK or any(self.canon_prior(c.prior, c)
                                          for c in m.cancel_book.cancels)

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
        if rec.state == _ANSWERED and not (tools and any(
                t.perm == rec.id for t in tools.values())):
            return None
        return value
