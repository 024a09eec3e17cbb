"""One abstract event of the explorer's alphabet."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_model.explorer.bounds import SESSION_IDS
from acp_model.model import wire_table
from acp_model.model.vocab import AGENT_EVENTS
from acp_model.model.wire_table import Over


def _plain(a: Any) -> str:
    return "" if a is None else str(a)


# How a label shows each kind of argument (wire_table.Over): prompts by position p0, p1...,
# permission requests q0, q1...
_SHOWN: dict[Over, Callable[[Any], str]] = {
    Over.PENDING: lambda a: f"p{a}",
    Over.OLDEST_PENDING: lambda a: f"p{a}",
    Over.ANSWER: lambda a: f"q{a[0]}={a[1]}",
    Over.ELICITATION_ANSWER: lambda a: f"q{a[0]}={a[1]}",
    Over.OPEN_PERMISSION: lambda a: f"q{a}",
    Over.REASON: lambda a: "none" if a is None else str(a),
    Over.TOOL_STATUS: lambda a: f"{a[0]}={a[1]}",
}
# each event of the alphabet: how its argument is shown (its form's kind; sync: plain)
_SHOW = {form.event: _SHOWN.get(form.over, _plain) for form in wire_table.FORMS}


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
        """Its argument as labels show it (by its form's kind, ``wire_table.Over``)."""
        return _SHOW.get(self.event, _plain)(self.arg)

    @property
    def label(self) -> str:
        who = "" if self.session is None else f"{SESSION_IDS[self.session]} "
        payload = self.payload
        return f"{who}{self.event}" + (f"({payload})" if payload else "")

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "session": None if self.session is None
                else SESSION_IDS[self.session], "party": self.party, "event": self.event,
                "payload": self.payload}
