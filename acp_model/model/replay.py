"""What v1 says about replayed history: session/load replays it before it answers, and
session/resume replays none of it.

Both are judged as warnings: content on the agent's stream cannot say whether it is history
or something the agent wrote for another reason (a late update of an earlier turn), so a
replay out of place is probable, never proven.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp_model.model import wire_table
from acp_model.model.check import check
from acp_model.model.vocab import CancelStatus, Level, Reads, Role
from acp_model.trace.methods import Method

# sessionUpdate kinds that carry conversation history (v1 session-setup.mdx §Loading Sessions;
# v2's whole-message upserts, §Resuming Sessions)
HISTORY_KINDS = wire_table.history_kinds()
# the requests that reopen an existing session
REOPENING = wire_table.reopening()
USER_KINDS = wire_table.user_kinds()


@check("V1-LOAD-01", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def load_replays_before_answering(kind: object, load_response: int | None) -> str | None:
    """session/load streams the conversation before its response: no history for the loaded
    session after the response while no prompt came since (probable, so a warning)."""
    if load_response is None or kind not in HISTORY_KINDS:
        return None
    return (f"{kind} for a loaded session after the session/load response #{load_response} "
            "and before any prompt: probably history replayed after the agent answered")


@check("V1-LOAD-01", role=Role.FINDING, reads=[Reads.UPDATE])
def load_history_after_answer(kind: object, load_response: int | None, replayed: str | None
                              ) -> str | None:
    """session/load streams the conversation before its response: a user message of the
    session's history (``replayed`` says why it is one) after the response, while no prompt
    came since, is history streamed after the agent answered. v1 has no user message but the
    client's prompts, so it can be nothing else."""
    if load_response is None or kind not in USER_KINDS or replayed is None:
        return None
    return (f"{kind} for a loaded session after the session/load response #{load_response} "
            f"and before any prompt: {replayed}, so it is replayed history, which the agent "
            "must stream before it answers")


def replayed_user_message(kind: object, message_id: object, text: str | None, seen: set[str],
                          prompts: dict[str, int]) -> str | None:
    """Why a user message is provably an earlier message of the conversation (None: it is
    not shown to be): it carries the text of prompt ``prompts[text]`` of the session, or a
    message id the session used before."""
    if kind not in USER_KINDS:
        return None
    if text is not None and text in prompts:
        return f"it carries the text of the session's earlier prompt #{prompts[text]}"
    if isinstance(message_id, str) and message_id in seen:
        return f"its messageId {message_id!r} names a message the session sent before"
    return None
def _replay_in_resume(kind: object, resume_request: int | None, earlier: str | None
                      ) -> str | None:
    if resume_request is None or kind not in HISTORY_KINDS or earlier is None:
        return None
    return (f"{kind} between session/resume #{resume_request} and its response: {earlier}, "
            "probably replayed history, which resume must not send")


@check("V1-RESUME-01", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def resume_replays_nothing(kind: object, resume_request: int | None, earlier: str | None
                           ) -> str | None:
    """session/resume replays no history: no earlier message of the conversation between the
    request and its response (the agent may have written it before it read the request: a
    warning). Earlier means a user message, which no prompt was open to carry, or a message id
    the session already used (``earlier`` says which); new content, such as a notice the agent
    writes on every start, is not history."""
    return _replay_in_resume(kind, resume_request, earlier)


@check("SESS-06", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def resume_without_cursor_replays_nothing(kind: object, resume_request: int | None,
                                          earlier: str | None) -> str | None:
    """v2: session/resume without replayFrom replays no history: no earlier message of the
    conversation between the request and its response (a warning, as v1's V1-RESUME-01:
    the agent may have written it before it read the request)."""
    return _replay_in_resume(kind, resume_request, earlier)


@check("SESS-07", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def resume_replays_before_answering(kind: object, answered: int | None, earlier: str | None
                                    ) -> str | None:
    """v2: a session/resume that asked for the whole history answers once it was all
    reported: no earlier message of the conversation after the response while no prompt came
    since (probable, so a warning: the session may show it for another reason)."""
    if answered is None or kind not in HISTORY_KINDS or earlier is None:
        return None
    return (f"{kind} for a resumed session after the session/resume response #{answered} "
            f"and before any prompt: {earlier}, probably history replayed after the agent "
            "answered")


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


def earlier_message(kind: object, message_id: object, seen: set[str]) -> str | None:
    """Why content on the agent's stream is an earlier message of the conversation (None: it
    may be new): a user message, or a message id ``seen`` before in the session."""
    if kind in USER_KINDS:
        return "a user message while no prompt was open"
    if isinstance(message_id, str) and message_id in seen:
        return f"messageId {message_id!r} names a message the session sent before"
    return None


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


@check("SDK-RESUME-01", role=Role.FINDING, reads=[Reads.RESPONSE])
def resume_reports_state(method: str, has_error: bool, state_reported: bool) -> str | None:
    """sdk-2.4.0: a successful session/resume response comes after a current state_update
    of the session (the agent writes both, so their order on its stream is its own)."""
    if method != Method.RESUME or has_error or state_reported:
        return None
    return ("session/resume answered without a state_update of the session between the "
            "request and the response: the response alone does not tell the client the "
            "session's foreground state")


def replayed_history(open_requests: Iterable[Any], sid: str, kind: object, busy: bool
                     ) -> bool:
    """History that a session/load or session/resume of a quiet session the connection knows
    replays (``open_requests``: the client's, each with ``reopens`` and ``session``): none of
    it is new work of the session. A working session's content is its turn's as much as
    history: the turn carries it, and it is judged as the turn's."""
    return kind in HISTORY_KINDS and not busy and any(
        r.reopens and r.session == sid for r in open_requests)


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
