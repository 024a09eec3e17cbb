"""Where a reopen's replayed history may come: before a session/load's answer (v1's
V1-LOAD-01), never in a session/resume (v1's V1-RESUME-01, v2's SESS-06 without a cursor), and
before a resume's answer that asked for it (v2's SESS-07).

Every check here reads one ``session/update`` of a known session through the same facts
(:class:`Position`, worked out once per update by the oracle) and is handed it by the table
its declaration builds (:func:`table`): which of them judge is the revisions' data (the
catalogue's ``Rule.revisions`` and the ``SPEC`` levels), not a branch. Content on the agent's
stream cannot say whether it is history or something written for another reason (a late update
of an earlier turn), so a replay out of place is probable and warns, unless a user message
carries an earlier prompt's text or a message id the session used (then it is proven).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from acp_model.model import wire_table
from acp_model.model.check import CheckMeta, check, dispatch
from acp_model.model.vocab import Level, Reads, Role

HISTORY_KINDS = wire_table.history_kinds()
USER_KINDS = wire_table.user_kinds()


class Position(NamedTuple):
    """One update of a known session, placed against the reopens around it (a NamedTuple:
    one is built for every update of a checked trace, at a fraction of a frozen dataclass's
    cost)."""

    kind: object  # its sessionUpdate, as the agent sent it
    resume: int | None  # an open session/resume of the session (not of a working one)
    resume_without_cursor: int | None  # the same, one that asked for no replay
    load_answer: int | None  # where its reopen was answered, no prompt since (quiet session)
    earlier: str | None  # why it is an earlier message of the conversation (None: may be new)
    replayed: str | None  # why a user message after a load's answer is provably history
    proven: bool = False  # a user message of this load's window was proven replayed

    @property
    def history(self) -> bool:
        return self.kind in HISTORY_KINDS

    @property
    def quiet(self) -> bool:
        """No reopen around it (no resume open, no load answered since the last prompt):
        every check here reads one of them, so none judges a quiet position, and the oracle
        counts them held without placing the update (a test holds each check to it)."""
        return self.resume is None and self.resume_without_cursor is None \
            and self.load_answer is None


def table(rev: str) -> tuple[tuple[Callable[[Position], str | None], CheckMeta], ...]:
    """The checks of this module that judge under ``rev``, in definition order."""
    return dispatch(__name__, rev).get(Reads.UPDATE, ())


@check("V1-LOAD-01", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def load_replays_before_answering(at: Position) -> str | None:
    """session/load streams the conversation before its response: no history for the loaded
    session after the response while no prompt came since (probable, so a warning; a user
    message shown to be history is the failure below, and the content after it in the same
    window is part of that one replay, not a warning of its own)."""
    if at.load_answer is None or not at.history or at.replayed is not None \
            or at.proven:
        return None
    return (f"{at.kind} for a loaded session after the session/load response "
            f"#{at.load_answer} and before any prompt: probably history replayed after the "
            "agent answered")


@check("V1-LOAD-01", role=Role.FINDING, reads=[Reads.UPDATE])
def load_history_after_answer(at: Position) -> str | None:
    """session/load streams the conversation before its response: a user message of the
    session's history (``replayed`` says why it is one) after the response, while no prompt
    came since, is history streamed after the agent answered. v1 has no user message but the
    client's prompts, so it can be nothing else."""
    if at.load_answer is None or at.replayed is None:
        return None
    return (f"{at.kind} for a loaded session after the session/load response "
            f"#{at.load_answer} and before any prompt: {at.replayed}, so it is replayed "
            "history, which the agent must stream before it answers")


def _replay_in_resume(at: Position, resume: int | None) -> str | None:
    if resume is None or not at.history or at.earlier is None:
        return None
    return (f"{at.kind} between session/resume #{resume} and its response: {at.earlier}, "
            "probably replayed history, which resume must not send")


@check("V1-RESUME-01", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def resume_replays_nothing(at: Position) -> str | None:
    """session/resume replays no history: no earlier message of the conversation between the
    request and its response (the agent may have written it before it read the request: a
    warning). Earlier means a user message, which no prompt was open to carry, or a message id
    the session already used (``earlier`` says which); new content, such as a notice the agent
    writes on every start, is not history."""
    return _replay_in_resume(at, at.resume)


@check("SESS-06", level=Level.WARN, role=Role.FINDING, reads=[Reads.UPDATE])
def resume_without_cursor_replays_nothing(at: Position) -> str | None:
    """v2: session/resume without replayFrom replays no history: no earlier message of the
    conversation between the request and its response (a warning, as v1's V1-RESUME-01:
    the agent may have written it before it read the request)."""
    return _replay_in_resume(at, at.resume_without_cursor)


@check("SESS-07", reading="SPEC", levels={"v1": "off"}, level=Level.WARN, role=Role.FINDING,
       reads=[Reads.UPDATE])
def resume_replays_before_answering(at: Position) -> str | None:
    """v2: a session/resume that asked for the whole history answers once it was all
    reported: no earlier message of the conversation after the response while no prompt came
    since (probable, so a warning: the session may show it for another reason). v1 states the
    order of a load's replay as a rule of its own (V1-LOAD-01)."""
    if at.load_answer is None or not at.history or at.earlier is None:
        return None
    return (f"{at.kind} for a resumed session after the session/resume response "
            f"#{at.load_answer} and before any prompt: {at.earlier}, probably history "
            "replayed after the agent answered")


def earlier_message(kind: object, message_id: object, seen: set[str]) -> str | None:
    """Why content on the agent's stream is an earlier message of the conversation (None: it
    may be new): a user message, or a message id ``seen`` before in the session."""
    if kind in USER_KINDS:
        return "a user message while no prompt was open"
    if isinstance(message_id, str) and message_id in seen:
        return f"messageId {message_id!r} names a message the session sent before"
    return None


def rendered_prompt(text: str, prompts: dict[str, int]) -> tuple[str, int] | None:
    """The earlier prompt a user message's ``text`` renders (None: none provably): the text is
    that prompt's first text block (``prompts`` maps it, stripped, to where the prompt was
    sent), or begins with it, whole, followed by white space and what an agent writes for the
    prompt's other blocks (gemini-cli renders a resource link as an ``@path`` mention and
    expands an embedded resource after the text). A prompt text that ends inside a word of
    the message is no proof: the longest match at a word boundary is the prompt named."""
    body = text.strip()
    if body in prompts:
        return body, prompts[body]
    ends = [i for i, ch in enumerate(body) if ch.isspace()]
    for end in reversed(ends):
        head = body[:end]
        if head in prompts:
            return head, prompts[head]
    return None


def replayed_user_message(kind: object, message_id: object, text: str | None, seen: set[str],
                          prompts: dict[str, int]) -> str | None:
    """Why a user message is provably an earlier message of the conversation (None: it is
    not shown to be): its ``text`` (a run of user chunks joined) renders prompt
    ``prompts[...]`` of the session (:func:`rendered_prompt`), or it names a message id the
    session used before."""
    if kind not in USER_KINDS:
        return None
    found = None if text is None else rendered_prompt(text, prompts)
    if text is not None and found is not None:
        head, idx = found
        if head == text.strip():
            return f"it carries the text of the session's earlier prompt #{idx}"
        return (f"it begins with the text of the session's earlier prompt #{idx} "
                f"({_quote(head)}), followed by what renders the prompt's other blocks")
    if isinstance(message_id, str) and message_id in seen:
        return f"its messageId {message_id!r} names a message the session sent before"
    return None


def _quote(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[:width - 3] + "...")
