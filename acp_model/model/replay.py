"""Replayed history: which requests ask for it, what a replay owes (SESS-07's whole
conversation, SESS-08's one id per message) and what a reopen changes in the session's model.
Where a replay may come relative to its request's answer is :mod:`~acp_model.model.replay_order`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp_model.model import wire_table
from acp_model.model.answering import Answering
from acp_model.model.check import check, watches
from acp_model.model.vocab import CancelStatus, Reads, Role
from acp_model.trace.methods import Method

# sessionUpdate kinds that carry conversation history (v1 session-setup.mdx §Loading Sessions;
# v2's whole-message upserts, §Resuming Sessions)
HISTORY_KINDS = wire_table.history_kinds()
# the requests that reopen an existing session
REOPENING = wire_table.reopening()


@check("SESS-07", role=Role.FINDING, reads=[Reads.RESPONSE])
def conversation_replayed(method: str, request: int, response: int,
                          missing: list[tuple[int, str]], replayed: int) -> str | None:
    """A request for the whole history replays the entire conversation: every user message
    of a turn that ended normally before the request (``missing``: those whose text the
    replay did not give back, with where each entered the conversation)."""
    if not missing:
        return None
    shown = "; ".join(f"#{idx} {text[:80]!r}" for idx, text in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return (f"{method} #{request} (answered #{response}) asked for the entire conversation, "
            f"but its replay ({replayed} user message update(s)) never gave back the user "
            f"message(s) {shown}{more}, whose turns ended normally before the request was "
            "sent")


# The message families (user, agent, thought) of the update kinds that carry a messageId
_FAMILY = wire_table.families()


def asks_for_whole_history(method: str, params: object) -> bool:
    """v1 session/load, or a session/resume whose cursor is the start: the entire
    conversation is owed (SESS-07)."""
    if method == Method.LOAD:
        return True
    cursor = params.get("replayFrom") if isinstance(params, dict) else None
    return method == Method.RESUME and isinstance(cursor, dict) and cursor.get("type") == "start"


def asks_for_replay(method: str, params: object) -> bool:
    """A session/resume with a ``replayFrom`` cursor (or a session/load) asks the agent to
    replay history before it answers."""
    if method == Method.LOAD:
        return True
    return method == Method.RESUME and isinstance(params, dict) \
        and params.get("replayFrom") is not None


@check("SESS-08", role=Role.FINDING, reads=[Reads.UPDATE])
def replayed_ids_unique(replayed: dict[str, str] | None, update: dict[str, object]
                        ) -> str | None:
    """During replay every replayed message has its own messageId: one id never names two
    messages (a user message and an agent message) of the replay. Chunks and upserts of one
    message share its id, so only a reuse across families proves two messages."""
    family = _FAMILY.get(str(update.get("sessionUpdate")))
    mid = update.get("messageId")
    if replayed is None or family is None or not isinstance(mid, str):
        return None
    earlier = replayed.setdefault(mid, family)
    if earlier == family:
        return None
    return (f"messageId {mid!r} was replayed for one message ({earlier}) and again for "
            f"another ({family}: {update.get('sessionUpdate')}) in the same replay: two "
            "replayed messages share one id")


@check("SDK-RESUME-01", role=Role.FINDING, reads=[Reads.RESUME_ANSWER])
def resume_reports_state(a: Answering) -> str | None:
    """sdk-2.4.0: a successful session/resume response comes after a current state_update
    of the session (the agent writes both, so their order on its stream is its own)."""
    if a.has_error or a.state_reported:
        return None
    return ("session/resume answered without a state_update of the session between the "
            "request and the response: the response alone does not tell the client the "
            "session's foreground state")


@watches(Reads.UPDATE)
def replayed_history(open_requests: Iterable[Any], sid: str, kind: object, busy: bool
                     ) -> bool:
    """History that a session/load or session/resume of a quiet session the connection knows
    replays (``open_requests``: the client's, each with ``reopens`` and ``session``): none of
    it is new work of the session. A working session's content is its turn's as much as
    history: the turn carries it, and it is judged as the turn's."""
    return kind in HISTORY_KINDS and not busy and any(
        r.reopens and r.session == sid for r in open_requests)


@watches(Reads.STATE_UPDATE)
def state_reported(open_requests: Iterable[Any], sid: str) -> None:
    """A state update of session ``sid``: its open session/resume has its state reported
    (SDK-RESUME-01 reads it at the resume's response)."""
    for r in open_requests:
        if r.method == Method.RESUME and r.session == sid:
            r.state_reported = True


@watches(Reads.UPDATE)
def replaying(open_requests: Iterable[Any], sid: str) -> Any:
    """The open request that asked session ``sid`` for a replay (None: none)."""
    return next((r for r in open_requests if r.replayed is not None and r.session == sid),
                None)


def resume_awaited(open_requests: Iterable[Any], sid: str, busy: bool) -> int | None:
    """Where the open session/resume of session ``sid`` was sent (None: none), unless it
    reopens a working session: content then is its turn's as much as history."""
    return next((r.idx for r in open_requests if r.method == Method.RESUME
                 and r.session == sid and not (r.reopens and busy)), None)


def reopen_sent(model: Any, sid: str, idx: int, busy: bool, reopened_busy: dict[str, int]
                ) -> None:
    """A session/load or session/resume of session ``sid`` was sent at ``idx``. What the
    session shows from now on may be the reopen's history (V1-LOAD-01 and SESS-08 judge where
    it comes), so the end of an earlier cancelled turn no longer marks content as that turn's
    (CANCEL-09). Sent while the session worked, it is kept (:func:`cancel_after_reopen`), and
    it may explain that work ending cancelled."""
    forget_turn_end(model)
    if busy and not model.ctx.readings.chose("A-30", "same"):
        reopened_busy[sid] = idx
        # an agent may stop the work of the session a reopen replaces: a possible cause of a
        # cancelled end (CANCEL-11), though no obligation to end it so
        model.work.client_stopped = True


def forget_turn_end(model: Any) -> None:
    """What the session shows from here on may be history, or the turn of a session that is
    reused: the end of an earlier turn no longer marks it as that turn's late content
    (CANCEL-09, V1-TURN-01)."""
    model.cancel_book.cancelled_end = model.work.ended = -1


def cancel_after_reopen(model: Any, reopened_at: int | None) -> None:
    """A cancel sent after the client reopened the session while its work ran (reported, or a
    prompt still being started), that work still running: the text does not say whether a
    reopen replaces the session that work belongs to (an agent may load a fresh session
    object and leave the old turn orphaned), so which one the cancel addresses is open. It
    stays a possible cause of a cancelled end, but no proof that one was owed: every check
    that rests on the cancel reaching the work (CANCEL-07, CANCEL-05, A-10.cancel, the
    liveness of the work) reads ``CancelRec.reopened`` and says so as a warning at most."""
    if model is None or reopened_at is None or not model.cancel_book.cancels \
            or model.ctx.readings.chose("A-30", "same"):
        return  # (A-30=same: the reopened session is the work's own; the cancel binds)
    prompts = model.queue.prompts
    if prompts and prompts[-1].idx > reopened_at:
        return  # a prompt since the reopen: the work now running may be that prompt's
    cancel = model.cancel_book.cancels[-1]
    if cancel.idx > reopened_at and (cancel.status == CancelStatus.WORK or cancel.prior):
        cancel.reopened = reopened_at
