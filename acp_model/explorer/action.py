"""One abstract event of the explorer's alphabet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_model.explorer.bounds import SESSION_IDS
from acp_model.model.vocab import AGENT_EVENTS, Event


@dataclass(frozen=True, slots=True)
class Action:
    """One abstract event. ``arg`` is canonical (positions, tool ids, reasons), never a raw id,
    so an action taken from one configuration applies to every configuration with the same key.
    """

    session: int | None  # None: connection level (sync)
    event: str
    arg: Any = None

    @property
    def party(self) -> str:
        return "agent" if self.event in AGENT_EVENTS else "client"

    @property
    def payload(self) -> str:
        e, a = self.event, self.arg
        if a is None:
            return "none" if e == Event.IDLE_REPORTED else ""
        if e in (Event.PROMPT_ACCEPTED, Event.PROMPT_REJECTED, Event.PROMPT_CANCEL_REQUEST):
            return f"p{a}"
        if e == Event.PERMISSION_WITHDRAWN:
            return f"q{a}"
        if e == Event.PERMISSION_ANSWER:
            return f"q{a[0]}={a[1]}"
        if e == Event.TOOL_UPDATE:
            return f"{a[0]}={a[1]}"
        return str(a)

    @property
    def label(self) -> str:
        who = "" if self.session is None else f"{SESSION_IDS[self.session]} "
        payload = self.payload
        return f"{who}{self.event}" + (f"({payload})" if payload else "")

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "session": None if self.session is None
                else SESSION_IDS[self.session], "party": self.party, "event": self.event,
                "payload": self.payload}
