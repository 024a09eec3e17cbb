"""Sessions the client reopened (session/load, session/resume): what routing must remember of
a reopen to judge the history that follows it (:mod:`acp_model.model.replay`,
:mod:`acp_model.model.replay_order`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp_model.model import replay
from acp_model.model.check import watches
from acp_model.model.events import first_text
from acp_model.model.replay_order import (
    USER_KINDS,
    Position,
    earlier_message,
    rendered_prompt,
    replayed_user_message,
)
from acp_model.model.session import SessionModel
from acp_model.model.vocab import Reads
from acp_model.trace.methods import Method


class Reopens:
    """Per session: where its load was answered (no prompt since), and where a reopen was sent
    while the session worked."""

    def __init__(self) -> None:
        self.loaded: dict[str, int] = {}  # session -> its load response (no prompt since)
        self.reopened_busy: dict[str, int] = {}  # session -> a reopen sent while it worked
        self.message_ids: dict[str, set[str]] = {}  # per session: the ids its content used
        # per session: the first text of each prompt it was sent -> where (V1-LOAD-01's proof)
        self.prompt_texts: dict[str, dict[str, int]] = {}
        # per loaded session: the text of the user chunks in a row since its load's answer
        # (an agent may replay one prompt in several chunks)
        self.user_run: dict[str, str] = {}
        self.proven: set[str] = set()  # loaded sessions a user message proved replaying

    def load_answered(self, sid: str, idx: int) -> None:
        self.loaded[sid] = idx
        self.user_run.pop(sid, None)
        self.proven.discard(sid)

    def prompted(self, sid: str, idx: int, blocks: Any) -> None:
        """A prompt ends what the load's answer says of later content; its text is the
        conversation's, which a replay may give back."""
        self.loaded.pop(sid, None)
        self.user_run.pop(sid, None)
        self.proven.discard(sid)
        text = first_text(blocks)
        if text is not None and text.strip():
            self.prompt_texts.setdefault(sid, {}).setdefault(text.strip(), idx)

    def around(self, sid: str, open_requests: Sequence[Any]) -> bool:
        """Does an update of session ``sid`` stand against a reopen: one the client has open
        (``open_requests``, of any session), or a load of ``sid`` answered with no prompt
        since? Where none is, its position is quiet (:attr:`Position.quiet`): no replay-order
        check judges it, and only the message id it names is remembered (:meth:`noted`)."""
        return bool(open_requests) or sid in self.loaded

    @watches(Reads.UPDATE)
    def noted(self, sid: str, update: dict[str, Any]) -> None:
        """An update while no reopen is around (:meth:`around`): the message id it names,
        which a later replay may give back."""
        mid = update.get("messageId")
        if isinstance(mid, str):
            self.message_ids.setdefault(sid, set()).add(mid)

    @watches(Reads.UPDATE)
    def position(self, sid: str, update: dict[str, Any], open_requests: Iterable[Any],
                 busy: bool) -> Position:
        """Where an update of session ``sid`` stands against the reopens around it (the
        client's ``open_requests``); the message id it names is remembered."""
        kind, mid = update.get("sessionUpdate"), update.get("messageId")
        resumes = [r for r in open_requests if r.method == Method.RESUME]
        loaded = None if busy else self.loaded.get(sid)  # (busy: the turn's content)
        seen = self.message_ids.setdefault(sid, set())
        replayed = None if loaded is None else replayed_user_message(
            kind, mid, self._user_run(sid, kind, update.get("content")), seen,
            self.prompt_texts.get(sid, {}))
        at = Position(kind, replay.resume_awaited(resumes, sid, busy) if resumes else None,
                      replay.resume_awaited((r for r in resumes if r.replayed is None), sid,
                                            busy) if resumes else None,
                      loaded, earlier_message(kind, mid, seen), replayed,
                      loaded is not None and sid in self.proven)
        if replayed is not None:
            self.proven.add(sid)
        if isinstance(mid, str):
            seen.add(mid)
        return at

    def _user_run(self, sid: str, kind: object, content: object) -> str | None:
        """The text of the run of user chunks this one belongs to (None: not a user chunk),
        after a load's answer: a replayed prompt proves itself once its chunks so far
        render it; a chunk that renders a prompt alone starts a run of its own."""
        if kind not in USER_KINDS:
            self.user_run.pop(sid, None)
            return None
        text = first_text(content)
        if text is None:
            return self.user_run.get(sid)
        alone = rendered_prompt(text, self.prompt_texts.get(sid, {})) is not None
        run = self.user_run[sid] = text if alone else self.user_run.get(sid, "") + text
        return run

    def sent(self, model: SessionModel, sid: str, idx: int, busy: bool) -> None:
        """A reopen of a session the connection knows: its replay comes before its own
        answer."""
        self.loaded.pop(sid, None)
        self.proven.discard(sid)
        replay.reopen_sent(model, sid, idx, busy, self.reopened_busy)

    def cancelled(self, model: SessionModel | None, sid: str) -> None:
        replay.cancel_after_reopen(model, self.reopened_busy.get(sid))

    def reopened_since(self, sid: str | None, idx: int) -> int | None:
        """Where the client reopened session ``sid`` while it worked, after the message at
        ``idx`` (None: it did not). Work older than that reopen may run on in a session
        object the reopen replaced (``replay.cancel_after_reopen``): a cancel sent since may
        not reach it, so no deadline of ours proves it was never ended or answered."""
        at = self.reopened_busy.get(sid or "")
        return at if at is not None and at > idx else None

    def load_answer(self, sid: str) -> int | None:
        """Where the session's load was answered, no prompt since (None: not loaded)."""
        return self.loaded.get(sid)
