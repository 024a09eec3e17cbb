"""Sessions the client reopened (session/load, session/resume): what routing must remember of
a reopen to judge the history that follows it (:mod:`acp_model.model.replay`)."""

from __future__ import annotations

from acp_model.model import replay
from acp_model.model.session import SessionModel


class Reopens:
    """Per session: where its load was answered (no prompt since), and where a reopen was sent
    while the session worked."""

    def __init__(self) -> None:
        self.loaded: dict[str, int] = {}  # session -> its load response (no prompt since)
        self.reopened_busy: dict[str, int] = {}  # session -> a reopen sent while it worked

    def load_answered(self, sid: str, idx: int) -> None:
        self.loaded[sid] = idx

    def prompted(self, sid: str) -> None:
        """A prompt ends what the load's answer says of later content."""
        self.loaded.pop(sid, None)

    def sent(self, model: SessionModel, sid: str, idx: int, busy: bool) -> None:
        """A reopen of a session the connection knows: its replay comes before its own
        answer."""
        self.loaded.pop(sid, None)
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
