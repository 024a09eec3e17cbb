"""The cancels of one session: each ``session/cancel`` through the automaton of the session
module (``W`` / ``I`` / ``A``, :class:`~acp_model.model.vocab.CancelStatus`).

:class:`CancelBook` owns the outstanding cancels, the ones dropped as stale at the last work
start (CANCEL-11's evidence) and where work last ended cancelled (v1's CANCEL-09). What the agent
has read, and which prompts a cancel could still reach, belong to others: the book's moves take
them as functions (``read``, ``prior``) from :class:`~acp_model.model.race_facts.RaceFacts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from acp_model.model.records import EXPLAINS, LIVE_CONTENT, CancelRec
from acp_model.model.vocab import CancelStatus

__all__ = ["OWING", "CancelBook"]

OWING = frozenset({CancelStatus.WORK, CancelStatus.AMBIGUOUS})

Read = Callable[[int], bool]  # has the agent provably read the client message at this index?
Joined = Callable[[CancelRec], bool]  # may it have been read together with an open prompt?


@dataclass(slots=True)
class CancelBook:
    """Outstanding cancels and what the last work's end made of them."""

    cancels: list[CancelRec] = field(default_factory=list)
    # Explanations only (not in the snapshot): the cancels dropped at the current work's start
    # because the agent had provably read them before (CANCEL-11).
    stale: list[int] = field(default_factory=list, metadata=EXPLAINS)
    # where work last ended cancelled, no prompt since (-1: none): v1's CANCEL-09 reads it
    cancelled_end: int = field(default=-1, metadata=LIVE_CONTENT)
    # what was in flight when it ended so: every session/cancel that bound the work (not only
    # the one the end answers), and the $/cancel_request withdrawals of the prompts it ended
    # (CANCEL-09's proof names each, with whether it was read before the end)
    cancelled_by: tuple[int, ...] = field(default=(), metadata=EXPLAINS)
    withdrawals: tuple[int, ...] = field(default=(), metadata=EXPLAINS)
    # the first prompt of the work it ended (-1: not known): a cancel sent before it (an
    # interrupt's, written with it) is no cancel "in flight" of a running turn
    ended_prompt: int = field(default=-1, metadata=EXPLAINS)
    # where the session's last work ended, when it ended cancelled (-1: it ended otherwise, or
    # none has): kept past the next work's start, where the cause of a later `cancelled` with
    # none of its own may lie (CANCEL-11's evidence names it)
    ended_cancelled: int = field(default=-1, metadata=EXPLAINS)
    # the first content the agent wrote after that cancelled end, before a prompt came (-1:
    # none): the cancelled turn ran on (CANCEL-11's evidence names it beside the end)
    ran_on: int = field(default=-1, metadata=EXPLAINS)

    # --- queries ---------------------------------------------------------------------------
    @staticmethod
    def is_stale(c: CancelRec, read: Read) -> bool:
        """Met no work, provably read, and no prompt sent before it was still unfinished."""
        return c.status == CancelStatus.QUIET and read(c.idx) and not c.prior

    def quiet(self) -> list[CancelRec]:
        return [c for c in self.cancels if c.status == CancelStatus.QUIET]

    def owing(self) -> list[CancelRec]:
        return [c for c in self.cancels if c.status in OWING]

    def client_cancelled(self) -> bool:
        """Has the client cancelled the work (its end still owed), or did the last work end
        cancelled for a cancel of the client's, no prompt since?"""
        return bool(self.owing()) or self.cancelled_end >= 0

    # --- changes ---------------------------------------------------------------------------
    def record(self, idx: int, *, working: bool, prior: bool) -> None:
        """A cancel sent while the client saw foreground work (``W``) or while quiet (``I``,
        owing an idle(cancelled) under A-04=idle-cancelled when no prompt could own it)."""
        if working:
            self.cancels.append(CancelRec(idx, CancelStatus.WORK))
        else:
            self.cancels.append(CancelRec(idx, CancelStatus.QUIET, prior=prior,
                                          owes_reply=not prior))

    def start_work(self, read: Read, joined: Joined) -> None:
        """Quiet -> work: sort leftover cancels into stale (dropped) and ambiguous. A cancel
        read before the work began but perhaps together with the prompt of this work
        (``joined``) is kept: the agent may have taken that prompt up first."""
        kept = []
        self.stale = []
        for c in self.cancels:
            if c.status == CancelStatus.QUIET:
                if self.is_stale(c, read):
                    if not joined(c):
                        self.stale.append(c.idx)
                        continue
                    c.joint_read = True
                c.status = CancelStatus.AMBIGUOUS
            kept.append(c)
        self.cancels = kept
        self.cancelled_end = -1

    def served(self, idx: int, *, cancelled: bool, read: Read,
               withdrawals: list[int] | None = None, prompt: int = -1) -> list[CancelRec]:
        """The cancels an idle at ``idx`` answered or that CANCEL-07 already judged: a
        cancelled one answers the first owing cancel; those read during the work were judged.
        ``withdrawals``: where the client withdrew the prompts it ends ($/cancel_request);
        ``prompt``: the first of those prompts (-1: none known)."""
        served: list[CancelRec] = []
        self.ended_cancelled, self.ran_on = (idx if cancelled else -1), -1
        if cancelled:
            justifying = self.owing()
            served += justifying[:1]
            # v1's "before responding" is said of session/cancel: a turn ended cancelled
            # only because the client withdrew its prompt ($/cancel_request) is not bound
            self.cancelled_end = idx if justifying else -1
            self.cancelled_by = tuple(c.idx for c in justifying)
            self.withdrawals = tuple(withdrawals or ())
            self.ended_prompt = prompt
        served += [c for c in self.cancels
                   if c.status == CancelStatus.WORK and read(c.idx) and c not in served]
        return served

    def end_work(self, served: list[CancelRec], *, cancelled: bool, prior: Read,
                 keep_held: bool, joined: Joined) -> None:
        """Work ended: drop what it answered; the rest meet the session quiet."""
        kept = []
        for c in self.cancels:
            c.outrun = False  # the rejected prompts' work ended here too
            if c in served and joined(c):
                # Read perhaps together with a prompt sent after it that is still open: the
                # agent may have taken that prompt up before it handled the cancel, which then
                # reaches its work too (as probable as this work's: CANCEL-11 warns).
                c.status, c.prior, c.owes_reply = CancelStatus.QUIET, False, False
                kept.append(c)
                continue
            if c in served:
                if not prior(c.idx) or not keep_held:
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
                was_prior = prior(c.idx)
                c.owes_reply = not cancelled and (c.status == CancelStatus.WORK
                                                  or c.owes_reply)
                c.held = c.held or was_prior
                c.status = CancelStatus.QUIET
                c.prior = was_prior
                if c.held and not keep_held:
                    continue
            kept.append(c)
        self.cancels = kept

    def prompt_sent(self, idx: int, read: Read) -> None:
        """The prompt at ``idx`` was sent: the cancels not yet provably read may be read
        together with it (``CancelRec.joint``, ``joint_upto``)."""
        for c in self.cancels:
            if not read(c.idx):
                c.joint, c.joint_upto = True, idx

    def unjoin(self, sent_after: Read) -> None:
        """Prompts ended: a cancel with no prompt sent after it still open is read together
        with none (``sent_after``: is a prompt sent after this index still open?)."""
        for c in self.cancels:
            c.joint = c.joint and sent_after(c.idx)

    def turn_done(self, idx: int, at: int) -> None:
        """The cancel at ``idx`` was written once the scripted model had released its turn's
        final response after #``at`` (the fuzzer's record of the write says so)."""
        if self.cancels and self.cancels[-1].idx == idx:
            self.cancels[-1].done = at

    def model_asked(self) -> None:
        """The agent asked the model for the session's turn again after its cancels: the turn
        was not done when they came (every fact of a done turn is void)."""
        for c in self.cancels:
            c.done = -1

    def answer_quiet(self, *, owing_first: bool) -> None:
        """An idle(cancelled) that ends no work answers one cancel that met none (under
        A-04=idle-cancelled, one that owes a reply first)."""
        quiet = self.quiet()
        if quiet:
            owing = [c for c in quiet if c.owes_reply] if owing_first else []
            self.cancels.remove((owing or quiet)[0])

    def clear_outrun(self) -> None:
        for c in self.cancels:
            c.outrun = False

    def outrun_by(self, prompt_idx: int) -> None:
        """A prompt sent at ``prompt_idx`` was rejected, its work may live on (A-28=may): the
        cancels sent before it do not reach that work."""
        for c in self.cancels:
            c.outrun = c.outrun or c.idx < prompt_idx

    def recheck_prior(self, prior: Read) -> None:
        """A prompt left: a cancel keeps ``prior`` only while an earlier prompt is still open."""
        for c in self.cancels:
            c.prior = c.prior and prior(c.idx)

    def no_prior(self) -> None:
        for c in self.cancels:
            c.prior = False
