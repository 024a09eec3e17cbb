"""The v1 wire dialect: which of the model's events a v1 message stands for.

v1 has no state updates and no acknowledgement: a turn is a ``session/prompt`` request and its
response, which carries the turn's ``stopReason``. The model is the same for every revision
(one model), so the oracle derives v2's events from the v1 wire, at the index of the message
that shows them:

* the first turn content (a message, thought, tool call or plan update, or a permission
  request) for a session whose prompt is unanswered starts that prompt's turn: the prompt was
  accepted, its user message inserted, and work is running;
* the prompt's success response ends the turn (started first if nothing came): an idle with
  the response's ``stopReason`` that names the prompt it answers. Which of several unanswered
  prompts a turn's content belongs to is not on the v1 wire: the oldest is assumed, and a
  response ends only its own prompt, so another prompt still unanswered stays open (its work
  shows as running again at its next content or response);
* an error response to a prompt whose turn never showed is a rejection, unless the client
  cancelled since the prompt: then the turn ended without the ``cancelled`` stop reason the
  text asks for ("Agents MUST catch these errors", CANCEL-07 judges it, with its proof);
* -32800 for a prompt the client withdrew with ``$/cancel_request`` is that request's
  cancellation (cancellation.mdx): a rejection, or the cancelled end of its turn.

No rule is decided here; the checks of the session machine judge the derived events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_model.model.events import Ev, content_key, text_key
from acp_model.model.vocab import ErrorCode, Event

Derived = list[tuple[Event, Ev, str]]


@dataclass(slots=True)
class _Turn:
    prompt_id: Any
    prompt_idx: int
    content_key: str | None
    text_key: str | None
    shown: bool = False  # accepted, its user message inserted (fired once)
    started: bool = False  # running in the model's current span of work
    cancelled: bool = False  # the client sent session/cancel (or session/close) since
    withdrawn: bool = False  # the client withdrew the prompt itself ($/cancel_request)


@dataclass
class V1Turns:
    """The open prompts of each session, in the order they were sent."""

    open: dict[str, list[_Turn]] = field(default_factory=dict)

    def prompt(self, sid: str, req_id: Any, idx: int, blocks: Any) -> None:
        self.open.setdefault(sid, []).append(
            _Turn(req_id, idx, content_key(blocks), text_key(blocks)))

    def cancel(self, sid: str) -> None:
        for turn in self.open.get(sid, []):
            turn.cancelled = True

    def _find(self, sid: str, req_id: Any) -> _Turn | None:
        return next((t for t in self.open.get(sid, []) if t.prompt_id == req_id
                     and type(t.prompt_id) is type(req_id)), None)

    def withdraw(self, sid: str, req_id: Any) -> None:
        turn = self._find(sid, req_id)
        if turn is not None:
            turn.withdrawn = True

    def pending(self, sid: str) -> bool:
        """An unanswered prompt whose turn has not shown yet."""
        return any(not t.shown for t in self.open.get(sid, []))

    def start(self, sid: str, idx: int, what: str) -> Derived:
        """Turn content arrived: the oldest prompt whose turn has not shown starts."""
        turn = next((t for t in self.open.get(sid, []) if not t.started), None)
        if turn is None or any(t.started for t in self.open[sid]):
            return []  # no prompt, or its turn already runs
        return self._started(turn, idx, f"{what} (the turn of prompt #{turn.prompt_idx} "
                                         "starts)")

    def _started(self, turn: _Turn, idx: int, what: str) -> Derived:
        turn.started = True
        running = (Event.RUNNING_REPORTED, Ev(idx), what)
        if turn.shown:  # an earlier response ended the work span it was running in
            return [running]
        turn.shown = True
        return [(Event.PROMPT_ACCEPTED, Ev(idx, id=turn.prompt_id), what),
                (Event.USER_MESSAGE, Ev(idx, message_id=f"v1-prompt-{turn.prompt_idx}",
                                        new_message=True, content_key=turn.content_key,
                                        text_key=turn.text_key), what),
                running]

    def response(self, sid: str, req_id: Any, idx: int, result: Any, error_code: int | None,
                 what: str) -> Derived:
        """The prompt's response: the end of its turn, or its rejection."""
        turn = self._find(sid, req_id)
        if turn is None:
            return []
        self.open[sid].remove(turn)
        derived = self._ending(turn, idx, result, error_code, what)
        if derived[-1][0] == Event.IDLE_REPORTED:
            for other in self.open[sid]:  # the idle ends the model's span of work
                other.started = False
        return derived

    def _ending(self, turn: _Turn, idx: int, result: Any, error_code: int | None,
                what: str) -> Derived:
        req_id = turn.prompt_id
        if turn.withdrawn and error_code == ErrorCode.REQUEST_CANCELLED:
            # cancellation.mdx: a withdrawn request may be answered -32800; its turn, if it
            # showed, ended cancelled
            if not turn.shown:
                return [(Event.PROMPT_REJECTED, Ev(idx, id=req_id, error_code=error_code),
                         what)]
            out = [] if turn.started else self._started(turn, idx, what)
            return [*out, (Event.IDLE_REPORTED, Ev(idx, id=req_id, reason="cancelled"),
                           f"{what}: -32800 for the withdrawn prompt")]
        if error_code is not None or not isinstance(result, dict):
            if not turn.shown and not turn.cancelled:
                return [(Event.PROMPT_REJECTED, Ev(idx, id=req_id, error_code=error_code),
                         what)]
            # no content shown: an abort error, or a rejection of the prompt
            refusal = not turn.shown
            out = [] if turn.started else self._started(turn, idx, what)
            return [*out, (Event.IDLE_REPORTED, Ev(idx, id=req_id, error_code=error_code,
                                                   maybe_refusal=refusal),
                           f"{what}: an error, not a stop reason")]
        reason = result.get("stopReason")
        reason = reason if isinstance(reason, str) else None
        out = [] if turn.started else self._started(turn, idx, what)
        return [*out, (Event.IDLE_REPORTED, Ev(idx, id=req_id, reason=reason),
                       f"{what} (stopReason {reason!r})")]
