"""Descriptions of messages ("session/update agent_message_chunk #12"), formatted only when a
violation's text reads them: judging a conforming message formats nothing."""

from __future__ import annotations

from typing import Any


class Said(tuple[Any, ...]):
    """``(fn, *args)``, read as the text ``fn(*args)`` (``str``, an f-string) and made into
    it only then: ``Said((REQUEST, method, idx))`` costs a tuple per message (no Python call),
    the string it stands for is made only for a violation (the hot path of ``acp-model
    check``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return self[0](*self[1:])  # type: ignore[no-any-return]

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __repr__(self) -> str:
        return repr(str(self))

    def __add__(self, other: Any) -> str:  # type: ignore[override]
        return str(self) + other

    def __radd__(self, other: str) -> str:
        return other + str(self)


MESSAGE = "{} #{}".format  # a notification: "session/cancel #3"
REQUEST = "{} request #{}".format  # "session/prompt request #4"
UPDATE = "session/update {} #{}".format  # by its sessionUpdate kind
RESPONSE = "response #{} to {} #{}".format  # "response #9 to session/prompt #4"
