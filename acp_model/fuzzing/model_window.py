"""What the scripted model had done of a session's turn when the client wrote a cancel.

The wire cannot show that an agent had nothing left to do but write its stop reason when a
cancel came: its model (the scripted one, ``acp_model/llm/``) had released the turn's whole
final response, no tool call in it, and no model request of the session was open. The fuzzer
knows it, so it says so in the transcript (``trace/format.py``): ``turn_done`` on the record of
the cancel's write, and ``model_asked`` on the first record after a later model request of that
session's turn (the turn was not done after all). CANCEL-07 reads both (``CancelBook``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from acp_model.fuzzing.transcript import Transcript
from acp_model.trace.format import MODEL_ASKED, TURN_DONE
from acp_model.trace.wire import Record

__all__ = ["ModelWindow", "ScriptedTurns"]

PROMPT, CANCEL, WITHDRAW = "session/prompt", "session/cancel", "$/cancel_request"


class ModelWindow:
    """One connection's view of its scripted turns, by session (the model's owner): where
    each current turn's final response was released, the requests open, the sessions asked
    since a cancel that said the turn was done. Its state is guarded by the transcript's
    lock: the model's thread reports under it, and :meth:`stamp` runs under it."""

    def __init__(self, log: Transcript) -> None:
        self._log = log
        self._final: dict[str, int] = {}  # session -> the last record before its final release
        self._open: Counter[str] = Counter()  # session -> its turn's model requests open
        self._watch: set[str] = set()  # sessions with a cancel that said their turn was done
        self._asked: set[str] = set()  # of those, asked again since the last record
        self._prompts: dict[Any, str] = {}  # the client's prompt ids -> their sessions

    @classmethod
    def of(cls, log: Transcript) -> ModelWindow:
        window = cls(log)
        log.stamps.append(window.stamp)
        return window

    # --- the model's side (its server thread) ------------------------------------------------
    def requested(self, owner: str) -> None:
        """The agent made a model request of ``owner``'s current turn."""
        with self._log.cond:
            self._open[owner] += 1
            self._final.pop(owner, None)
            if owner in self._watch:
                self._asked.add(owner)

    def answered(self, owner: str, *, final: bool) -> None:
        """A response of ``owner``'s current turn ended; ``final``: it was the turn's end
        (text or a stop, no tool call), written whole."""
        with self._log.cond:
            self._open[owner] -= 1
            if self._open[owner] <= 0:
                del self._open[owner]
            if final:
                self._final[owner] = self._log.listeners.queued - 1

    # --- the transcript's side (``Transcript.append``, its lock held) -------------------------
    def stamp(self, record: Record) -> None:
        if self._asked:
            record[MODEL_ASKED] = sorted(self._asked)
            self._asked.clear()
        if record.get("dir") != "c2a":
            return
        msg = record.get("msg")
        for m in msg if isinstance(msg, list) else [msg]:
            if not isinstance(m, dict) or not isinstance(m.get("params"), dict):
                continue
            method, params = m.get("method"), m["params"]
            if method == PROMPT and not record.get("probe"):
                # (the client's deliberate breach starts no turn: one an agent takes up
                # anyway asks the model, which voids the fact, ``requested``)
                sid = params.get("sessionId")
                self._final.pop(sid, None)
                self._watch.discard(sid)
                self._prompts[m.get("id")] = sid
            elif method in (CANCEL, WITHDRAW):
                sid = params.get("sessionId") if method == CANCEL \
                    else self._prompts.get(params.get("requestId"))
                done = self._final.get(sid) if isinstance(sid, str) else None
                if done is not None and not self._open[sid] and done >= 0:
                    record[TURN_DONE] = done
                    self._watch.add(sid)


class ScriptedTurns:
    """The scripted turns a client's actions start: each registered with the scripted model
    together with the turn's listeners (the boundary schedule it reports to, the window a
    cancel is stamped from), and the latest one (the action being performed started it)."""

    def __init__(self, model: Any, schedule: Any, window: ModelWindow) -> None:
        self.model = model  # the ScriptedModel behind the agent (None: none)
        self.schedule = schedule
        self.window = window
        self.last: str | None = None

    def start(self, script: Any, sid: str) -> str | None:
        """A prompt starts a scripted turn of ``sid`` (``script``): its tag (None: no model)."""
        if self.model is None:
            return None
        self.last = self.model.register(script, sid, gate=self.schedule, window=self.window)
        return self.last
