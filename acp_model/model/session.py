"""The session machine's model object: its extended state, guards (checks) and actions.

Control states are the foreground states a session reports (``unreported`` until the first
``state_update``, then ``idle`` / ``running`` / ``requires_action`` / ``custom`` for ``_x`` and
future states). Everything else the rules need (prompts awaiting acceptance, accepted prompts
awaiting their user message, open permission requests, outstanding cancels, tool calls of the
current work) lives in :class:`SessionModel`, which is also the machine's model object. It holds
small objects, each owning its state: the prompts (:class:`~.prompt_queue.PromptQueue`), the
cancels (:class:`~.cancel_book.CancelBook`), the permission requests and tool calls
(:class:`~.permission_book.PermissionBook`) and the work in progress (:class:`~.work.Work`).
Views that own no state read them: the race facts (:class:`~.race_facts.RaceFacts`), the
checks (:class:`~.prompt_rules.PromptRules`, :class:`~.cancel_rules.CancelRules`,
:class:`~.state_rules.StateRules`), their evidence (:class:`~.evidence.Proofs`) and what is
still owed (:class:`~.obligations.Obligations`).

Events are classified wire messages in both directions (``vocab.EVENTS``); the machine that
they move is declared in :mod:`acp_model.model.lifecycle`. Every transition's guards are
*checks*: pure predicates tagged with the rule they enforce (``@check``), each a method of one
of the rule views; the lifecycle names guards and actions by their plain names, which the
engine (and python-statemachine, as listeners) finds on the model or one of its ``PARTS``. When
a check fails, the transition is refused, which is a violation of that rule; the monitor
records it and then takes the transition anyway (the client must keep following what the agent
reports), so one bug does not drown the rest of the trace in follow-up errors.

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
from typing import Any, ClassVar

from acp_model.model.cancel_book import CancelBook
from acp_model.model.cancel_rules import LATE_CONTENT_UPDATES, CancelRules
from acp_model.model.check import allowance
from acp_model.model.context import Context
from acp_model.model.dead_fields import DeadFields
from acp_model.model.events import Payload
from acp_model.model.evidence import Proofs
from acp_model.model.obligations import Obligation, Obligations
from acp_model.model.permission_book import PermissionBook
from acp_model.model.prompt_queue import PromptQueue
from acp_model.model.prompt_rules import PromptRules
from acp_model.model.race_facts import RaceFacts
from acp_model.model.state_rules import StateRules
from acp_model.model.vocab import QUIET, WORK, Answer, PermState, State, StopReason
from acp_model.model.work import Work

__all__ = ["SessionModel", "View"]

# read once (an enum member read off its class costs about 150 ns in CPython 3.11): every
# update a session reports asks whether it runs
_RUNNING = State.RUNNING


class View:
    """A view of the model that owns no state (a class taking the model), made afresh on each
    use: it is cheap (slots, one reference), and kept nowhere, so a model and its views form no
    reference cycle (the explorer makes hundreds of thousands of models a second and drops most
    at once: a cycle each would leave them all to the garbage collector). A class attribute, not
    a field: clones and shared copies (model.snapshot) copy only fields. On the class it is
    the view's class (the engine looks guards up there)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __get__(self, model: Any, owner: type | None = None) -> Any:
        return self.cls if model is None else self.cls(model)


@dataclass
class SessionModel:
    """Extended state of one session, and the lifecycle's actions over it."""

    # Views that own no state, reading the parts below (made on each use, see View).
    facts = View(RaceFacts)
    dead = View(DeadFields)  # what a snapshot keeps of each record (model.snapshot)
    proofs = View(Proofs)
    owed = View(Obligations)
    prompt_rules = View(PromptRules)
    cancel_rules = View(CancelRules)
    state_rules = View(StateRules)
    # Where the engine looks for a guard, action or evidence the lifecycle names, after the
    # model itself (each name is defined in exactly one of them).
    PARTS: ClassVar[tuple[str, ...]] = ("prompt_rules", "cancel_rules", "state_rules", "proofs",
                                        "queue", "perm_book")
    # what the shared context decides beyond the read frontier (see model.snapshot)
    SNAPSHOT_QUERIES: ClassVar[tuple[str, ...]] = ("facts.probably_read_cancels",)

    sid: str
    ctx: Context = field(default_factory=Context)
    state: str = "unreported"
    queue: PromptQueue = field(default_factory=PromptQueue)
    cancel_book: CancelBook = field(default_factory=CancelBook)
    perm_book: PermissionBook = field(default_factory=PermissionBook)
    work: Work = field(default_factory=Work)

    # --- what the monitor and the explorer ask ---------------------------------------------
    def obligations(self) -> list[Obligation]:
        """Liveness obligations still open (:meth:`Obligations.obligations`)."""
        return self.owed.obligations()

    def horizon(self) -> int:
        """Where :meth:`retire` and :meth:`compact` cut: the proven or the probable read
        frontier, whichever is further (both only grow)."""
        return max(self.ctx.probable, self.ctx.frontier)

    def retire(self) -> None:
        """Move settled permission requests out of the scans (``PermissionBook.retire``): below
        the horizon the agent acting on an answer can change no verdict."""
        self.perm_book.retire(self.horizon())

    def compact(self) -> None:
        """Forget answered permission requests no check can read (``PermissionBook.compact``;
        the explorer calls it on every edge). Idempotent at one horizon: what it keeps at a
        horizon it keeps there again (the explorer skips asking a book it shares, unchanged,
        at the horizon it was compacted at)."""
        if self.perm_book.perms:
            self.perm_book.compact(self.horizon())

    def compacts(self) -> bool:
        """Would :meth:`compact` forget something?"""
        return bool(self.perm_book.perms) and bool(
            self.perm_book.forgettable(self.horizon()))

    # =====================================================================================
    # Actions. They run after the checks and update the extended state.
    # =====================================================================================

    @allowance("PROMPT-10", "PROMPT-08")
    def note_prompt(self, ev: Payload) -> None:
        self.cancel_book.cancelled_end = self.work.ended = -1
        self.cancel_book.prompt_sent(ev.idx, self.ctx.read)
        self.queue.add(ev)

    @allowance("CANCEL-01")
    def note_cancel(self, ev: Payload) -> None:
        working = self.state in WORK
        self.cancel_book.record(ev.idx, working=working,
                                prior=not working and self.facts.prior(ev.idx))
        self.perm_book.cancel_reached()

    @allowance("CANCEL-13")
    def note_prompt_cancel_request(self, ev: Payload) -> None:
        """$/cancel_request for a pending prompt: the response is still owed (CANCEL-14), and
        the agent may cancel the prompt's activity (its work may then end cancelled)."""
        self.work.client_stopped = True
        self.queue.withdraw(ev.id, ev.idx)

    @allowance("PERM-09")
    def note_permission_answer(self, ev: Payload) -> None:
        if ev.id not in self.perm_book.perms:
            return
        if ev.answer != Answer.ALLOW and self.ctx.readings.chose("A-29", "may") \
                and self.state in WORK:
            self.work.client_stopped = True  # a refusal may tell the agent to stop
        self.perm_book.answer(ev)

    def note_elicitation_answer(self, ev: Payload) -> None:
        """The client's answer to a session-scoped elicitation (any action ends the wait)."""
        perm = self.perm_book.perms.get(ev.id)
        if perm is not None and perm.elicitation and perm.state != PermState.ANSWERED:
            self.perm_book.answer(ev)

    def note_reject(self, ev: Payload) -> None:
        rejected = self.queue.reject(ev)
        if self.ctx.readings.chose("A-28", "may"):
            # The work it may have started lives on until an idle: every cancel sent so far
            # keeps what it could stop, and later ones may stop that work too. The work that
            # ends next may be this prompt's, which the cancels sent before it do not reach.
            self.work.rejected = True
            if rejected is not None:
                self.cancel_book.outrun_by(rejected.idx)
            self.cancel_book.unjoin(self.queue.sent_after)
            return
        self.work.client_stopped = False  # (A-28=none) what a withdrawal could stop ended here
        # a rejected prompt is no longer work a cancel could stop
        self.cancel_book.recheck_prior(self.facts.prior)
        self._settle_prompts()

    def start_work(self, ev: Payload) -> None:
        """Quiet -> work: sort leftover cancels into stale (dropped) and ambiguous."""
        self.work.start(ev.idx)
        self.cancel_book.start_work(self.ctx.read, self.facts.joined)
        self.queue.ran()

    def note_resumption(self, ev: Payload) -> None:
        """Blocked work runs again: the agent probably read the answers that unblocked it."""
        self.perm_book.note_resumed(ev)
        for answer_idx in self.perm_book.answered_indices():
            self.ctx.acted_on(answer_idx, ev.idx)

    @allowance("STATE-04", "STATE-02", "CANCEL-06")
    def end_work(self, ev: Payload) -> None:
        """An idle that ends foreground work: settle cancels, prompts and tool calls."""
        self.work.rejected = False  # what stopped the work ends with it
        if self.state in QUIET:
            self.start_work(ev)  # unreported work (already reported under STATE-01)
        cancelled = ev.reason == StopReason.CANCELLED
        # cancels this idle answered or already judged (read during this work: CANCEL-07)
        served = self.cancel_book.served(ev.idx, cancelled=cancelled, read=self.ctx.read,
                                         withdrawals=self.queue.withdrawals_ended_by(ev.id),
                                         prompt=self.queue.first_ended_by(ev.id))
        self.queue.end(ev.id)
        # ... but a withdrawn prompt whose work is still to come may see it end cancelled
        self.work.client_stopped = self.queue.withdrawal_pending()
        self.cancel_book.end_work(served, cancelled=cancelled, prior=self.facts.prior,
                                  keep_held=not self.ctx.readings.chose("A-10", "keep"),
                                  joined=self.facts.joined)
        self._settle_prompts()
        self.work.end(ev.idx, cancelled=cancelled)
        self.perm_book.note_resumed(ev)

    def settle_idle(self, ev: Payload) -> None:
        """An idle that ends no work; a cancelled one answers a cancel read while quiet."""
        if self.facts.ends_work(ev):
            self.end_work(ev)
            return
        self.work.rejected = False  # nothing outlives an idle but a withdrawn prompt's work
        self.work.client_stopped = self.queue.withdrawal_pending()
        self.cancel_book.clear_outrun()
        if ev.reason == StopReason.CANCELLED:
            self.cancel_book.answer_quiet(owing_first=self.facts.replies_owed())
        self.perm_book.note_resumed(ev)

    def _settle_prompts(self) -> None:
        self.cancel_book.unjoin(self.queue.sent_after)
        if not self.queue.prompts and not self.work.rejected:
            self.cancel_book.no_prior()

    @allowance("PERM-01", "PERM-13")
    def note_permission_request(self, ev: Payload) -> None:
        self.perm_book.request(ev, owed_cancel=self.facts.owing_cancel())
        if ev.tool_call_id is not None and self.state in WORK:
            self.work.tool_calls.add(ev.tool_call_id)

    def note_elicitation_request(self, ev: Payload) -> None:
        """A session-scoped elicitation: a user-action wait the foreground-state rules read
        like a permission request (STATE-05/06); it guards no tool and no cancel makes the
        client owe it an answer."""
        self.perm_book.request(ev, owed_cancel=False, elicitation=True)

    @allowance("TOOL-10", "CANCEL-08")
    def note_tool_update(self, ev: Payload) -> None:
        perm = self.perm_book.guard(ev.tool_call_id)
        if perm is not None and perm.state == PermState.ANSWERED and ev.status is not None:
            self.ctx.acted_on(perm.answer_idx, ev.idx)  # it moved the tool the answer decided
        self.perm_book.note_tool(ev)
        if self.state in WORK:
            self.work.tool_calls.add(ev.tool_call_id or "")
        self._note_silent_block()

    @allowance("STATE-07", "USAGE-01", "PROMPT-13")
    def note_output(self, ev: Payload) -> None:
        """Other session updates: legal in every state; they never change the state."""
        if self.state in WORK and self.work.showed < 0 and ev.update in LATE_CONTENT_UPDATES:
            self.work.showed = ev.idx
        elif self.state not in WORK and self.cancel_book.ended_cancelled >= 0 \
                and self.cancel_book.ran_on < 0 and ev.update in LATE_CONTENT_UPDATES:
            self.cancel_book.ran_on = ev.idx  # the cancelled turn ran on past its end
        self._note_silent_block()

    def _note_silent_block(self) -> None:
        """The agent wrote something while a request it sent blocks the work it reports as
        running: it could have reported requires_action (``PermissionBook.silent_block``)."""
        if self.state == _RUNNING:
            self.perm_book.silent_block()
