"""What the sdk-2.4.0 revision orders around ``session/close`` (schema
``$defs.CloseSessionRequest``): the cancelled work's final updates and idle before the close
response, prompts the close kept from being inserted answered ``-32800``, and nothing for the
session after the close response.

The agent writes every message these rules order, so their order on its stream is its own: no
race with the client can explain a breach. :class:`Closes` keeps what a close leaves behind
(the prompts open when it was sent, the sessions closed); the checks are pure. Other revisions
do not state the order (the rules are off there: ``Rule.revisions``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from acp_model.model import wire_table
from acp_model.model.check import check, watches
from acp_model.model.vocab import WORK, ErrorCode, Reads, Role, State
from acp_model.trace.methods import Method

Run = Callable[..., bool]  # ViolationStore.run: runs one check and reports what it found
REOPENING = wire_table.reopening()  # they make a closed session live


@check("SDK-CLOSE-01", role=Role.FINDING, reads=[Reads.RESPONSE])
def work_ended_before_close(working: bool, close_request: int) -> str | None:
    """A successful session/close response comes after the idle that ends the foreground
    work the close cancelled (and that work's final updates)."""
    if not working:
        return None
    return (f"session/close #{close_request} was answered successfully while the session's "
            "foreground work had not ended: its idle with stopReason 'cancelled' (after the "
            "work's final updates) must come before the close response")


@check("SDK-CLOSE-02", role=Role.FINDING, reads=[Reads.RESPONSE])
def close_ends_held_prompt(has_error: bool, code: Any, inserted: bool, close_request: int
                          ) -> str | None:
    """A prompt still open when session/close was sent, whose user message the close kept
    from being inserted, is answered with -32800 (Request Cancelled)."""
    if not has_error or inserted or code == ErrorCode.REQUEST_CANCELLED:
        return None  # a success names an inserted message (SDK-RECEIPT-02 judges that)
    return (f"the prompt was open when session/close #{close_request} was sent and was not "
            f"inserted; it was answered with error {code!r} instead of -32800 "
            "(Request Cancelled)")


@check("SDK-CLOSE-03", role=Role.FINDING, reads=[Reads.REQUEST, Reads.NOTIFICATION])
def nothing_after_close(method: str, closed_at: int) -> str | None:
    """After its session/close response the agent sends no other message for the session
    on that connection (prompt responses excepted: they need not precede it)."""
    return (f"{method} for the session after its session/close response #{closed_at}: the "
            "agent sends nothing more for a closed session")


@dataclass
class Closes:
    """The connection's session/close requests, the prompts each found open, the sessions
    closed (session -> the close response's index) until a resume or load reopens them."""

    open: dict[int, tuple[str, frozenset[Any]]] = field(default_factory=dict)
    held: dict[Any, int] = field(default_factory=dict)  # prompt id -> the close request
    closed: dict[str, int] = field(default_factory=dict)
    # closed sessions whose close was answered before the work's idle: until that idle, what
    # the work still sends is SDK-CLOSE-01's consequence, not a second failure
    early: set[str] = field(default_factory=set)
    # Does SDK-CLOSE-03 apply (the revision states it)? Then ``gone`` is the index of the last
    # message it failed: a message that should not exist at all is that one failure, not also
    # whatever the session's model makes of it (CANCEL-09 for a cancelled tool's update).
    judges: bool = True
    gone: int = -1

    def live(self, sid: str) -> bool:
        """Is the session neither closed nor being closed (no close request open)?"""
        return sid not in self.closed and all(s != sid for s, _ in self.open.values())

    def requested(self, sid: str, idx: int, prompts: list[Any]) -> None:
        """The client sent session/close #``idx``; ``prompts``: the session's open ones."""
        self.open[idx] = (sid, frozenset(prompts))
        self.held.update(dict.fromkeys(prompts, idx))

    @watches(Reads.REQUEST, Reads.NOTIFICATION)
    def message(self, run: Run, direction: str, msg: Any, idx: int) -> None:
        """A request or notification: a resume or load reopens a closed session; an agent
        request or notification naming a closed session breaks SDK-CLOSE-03."""
        if not self.closed:
            return
        params = msg.get("params") if isinstance(msg, dict) and "method" in msg else None
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(sid, str) or sid not in self.closed:
            return
        if direction == "c2a":
            if msg["method"] in REOPENING:
                del self.closed[sid]
                self.early.discard(sid)
            return
        if sid in self.early:
            if _is_idle(params):
                self.early.discard(sid)
            return
        if run(nothing_after_close, idx, msg["method"], self.closed[sid], session=sid) \
                and self.judges:
            self.gone = idx

    @watches(Reads.RESPONSE)
    def response(self, run: Run, req: Any, rid: Any, error: Any, idx: int,
                 sessions: Mapping[str, Any]) -> None:
        """The agent answered request ``req`` (``error``: its error object, or None)."""
        sess = sessions.get(req.session)
        if req.method == Method.CLOSE:
            sid, prompts = self.open.pop(req.idx, (req.session, frozenset()))
            if error is not None:  # a refused close prevents nothing
                for prompt in prompts:
                    self.held.pop(prompt, None)
                return
            if run(work_ended_before_close, idx, sess is not None and sess.state in WORK,
                   req.idx, session=sid):
                self.early.add(sid)
            self.closed[sid] = idx
        elif req.method == Method.PROMPT and rid in self.held:
            close = self.held.pop(rid)
            prompt = next((p for p in sess.queue.prompts if p.id == rid), None) if sess else None
            inserted = prompt is not None and prompt.echo_idx >= 0
            code = error.get("code") if isinstance(error, dict) else None
            run(close_ends_held_prompt, idx, error is not None, code, inserted, close,
                session=req.session)


def _is_idle(params: Mapping[str, Any]) -> bool:
    return wire_table.reported_state(params.get("update")) == State.IDLE
