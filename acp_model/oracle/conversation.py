"""The conversation of each session as the trace shows it, and the replays that owe it back
(SESS-07, decided by :func:`acp_model.model.replay.conversation_replayed`).

What the conversation holds is read off the wire, never guessed: under v1, the text blocks of
each prompt whose response ended its turn normally (end_turn, max_tokens, max_turn_requests);
under v2, each user message the agent reported live, once the idle that follows it ends the
work normally. A refused, cancelled or failed turn may be left out of the history (a refusal's
user message is, ``$defs.StopReason``), so it is not owed; a compaction replaces what came
before it, so nothing before one is owed. The fuzzer, as the client, sent every prompt of the
session on its connection, so the same record is what it remembers.

A request for the whole history (v1 ``session/load``, v2 ``session/resume`` from the start)
owes every entry that was complete when it was sent. Its replay is the user text the session
shows from the request until the client prompts the session again (or reopens it, or the
trace ends); each owed entry's text blocks must appear in it, whitespace aside (an agent may
split or join a message's blocks and chunks as it likes). A replay that went on after the
response (a user message, or a message id the session used before) already broke the order
rule (V1-LOAD-01, or SESS-07's own order warning): what it still lacks may be in flight, so
it is not judged again; new content after the response (a notice) is not replay. A refused
reopen owes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acp_model.model import replay, wire_table
from acp_model.model.check import watches
from acp_model.model.vocab import Reads, State
from acp_model.oracle.store import ViolationStore

NORMAL_ENDS = frozenset({"end_turn", "max_tokens", "max_turn_requests"})
COMPACTION_KINDS = wire_table.compaction_kinds()
USER_KINDS = wire_table.user_kinds()
STATE_KINDS = wire_table.state_kinds()
_IDLE = State.IDLE  # (read once: an enum member read off its class costs ~150 ns in 3.11)


def _norm(text: str) -> str:
    """Text as compared: without any whitespace (an agent may join or split blocks and
    chunks anywhere, and re-wrap them)."""
    return "".join(text.split())


def _texts(content: Any) -> list[str]:
    blocks = content if isinstance(content, list) else [content]
    return [b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text"
            and isinstance(b.get("text"), str)]


@dataclass(frozen=True, slots=True)
class UserEntry:
    """A user message of the conversation: where it entered it, its text blocks."""

    idx: int
    texts: tuple[str, ...]
    complete_at: int  # where its turn ended normally


@dataclass(slots=True)
class Window:
    """A request for the whole history, and the user text the session showed since."""

    method: str
    request: int
    owed: tuple[UserEntry, ...]
    response: int | None = None
    late: bool = False  # history came after the response
    updates: int = 0
    text: dict[Any, str] = field(default_factory=dict)  # messageId (None: none) -> its text

    def add(self, update: dict[str, Any]) -> None:
        self.updates += 1
        mid = update.get("messageId") if isinstance(update.get("messageId"), str) else None
        joined = "".join(_texts(update.get("content")))
        if update.get("sessionUpdate", "").endswith("_chunk") or mid is None:
            self.text[mid] = self.text.get(mid, "") + joined
        elif "content" in update:
            self.text[mid] = joined  # a whole-message upsert replaces

    def missing(self) -> list[tuple[int, str]]:
        shown = _norm("\n".join(self.text.values()))
        out = []
        for entry in self.owed:
            wanted = [_norm(t) for t in entry.texts if _norm(t)]
            if wanted and not all(t in shown for t in wanted):
                out.append((entry.idx, " ".join(" ".join(t.split()) for t in entry.texts)))
        return out


class Conversations:
    """Per session: the conversation so far, v2's user messages awaiting the end of their
    work, and the open request for the whole history."""

    def __init__(self, store: ViolationStore, prompts_are_the_conversation: bool) -> None:
        self.store = store
        # the prompts whose turns ended normally are the conversation (v1's wire), not the
        # user messages the agent reports live (v2's)
        self.from_prompts = prompts_are_the_conversation
        self.entries: dict[str, list[UserEntry]] = {}
        self.awaiting: dict[str, dict[Any, tuple[int, str]]] = {}  # v2: messageId -> (idx, text)
        self.windows: dict[str, Window] = {}
        self.compacted: dict[str, int] = {}  # session -> its latest compaction
        # per session: where each user message id was first reported, where work last ended
        self.reported: dict[str, dict[str, int]] = {}
        self.ended: dict[str, int] = {}
        self.seen: dict[str, set[str]] = {}  # per session: the message ids its content used

    # --- the conversation ---------------------------------------------------------------
    def turn_ended(self, sid: str, shape: Any, prompt_idx: int, stop_reason: Any,
                   idx: int) -> None:
        """A prompt's response ended its turn with ``stop_reason`` (a wire whose prompts are
        the conversation)."""
        texts = getattr(shape, "texts", ())
        if stop_reason in NORMAL_ENDS and texts:
            self.entries.setdefault(sid, []).append(UserEntry(prompt_idx, tuple(texts), idx))

    @watches(Reads.UPDATE)
    def update(self, sid: str, update: dict[str, Any], idx: int) -> None:
        """A session/update of a known session (any revision)."""
        kind = update.get("sessionUpdate")
        window = self.windows.get(sid)
        mid = update.get("messageId")
        earlier = False
        if isinstance(mid, str):  # (no set made for an update without a message id)
            seen = self.seen.get(sid)
            if seen is None:
                seen = self.seen[sid] = set()
            earlier = mid in seen
            seen.add(mid)
            if kind in USER_KINDS:
                self.reported.setdefault(sid, {}).setdefault(mid, idx)
        # (wire_table.reported_state, read off the kind already in hand)
        idle = kind in STATE_KINDS and update.get("state") == _IDLE
        if idle and update.get("stopReason") is not None:
            self.ended[sid] = idx
        if kind in USER_KINDS:
            if window is not None:
                window.add(update)
                window.late = window.late or window.response is not None
            elif not self.from_prompts:
                self._live_user_message(sid, update, idx)
        elif window is not None and window.response is not None \
                and kind in replay.HISTORY_KINDS and earlier:
            window.late = True  # a message of the replay, after the response
        if kind in COMPACTION_KINDS:
            self.compacted[sid] = idx  # what entered the conversation before is not owed
        elif idle:
            ended = self.awaiting.pop(sid, {})
            if update.get("stopReason") in NORMAL_ENDS:
                self.entries.setdefault(sid, []).extend(
                    UserEntry(at, (text,), idx) for at, text in ended.values())

    def _live_user_message(self, sid: str, update: dict[str, Any], idx: int) -> None:
        """v2: a user message the agent reported outside a replay (v1 reports none: its
        prompts are the conversation, :meth:`turn_ended`)."""
        mid = update.get("messageId")
        if not isinstance(mid, str):
            return
        waiting = self.awaiting.setdefault(sid, {})
        at, text = waiting.get(mid, (idx, ""))
        joined = "".join(_texts(update.get("content")))
        chunk = str(update.get("sessionUpdate", "")).endswith("_chunk")
        waiting[mid] = (at, text + joined if chunk else joined)

    def receipt(self, sid: str, message_id: object) -> tuple[int | None, int | None]:
        """Where the user message a receipt names was first reported, and where work last
        ended (SDK-RECEIPT-04)."""
        first = self.reported.get(sid, {}).get(message_id) \
            if isinstance(message_id, str) else None
        return first, self.ended.get(sid)

    # --- the replays ----------------------------------------------------------------------
    def reopen_sent(self, sid: str, method: str, idx: int, whole: bool) -> None:
        """A session/load or session/resume of a session the connection knows (``whole``:
        it asks for the whole history)."""
        self.close(sid)
        since = self.compacted.get(sid, -1)
        owed = tuple(e for e in self.entries.get(sid, ()) if e.complete_at < idx
                     and e.idx > since)
        if whole and owed:
            self.windows[sid] = Window(method, idx, owed)

    def reopen_answered(self, sid: str, idx: int, ok: bool) -> None:
        window = self.windows.get(sid)
        if window is None or window.response is not None:
            return
        if ok:
            window.response = idx
        else:
            del self.windows[sid]  # a refused reopen replays nothing and owes nothing

    def close(self, sid: str) -> None:
        """The client moved on (a prompt, another reopen) or the trace ended: judge the
        session's replay."""
        window = self.windows.pop(sid, None)
        if window is None or window.response is None or window.late:
            return
        missing = window.missing()
        self.store.run(replay.conversation_replayed, window.response, window.method,
                       window.request, window.response, missing, window.updates,
                       session=sid, related=[window.request, *(i for i, _ in missing)])

    def close_all(self, sessions: Iterable[str] | None = None) -> None:
        for sid in list(self.windows if sessions is None else sessions):
            self.close(sid)
