"""Which part of the fuzz client wrote a client message: the ``"by"`` of a trace record.

A counterexample's transcript holds client messages that are none of the program's numbered
actions: the handshake, the sessions the client makes ahead of need (spares, so a program's
"new session" does not wait for the agent), the replies its rules give at once to an agent's
request, and the teardown after the last action. A maintainer reading a proof must be told
which is which, so the fuzz client stamps each write where it happens (``fuzzing/authorship.py``)
and the reports read the stamp, never a guess from where the message sits::

    {"dir": "c2a", "msg": {...}, "by": {"part": "action", "n": 3}}
    {"dir": "c2a", "msg": {...}, "by": {"part": "spare"}}

A record without ``"by"`` (a trace recorded by anything else, or before the stamp existed) has
no author: the reports fall back on what they knew then (the teardown's first message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Part(StrEnum):
    """The part of the client that wrote a message."""

    HANDSHAKE = "handshake"  # initialize (and authenticate): before any action
    ACTION = "action"  # a numbered action of the program (``Author.n``)
    SPARE = "spare"  # the session factory: a session (and its configuration) made ahead
    REPLY = "reply"  # an answer the client's rules give at once to an agent's request
    TEARDOWN = "teardown"  # the drain after the program's last action
    EARLIER = "earlier"  # an action of an earlier example on a shared agent process


@dataclass(frozen=True)
class Author:
    """Who wrote one client message: a part of the client, and for an action its number in
    the program (1-based, as the counterexample lists the actions)."""

    part: Part
    n: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part.value, **({"n": self.n} if self.n is not None else {})}

    @classmethod
    def from_json(cls, data: Any) -> Author | None:
        """The author a record's ``"by"`` names (None: none, or not one this reader knows)."""
        if not isinstance(data, Mapping):
            return None
        try:
            part = Part(data.get("part"))
        except ValueError:
            return None
        n = data.get("n")
        return cls(part, n if isinstance(n, int) and not isinstance(n, bool) else None)

    @property
    def numbered(self) -> bool:
        """One of the program's numbered actions wrote it."""
        return self.part is Part.ACTION and self.n is not None

    def tag(self) -> str:
        """A transcript line's short mark: ``action 3``, ``spare session``, ``teardown``."""
        return f"action {self.n}" if self.numbered else TAGS[self.part]

    def words(self) -> str:
        """What a reader is told about a message it wrote that no numbered action did."""
        return f"action {self.n} of the program" if self.numbered else WORDS[self.part]


TAGS = {
    Part.HANDSHAKE: "handshake",
    Part.ACTION: "an action",
    Part.SPARE: "spare session, made ahead",
    Part.REPLY: "client's reply",
    Part.TEARDOWN: "teardown",
    Part.EARLIER: "earlier example",
}
WORDS = {
    Part.HANDSHAKE: "the handshake's, before the program's first action",
    Part.ACTION: "one of the program's actions",
    Part.SPARE: "a spare session the client made ahead, not one of the program's actions",
    Part.REPLY: "the client's reply to the agent's request, which its rules give at once "
                "(not one of the program's actions)",
    Part.TEARDOWN: "the teardown's, after the program's last action",
    Part.EARLIER: "an earlier example's, on the shared agent process",
}
# Why the client makes sessions nobody asked for yet: the note a report adds when one shows.
SPARE_WHY = ("the client's session factory makes sessions, and configures them, ahead of need "
             "while the program runs, so that a \"new session\" action takes one that is "
             "ready instead of waiting for the agent: a spare's messages are none of the "
             "program's actions")


def author_of(record: Any) -> Author | None:
    """The author of a record (a trace ``Record`` or its JSON dict; None: not stamped)."""
    by = record.get("by") if isinstance(record, Mapping) else getattr(record, "by", None)
    return by if isinstance(by, Author) or by is None else Author.from_json(by)


__all__ = ["SPARE_WHY", "Author", "Part", "author_of"]
