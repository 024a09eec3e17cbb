"""The prompts of one session, from the request to the end of their work, and their messages.

:class:`PromptQueue` owns what the client asked and what the agent said about it: the open
prompts (``PromptRec``), user messages reported before their prompt's acceptance, the texts of
rejected prompts (SDK-PROMPT-03) and the newer revision's receipts. The actions that only move
this state (``note_accept``, ``note_user_message``) are named by the lifecycle directly; the
checks that read it live in :mod:`acp_model.model.prompt_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_model.model.check import allowance
from acp_model.model.events import Payload
from acp_model.model.records import LIVE_ONLY, PromptRec
from acp_model.model.vocab import PromptStatus

__all__ = ["PromptQueue"]

REJECTED_KEPT = 32  # rejected prompts whose text SDK-PROMPT-03 still looks for


@dataclass(slots=True)
class PromptQueue:
    """Open prompts (answered or not, their work not yet ended) and what identifies them."""

    prompts: list[PromptRec] = field(default_factory=list)
    early_user_messages: int = 0
    # the first text of prompts answered with an error -> (prompt, response) (SDK-PROMPT-03)
    rejected_texts: dict[str, tuple[int, int]] = field(default_factory=dict,
                                                       metadata=LIVE_ONLY)
    # The newer revision's receipts: ids of receipts not yet echoed by a user message (-> the
    # receipt's index), every receipt id, and every user message id reported.
    receipts_owed: dict[str, int] = field(default_factory=dict, metadata=LIVE_ONLY)
    receipt_ids: dict[str, int] = field(default_factory=dict, metadata=LIVE_ONLY)
    user_ids: set[str] = field(default_factory=set, metadata=LIVE_ONLY)

    # --- queries ---------------------------------------------------------------------------
    def find(self, req_id: Any) -> PromptRec | None:
        """The open prompt with this request id (ids compare with their JSON type)."""
        return next((p for p in self.prompts if p.id == req_id
                     and type(p.id) is type(req_id)), None)

    def count(self, status: PromptStatus) -> int:
        return sum(1 for p in self.prompts if p.status == status)

    def work_pending(self) -> bool:
        """Accepted prompts whose work has not been ended by an idle."""
        return any(p.status != PromptStatus.PENDING for p in self.prompts)

    def withdrawal_pending(self) -> bool:
        """A prompt the client withdrew (``$/cancel_request``) has work still to come, answered
        or not: that work is the request's activity, which the agent may cancel
        (cancellation.mdx), so an idle ending earlier work leaves the withdrawal in force."""
        return any(p.withdrawn for p in self.prompts)

    def sent_before(self, idx: int) -> bool:
        return any(p.idx < idx for p in self.prompts)

    def sent_after(self, idx: int) -> bool:
        return any(p.idx > idx for p in self.prompts)

    def sent_between(self, after: int, upto: int) -> bool:
        """A prompt sent after ``after`` and at or before ``upto`` is still open."""
        return any(after < p.idx <= upto for p in self.prompts)

    def accepted_after(self, idx: int) -> bool:
        """A prompt sent after ``idx`` was accepted (it may own the work that ends)."""
        return any(p.idx > idx and p.status != PromptStatus.PENDING for p in self.prompts)

    def inserted_rejected(self, text_key: str | None) -> tuple[int, int] | None:
        """The (prompt, error response) whose first text a user message carries, when no
        prompt still open has that text (only a unique match tells whose it is)."""
        found = self.rejected_texts.get(text_key or "")
        if found is None or any(p.text_key == text_key for p in self.prompts):
            return None
        return found

    # --- changes ---------------------------------------------------------------------------
    def add(self, ev: Payload) -> None:
        self.prompts.append(PromptRec(ev.idx, ev.id, content_key=ev.content_key,
                                      text_key=ev.text_key))

    def note_accept(self, ev: Payload) -> None:
        """The prompt's response (or the newer revision's receipt) accepted it."""
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

    def reject(self, ev: Payload) -> PromptRec | None:
        """An error answered the prompt: it leaves the queue. Returns it when it was still
        pending (its text is kept for SDK-PROMPT-03)."""
        rejected = self.find(ev.id)
        if rejected is None or rejected.status != PromptStatus.PENDING:
            rejected = None
        elif rejected.text_key is not None:
            self.rejected_texts[rejected.text_key] = (rejected.idx, ev.idx)
            while len(self.rejected_texts) > REJECTED_KEPT:
                del self.rejected_texts[next(iter(self.rejected_texts))]
        self.prompts = [p for p in self.prompts
                        if not (p.id == ev.id and p.status == PromptStatus.PENDING)]
        return rejected

    @allowance("MSG-02", "PROMPT-06", "SDK-RECEIPT-02")
    def note_user_message(self, ev: Payload) -> None:
        """A user message: it echoes a receipt, carries an open prompt's content, and marks
        an accepted prompt inserted (or comes early, before the acceptance)."""
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

    def withdraw(self, req_id: Any, idx: int) -> None:
        """The client sent ``$/cancel_request`` for prompt ``req_id`` at ``idx``."""
        prompt = self.find(req_id)
        if prompt is not None:
            prompt.withdrawn = True
            if prompt.withdrawn_at < 0:
                prompt.withdrawn_at = idx

    def withdrawals_ended_by(self, response_to: Any) -> list[int]:
        """Where the client withdrew the prompts an idle answering ``response_to`` ends."""
        return [p.withdrawn_at for p in self.prompts
                if p.withdrawn_at >= 0 and p.ended_by(response_to)]

    def first_ended_by(self, response_to: Any) -> int:
        """Where the first prompt an idle answering ``response_to`` ends was sent (-1: none)."""
        return min((p.idx for p in self.prompts if p.ended_by(response_to)), default=-1)

    def ran(self) -> None:
        """Foreground work started or ended while these prompts were open."""
        for p in self.prompts:
            p.ran = True

    def end(self, response_to: Any) -> None:
        """An idle ended work: the prompts it ends leave (``PromptRec.ended_by``)."""
        self.prompts = [p for p in self.prompts if not p.ended_by(response_to)]
        self.ran()
