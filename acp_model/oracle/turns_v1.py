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

No rule is decided here; the checks of the session machine judge the derived events. The
open turns are a value (:data:`Turns`): each function takes the one before a message and
returns the one after it with the steps the message stands for, and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from acp_model.model.events import Payload, content_key, text_key
from acp_model.model.vocab import ErrorCode, Event

Step = tuple[Event, Payload, str]  # an event to fire on the session machine, its payload, its text
Steps = tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class V1Turn:
    """One unanswered prompt and how far its turn has shown."""

    prompt_id: Any
    prompt_idx: int
    content_key: str | None
    text_key: str | None
    shown: bool = False  # accepted, its user message inserted (fired once)
    started: bool = False  # running in the model's current span of work
    cancelled: bool = False  # the client sent session/cancel (or session/close) since
    withdrawn: bool = False  # the client withdrew the prompt itself ($/cancel_request)

    def answers(self, req_id: Any) -> bool:
        return self.prompt_id == req_id and type(self.prompt_id) is type(req_id)


# The open prompts of each session, in the order they were sent: a value, never changed in
# place (each function below returns the next one), so a translation is a pure function.
Turns = Mapping[str, tuple[V1Turn, ...]]
NONE: Turns = MappingProxyType({})


def _with(turns: Turns, sid: str, session: tuple[V1Turn, ...]) -> Turns:
    return MappingProxyType({**turns, sid: session})


def prompt(turns: Turns, sid: str, req_id: Any, idx: int, blocks: Any) -> Turns:
    """A prompt was sent for a known session: its turn is open, nothing shown yet."""
    turn = V1Turn(req_id, idx, content_key(blocks), text_key(blocks))
    return _with(turns, sid, (*turns.get(sid, ()), turn))


def cancel(turns: Turns, sid: str) -> Turns:
    """The client cancelled the session's work: every open turn was cancelled since."""
    session = turns.get(sid)
    if not session:
        return turns
    return _with(turns, sid, tuple(replace(t, cancelled=True) for t in session))


def withdraw(turns: Turns, sid: str, req_id: Any) -> Turns:
    """The client withdrew its prompt ``req_id`` (the oldest open one of that id)."""
    session = turns.get(sid, ())
    turn = next((t for t in session if t.answers(req_id)), None)
    if turn is None:
        return turns
    return _with(turns, sid, tuple(replace(t, withdrawn=True) if t is turn else t
                                   for t in session))


def start(turns: Turns, sid: str, idx: int, what: str) -> tuple[Turns, Steps]:
    """Turn content arrived: the oldest prompt whose turn is not running starts."""
    session = turns.get(sid, ())
    turn = next((t for t in session if not t.started), None)
    if turn is None or any(t.started for t in session):
        return turns, ()  # no prompt, or its turn already runs
    steps = _started(turn, idx, f"{what} (the turn of prompt #{turn.prompt_idx} starts)")
    running = replace(turn, started=True, shown=True)
    return _with(turns, sid, tuple(running if t is turn else t for t in session)), steps


def _started(turn: V1Turn, idx: int, what: str) -> Steps:
    running = (Event.RUNNING_REPORTED, Payload(idx), what)
    if turn.shown:  # an earlier response ended the work span it was running in
        return (running,)
    return ((Event.PROMPT_ACCEPTED, Payload(idx, id=turn.prompt_id), what),
            (Event.USER_MESSAGE, Payload(idx, message_id=f"v1-prompt-{turn.prompt_idx}",
                                    new_message=True, content_key=turn.content_key,
                                    text_key=turn.text_key), what),
            running)


def response(turns: Turns, sid: str, req_id: Any, idx: int, result: Any,
             error_code: int | None, what: str) -> tuple[Turns, Steps]:
    """The prompt's response: the end of its turn, or its rejection. An idle ends the
    model's span of work: the other open turns run again only at their next content."""
    session = turns.get(sid, ())
    turn = next((t for t in session if t.answers(req_id)), None)
    if turn is None:
        return turns, ()
    steps = _ending(turn, idx, result, error_code, what)
    ended = steps[-1][0] == Event.IDLE_REPORTED
    rest = tuple(replace(t, started=False) if ended and t.started else t
                 for t in session if t is not turn)
    return _with(turns, sid, rest), steps


def _ending(turn: V1Turn, idx: int, result: Any, error_code: int | None, what: str) -> Steps:
    req_id = turn.prompt_id
    if turn.withdrawn and error_code == ErrorCode.REQUEST_CANCELLED:
        # cancellation.mdx: a withdrawn request may be answered -32800; its turn, if it
        # showed, ended cancelled
        if not turn.shown:
            return ((Event.PROMPT_REJECTED, Payload(idx, id=req_id, error_code=error_code), what),)
        out = () if turn.started else _started(turn, idx, what)
        return (*out, (Event.IDLE_REPORTED, Payload(idx, id=req_id, reason="cancelled"),
                       f"{what}: -32800 for the withdrawn prompt"))
    if error_code is not None or not isinstance(result, dict):
        if not turn.shown and not turn.cancelled:
            return ((Event.PROMPT_REJECTED, Payload(idx, id=req_id, error_code=error_code), what),)
        # no content shown: an abort error, or a rejection of the prompt
        refusal = not turn.shown
        out = () if turn.started else _started(turn, idx, what)
        return (*out, (Event.IDLE_REPORTED, Payload(idx, id=req_id, error_code=error_code,
                                               maybe_refusal=refusal),
                       f"{what}: an error, not a stop reason"))
    reason = result.get("stopReason")
    reason = reason if isinstance(reason, str) else None
    out = () if turn.started else _started(turn, idx, what)
    return (*out, (Event.IDLE_REPORTED, Payload(idx, id=req_id, reason=reason),
                   f"{what} (stopReason {reason!r})"))
