"""One abstract event of the explorer's alphabet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_model.explorer.arguments import ARGUMENTS, plain
from acp_model.explorer.bounds import SESSION_IDS
from acp_model.model import wire_table
from acp_model.model.vocab import AGENT_EVENTS

# each event of the alphabet: how its argument is shown (its form's kind; sync: plain)
_SHOW = {form.event: ARGUMENTS[form.over].show for form in wire_table.FORMS}


@dataclass(frozen=True, slots=True)
class Move:
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
        return _SHOW.get(self.event, plain)(self.arg)

    @property
    def label(self) -> str:
        who = "" if self.session is None else f"{SESSION_IDS[self.session]} "
        payload = self.payload
        return f"{who}{self.event}" + (f"({payload})" if payload else "")

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "session": None if self.session is None
                else SESSION_IDS[self.session], "party": self.party, "event": self.event,
                "payload": self.payload}
