"""Evidence: which messages prove a race-dependent failure.

Each method of :class:`Proofs` states the proof of one check (``@check(..., evidence=NAME)``)
from the same named query its guard asks (:class:`~acp_model.model.race_facts.RaceFacts`):
change the query and both follow. A check whose evidence
returns None is reported as a warning, never as a failure (a failure states its proof).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp_model.model.cancel_book import CancelBook
from acp_model.model.events import Payload
from acp_model.model.permission_book import PermissionBook
from acp_model.model.permissions import classify
from acp_model.model.race_facts import ModelSession
from acp_model.model.records import CancelRec, PermRec, PromptRec
from acp_model.model.vocab import WORK, Answer, CancelStatus

Evidence = tuple[str, list[tuple[int, str]]]  # what proves a failure, and its records by role


class Proofs:
    """The evidence of one :class:`~acp_model.model.session.SessionModel`'s checks: a view
    that owns no state (``@check(evidence=NAME)`` names one of its methods)."""

    __slots__ = ("m",)

    def __init__(self, m: ModelSession) -> None:
        self.m = m

    def _proof_text(self, idx: int) -> tuple[str, list[tuple[int, str]]] | None:
        """How the trace proves the agent read the client message at ``idx`` (None: it does
        not, and a failure that needs it is no failure)."""
        proof = self.m.ctx.proof(idx)
        if proof is None:
            return None
        return (f"the agent answered #{proof.request} (sent after #{idx}) with #{proof.response}",
                [(proof.request, "request sent after it"),
                 (proof.response, "response proving it was read")])

    def cancel_evidence(self, ev: Payload) -> Evidence | None:
        binding = self.m.facts.binding_cancels()
        if not binding:
            return None
        c = binding[0]
        if self.m.ctx.readings.chose("A-11", "sent"):
            return (f"session/cancel #{c.idx} was sent during this work (reading A-11=sent); "
                    f"expected stopReason 'cancelled', got {ev.reason!r}",
                    [(c.idx, "session/cancel sent during the work"), (ev.idx, "the idle")])
        read = self._proof_text(c.idx)
        if read is None:
            return None
        # Not sent during reported work: sent after a prompt still open, with no work in front
        # of it (the line A-10 draws: such a cancel binds that prompt's work).
        started = None if c.status == CancelStatus.WORK else \
            next((p for p in self.m.queue.prompts if p.idx < c.idx), None)
        why = ("sent during this work" if c.status == CancelStatus.WORK else
               "sent while the prompt" + (f" #{started.idx}" if started else "")
               + " of this work was being started (no other work in front of it),")
        return (f"session/cancel #{c.idx} was {why} and {read[0]}, before it wrote #{ev.idx}; "
                f"expected stopReason 'cancelled', got {ev.reason!r}",
                [*([(started.idx, "the prompt being started")] if started else []),
                 (c.idx, "session/cancel"), *read[1], (ev.idx, "the idle")])

    def _first_read(self, cancels: list[CancelRec]
                    ) -> tuple[CancelRec, tuple[str, list[tuple[int, str]]]] | None:
        """The first of ``cancels`` and how the trace proves it was read (None: none, or no
        proof)."""
        read = self._proof_text(cancels[0].idx) if cancels else None
        return None if read is None else (cancels[0], read)

    def reopened_evidence(self, ev: Payload) -> Evidence | None:
        found = self._first_read(self.m.facts.reopened_cancels())
        if found is None:
            return None
        c, read = found
        return (f"session/cancel #{c.idx} was sent after the client reopened the session at "
                f"#{c.reopened} while this work ran, and {read[0]}, before it wrote #{ev.idx}; "
                f"the work ended {_ending(ev)}, not 'cancelled'. The text does not say whether "
                "a reopen replaces the session the work runs in (an agent may load a fresh "
                "session and leave the old turn running), so whether the cancel reaches this "
                "work is open: a warning",
                [(c.reopened, "the reopen, while the work ran"), (c.idx, "session/cancel"),
                 *read[1], (ev.idx, "the idle")])

    def done_evidence(self, ev: Payload) -> Evidence | None:
        found = self._first_read(self.m.facts.done_cancels())
        if found is None:
            return None
        c, read = found
        return (f"the scripted model had released the turn's final response (after #{c.done}) "
                f"before the cancel #{c.idx} was written; nothing was left to abort. "
                f"{read[0][0].upper()}{read[0][1:]}, before it wrote #{ev.idx}, and the work "
                f"ended {_ending(ev)}, not 'cancelled': the turn's real end answers a cancel "
                "that came after its work was done (reading A-33=done; A-33=strict fails it)",
                [(c.done, "the last message before the model's final response"),
                 (c.idx, "session/cancel (its record: the model's turn was done)"),
                 *read[1], (ev.idx, "the idle")])

    def probable_evidence(self, ev: Payload) -> Evidence | None:
        if ev.maybe_refusal:  # an error for work that showed nothing (a warning)
            return self.cancel_evidence(ev)
        cancels = self.m.facts.probable_cancels()
        hint = self.m.ctx.hint(cancels[0].idx) if cancels else None
        if hint is None:
            return None
        c = cancels[0]
        return (f"no response proves it read session/cancel #{c.idx}, but at #{hint.response} "
                f"it acted on #{hint.request}, which the client sent after the cancel: unless "
                f"it stopped waiting without withdrawing that request, it had read the cancel; "
                f"expected stopReason 'cancelled', got {ev.reason!r}",
                [(c.idx, "session/cancel"), (hint.request, "client message sent after it"),
                 (hint.response, "the agent acting on it"), (ev.idx, "the idle")])

    def receipt_evidence(self, ev: Payload) -> Evidence | None:
        first = self.m.queue.receipt_ids.get(ev.message_id or "")
        if first is None:
            return None
        return (f"the receipt #{first} already named user message {ev.message_id!r}; this "
                "receipt names it again for another prompt",
                [(first, "the earlier receipt"), (ev.idx, "the receipt reusing its id")])

    def insertion_evidence(self, ev: Payload) -> Evidence | None:
        p = self.m.queue.find(ev.id)
        if p is None or p.echo_idx < 0:
            return None
        return (f"the user message #{p.echo_idx} carries the content of session/prompt "
                f"#{p.idx} verbatim while that prompt was the only open one with it: the "
                "prompt was inserted, so it cannot be rejected",
                [(p.idx, "the prompt"), (p.echo_idx, "its user message"),
                 (ev.idx, "the error response")])

    def rejected_insertion_evidence(self, ev: Payload) -> Evidence | None:
        found = self.m.queue.inserted_rejected(ev.text_key)
        if found is None:
            return None
        prompt, error = found
        return (f"session/prompt #{prompt} was answered with an error at #{error} (the message "
                f"was not inserted), yet the user message #{ev.idx} carries its text, which no "
                "open prompt has",
                [(prompt, "the prompt"), (error, "its error response"),
                 (ev.idx, "the user message")])

    def held_evidence(self, ev: Payload) -> Evidence | None:
        held = self.m.facts.held_cancels()
        read = self._proof_text(held[0].idx) if held else None
        if read is None:
            return None
        c = held[0]
        prompt = next((p for p in self.m.queue.prompts if p.idx < c.idx), None)
        return (f"session/cancel #{c.idx} was read ({read[0]}) while the prompt"
                + (f" #{prompt.idx}" if prompt else "") + " was held behind other work; the "
                f"prompt outlived the cancel and its work ended {ev.reason!r} ("
                + (self.m.ctx.readings.deciding_sentence("A-10")
                   or "reading A-10=cancel; RULES.md A-10: the text does not say whether a "
                   "cancel reaches a held prompt") + ")",
                [(c.idx, "session/cancel"), *read[1],
                 *([(prompt.idx, "the held prompt")] if prompt else []), (ev.idx, "the idle")])

    def cause_evidence(self, ev: Payload) -> Evidence | None:
        none_since = ("no session/cancel or session/close, no reopen of the session "
                      "(session/load, session/resume) and no withdrawal of a prompt "
                      "($/cancel_request) was sent")
        if not self.m.facts.ends_work(ev):
            return (f"{none_since} since the previous idle", [(ev.idx, "the idle")])
        stale = self.m.cancel_book.stale if self.m.state in WORK else \
            [c.idx for c in self.m.cancel_book.cancels if self.m.facts.is_stale(c)]
        if not stale:
            earlier, items = earlier_end(self.m.cancel_book, self.m.queue.prompts)
            return (f"{none_since} during this work or while its prompt was open{earlier}",
                    [*items, (ev.idx, "the idle")])
        read = self._proof_text(stale[-1])
        if read is None:
            return None
        prompt = next((p for p in self.m.queue.prompts if p.idx > stale[-1]), None)
        before = (f" before the prompt #{prompt.idx} of this work was sent (so not read "
                  "together with it)" if prompt is not None else "")
        began = f" began at #{self.m.work.began}" if self.m.state in WORK else " began"
        return (f"the last session/cancel, #{stale[-1]}, cannot apply to this work: "
                f"{read[0]}{before}, before the work{began}, and no prompt sent before it "
                f"was unfinished; {none_since} since",
                [(stale[-1], "session/cancel"), *read[1],
                 *([(prompt.idx, "the prompt of this work")] if prompt is not None else []),
                 *([(self.m.work.began, "the work began")] if self.m.state in WORK else []),
                 (ev.idx, "the idle")])

    def joint_evidence(self, ev: Payload) -> Evidence | None:
        joint = self.m.facts.joint_only()
        if not joint:
            return None
        c = joint[-1]
        prompt = next((p for p in self.m.queue.prompts if p.idx > c.idx), None)
        read = self._proof_text(c.idx)
        if prompt is None or read is None:
            return None
        return (f"the work of prompt #{prompt.idx} showed content (#{self.m.work.showed}) and "
                f"ended 'cancelled'; the only cancel that can explain it, #{c.idx}, was sent "
                f"before that prompt and not provably read before the prompt was sent (as "
                "when both are written together, an editor's 'stop and send'): an agent may "
                "take the prompt up before it handles the cancel (the text does not order the "
                f"handling of messages read together), though {read[0]} before the work "
                "began. A program that writes the cancel, waits for an answer to a request, "
                "and only then prompts decides it",
                [(c.idx, "session/cancel"), (prompt.idx, "the prompt, sent before the cancel "
                                                         "was provably read"),
                 *read[1], (self.m.work.showed, "content of the work"), (ev.idx, "the idle")])

    def answer_evidence(self, ev: Payload) -> Evidence | None:
        perm = self.m.facts.unapproved_start(ev)
        if perm is None:
            return None
        read = self._proof_text(perm.answer_idx) if perm.answer is not None else None
        if read is None:
            return unanswered_evidence(self.m.perm_book, perm, ev)
        stray, items = stray_allow(self.m.perm_book, perm)
        return (f"tool call {ev.tool_call_id!r} went {ev.status!r} although the permission "
                f"request #{perm.idx} was answered '{perm.answer}' at #{perm.answer_idx} and "
                f"{read[0]}{stray}",
                [(perm.idx, "permission request"), (perm.answer_idx, "the answer"), *read[1],
                 *items, (ev.idx, "the tool update")])

    def elicitation_evidence(self, ev: Payload) -> Evidence | None:
        pending = self.m.perm_book.unwithdrawn_blocking()
        if not pending:
            return None
        first = pending[0]
        return (f"elicitation/create #{first.idx} was open when the agent reported "
                f"requires_action (the work waited on it), and the work ended cancelled at "
                f"#{ev.idx} with the elicitation neither answered nor withdrawn",
                [(first.idx, "elicitation/create"), (ev.idx, "the cancelled idle")])

    def new_work_evidence(self, ev: Payload) -> Evidence | None:
        return self._new_work(ev, "asked for permission", "the permission request")

    def new_elicitation_evidence(self, ev: Payload) -> Evidence | None:
        return self._new_work(ev, "asked the user for input (reading A-32=new-work)",
                              "elicitation/create")

    def _new_work(self, ev: Payload, did: str, role: str) -> Evidence | None:
        """CANCEL-05's proof: a cancel of this work the agent provably read before ``ev``."""
        found = self._first_read(self.m.facts.read_work_cancels())
        if found is None:
            return None
        c, read = found
        return (f"session/cancel #{c.idx} was sent during this work and {read[0]}, before it "
                f"{did} at #{ev.idx}",
                [(c.idx, "session/cancel"), *read[1], (ev.idx, role)])

    def reply_evidence(self, ev: Payload) -> Evidence | None:
        owed = self.m.facts.replies_owed_before_work()
        read = self._proof_text(owed[0].idx) if owed else None
        if read is None:
            return None
        return (f"session/cancel #{owed[0].idx} met no work and {read[0]}; reading "
                f"A-04=idle-cancelled wants its idle(cancelled) before new work at #{ev.idx}",
                [(owed[0].idx, "session/cancel"), *read[1], (ev.idx, "the new work")])

    def late_content_evidence(self, ev: Payload) -> Evidence | None:
        end = self.m.cancel_book.cancelled_end
        if end < 0:
            return None
        inflight, items = self._cancels_in_flight()
        return (f"the agent wrote the cancelled end of the turn at #{end} before "
                f"this content at #{ev.idx} (one output stream keeps its order), and no prompt "
                f"came in between{inflight}",
                [*items, (end, "the cancelled end of the turn"), (ev.idx, "content")])

    def _cancels_in_flight(self) -> tuple[str, list[tuple[int, str]]]:
        """The cancels that may have ended the turn cancelled, each with whether the agent
        provably read it before the end: v1 binds the order of content and the end to
        session/cancel, while $/cancel_request lets the receiver "finish sending any pending
        notifications", so a maintainer needs to see which of them may have ended the turn.
        One sent before the turn's prompt (an interrupt's, written with it) is said to be."""
        book = self.m.cancel_book
        end = book.cancelled_end
        began = book.ended_prompt
        said: list[str] = []
        items: list[tuple[int, str]] = []
        for idx, what in [*((w, "$/cancel_request") for w in book.withdrawals),
                          *((c, "session/cancel") for c in book.cancelled_by)]:
            before = f"sent before the turn's prompt #{began}, " if 0 <= idx < began else ""
            proof = self.m.ctx.proof(idx)
            if proof is not None and proof.response < end:
                state = (f"read before it: the agent answered #{proof.request} (sent after "
                         f"#{idx}) with #{proof.response}")
            elif proof is not None:
                state = f"not provably read before it; read by #{proof.response}"
            else:
                state = "not provably read"
            said.append(f"{what} #{idx} ({before}{state})")
            items.append((idx, f"{what}, {before}{state.split(':')[0].split(';')[0]}"))
        if not said:
            return "", []
        return "; the cancels that may have ended it: " + ", ".join(sorted(said, key=_at)), \
            sorted(items)

    def late_turn_evidence(self, ev: Payload) -> Evidence | None:
        end = self.m.work.ended
        if end < 0:
            return None
        return (f"the agent wrote the response that ended the turn at #{end} before this "
                f"content at #{ev.idx} (one output stream keeps its order), and no prompt came "
                "in between: the turn's work was still pending when the agent answered, and a "
                "client that takes the response as the turn's end drops or misplaces it",
                [(end, "the response ending the turn"), (ev.idx, "content after it")])

    def swallow_evidence(self, ev: Payload) -> Evidence | None:
        owed = self.m.facts.swallowed_cancels()
        read = self._proof_text(owed[0].idx) if owed else None
        if read is None:
            return None
        return (f"session/cancel #{owed[0].idx} owed an idle(cancelled) and {read[0]}; this "
                f"work ended {ev.reason!r} without answering it",
                [(owed[0].idx, "session/cancel"), *read[1], (ev.idx, "the idle")])


def _at(said: str) -> int:
    """The message number a clause of :meth:`_cancels_in_flight` starts with."""
    return int(said.split("#", 1)[1].split(" ", 1)[0])


def _ending(ev: Payload) -> str:
    """How the work ended: its stop reason, or the error that answered its prompt (v1)."""
    if ev.reason is not None:
        return repr(ev.reason)
    return f"with error {ev.error_code}" if ev.error_code is not None else "with no stop reason"


def unanswered_evidence(book: PermissionBook, perm: PermRec, ev: Payload) -> Evidence:
    """PERM-11's proof for a tool that ran with no allow to read: its request still open, or
    answered without one (read or not), with the stray allow the agent may have taken for
    that request's answer."""
    stray, items = stray_allow(book, perm)
    if perm.answer is None:
        return (f"tool call {ev.tool_call_id!r} went {ev.status!r} while the permission request "
                f"#{perm.idx} guarding it was still open: the client had not answered it (nor "
                f"had the agent withdrawn it){stray}",
                [(perm.idx, "permission request, unanswered"), *items,
                 (ev.idx, "the tool update")])
    return (f"tool call {ev.tool_call_id!r}, not started before, went {ev.status!r} after the "
            f"permission request #{perm.idx} guarding it; the client's only answer was "
            f"'{perm.answer}' (#{perm.answer_idx}): whether or not the agent had read it, it had "
            f"no allow{stray}",
            [(perm.idx, "permission request"), (perm.answer_idx, "the answer"), *items,
             (ev.idx, "the tool update")])


def stray_allow(book: PermissionBook, perm: PermRec) -> Evidence:
    """The client's last allow in the session before ``perm`` was sent, to another request
    whose own tool never ran (a late answer for cancelled work, or one for a withdrawn
    request): an answer an agent that keeps it may take for ``perm`` (none: nothing)."""
    earlier = [(at, p) for p in (*book.perms.values(), *book.retired.values())
               if p is not perm and (at := _allowed_at(p, perm.idx)) >= 0
               and not book.started(p.tool_call_id)]
    if not earlier:
        return "", []
    at, last = max(earlier, key=lambda pair: pair[0])
    return (f"; the client's last allow before it, #{at}, answered another "
            f"request, #{last.idx}: an answer an agent that kept it would take for this one",
            [(at, "an earlier allow, to another request")])


def note_repeat(sessions: Iterable[Any], perm_id: Any, msg: dict[str, Any], idx: int) -> None:
    """The client answered permission request ``perm_id`` again (a repeat no rule reads: only
    the first answer is an event): an allow is kept, on the newest request of that id, for
    :func:`stray_allow` to name."""
    asked = [perm for m in sessions if (perm := m.perm_book.perm(perm_id)) is not None]
    if not asked:
        return
    perm = max(asked, key=lambda p: p.idx)
    if classify(perm.options, msg.get("result"), "error" in msg) == Answer.ALLOW:
        perm.repeat_allow_idx = idx


def _allowed_at(perm: PermRec, before: int) -> int:
    """The index of the client's last allow for ``perm`` sent before index ``before``: its
    answer, or a repeat after another first answer (a late allow after the cancelled
    outcome, say); -1: none."""
    allows = [perm.repeat_allow_idx] if 0 <= perm.repeat_allow_idx < before else []
    if perm.answer == Answer.ALLOW and 0 <= perm.answer_idx < before:
        allows.append(perm.answer_idx)
    return max(allows, default=-1)


def earlier_end(book: CancelBook, prompts: Sequence[PromptRec]
                ) -> tuple[str, list[tuple[int, str]]]:
    """What the session's previous work was cancelled by, when it ended cancelled before
    this work's prompt was sent: no cause of this `cancelled` is on the wire, and an
    agent that carried that cancel over to the next work would end it so (codex-acp's
    withdrawn prompt, answered before its turn had started, s10). Context for a reader,
    not part of the proof: this work's own window has no cause either way."""
    prompt = next(iter(prompts), None)
    end = book.ended_cancelled
    if end < 0 or (prompt is not None and prompt.idx < end):
        return "", []
    causes = sorted([*((w, "$/cancel_request") for w in book.withdrawals),
                     *((c, "session/cancel") for c in book.cancelled_by)])
    said = " and ".join(f"{what} #{idx}" for idx, what in causes)
    ended = f" (prompt #{book.ended_prompt})" if book.ended_prompt >= 0 else ""
    this = f" #{prompt.idx}" if prompt is not None else ""
    ran_on = book.ran_on if book.ran_on > end else -1
    return (f"; before it, the session's previous work{ended} ended `cancelled` at #{end}"
            + (f", after {said}" if said else "")
            + (f", and its content still came at #{ran_on}" if ran_on >= 0 else "")
            + f", before this work's prompt{this} was sent",
            [*([(book.ended_prompt, "the previous work's prompt")]
               if book.ended_prompt >= 0 else []),
             *((idx, f"{what} of the previous work") for idx, what in causes),
             (end, "the previous work's cancelled end"),
             *([(ran_on, "the previous work's content after its end")]
               if ran_on >= 0 else []),
             *([(prompt.idx, "the prompt of this work")] if prompt is not None else [])])

