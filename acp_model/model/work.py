"""The foreground work in progress of one session, and what the client did to stop it.

:class:`Work` owns the tool calls of the current work, those of the last work that ended
cancelled (CANCEL-09), where the work began (evidence), and two facts an idle clears: a prompt
rejected while its work may still run (reading A-28=may), and the client having stopped work
another way than ``session/cancel``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acp_model.model.records import EXPLAINS, LIVE_CONTENT

__all__ = ["Work"]


@dataclass(slots=True)
class Work:
    """The current foreground work's tool calls and what may end it ``cancelled``."""

    tool_calls: set[str] = field(default_factory=set)  # ids of this work's tool calls
    cancelled_tools: set[str] = field(default_factory=set)
    # Explanations only (not in the snapshot): where the current work began.
    began: int = field(default=-1, metadata=EXPLAINS)
    # A prompt was rejected since the last idle (reading A-28=may): the work it started before
    # its rejection may still run, unreported, until an idle ends it.
    rejected: bool = field(default=False, metadata={"canon": "dead.canon_rejected"})
    # The client stopped work another way since the last idle: it withdrew a prompt with
    # $/cancel_request (its activity may be cancelled, cancellation.mdx; an idle keeps this
    # while such a prompt is listed, its work still to come), or, in the newer revision,
    # refused a permission ("an interaction the agent offers"): either may explain a
    # cancelled stop reason, and neither obliges one.
    client_stopped: bool = field(default=False, metadata={"canon": "dead.canon_client_stopped"})
    # where the current work first showed a message, a thought or a tool call (-1: not yet):
    # work that ran that far was taken up, which CANCEL-11's warning on a cancel read together
    # with the work's prompt reads
    showed: int = field(default=-1, metadata=LIVE_CONTENT)
    # where the last work ended other than cancelled, no prompt or reopen since (-1: none):
    # v1's response ends its turn, and V1-TURN-01 reads it for content that comes after
    ended: int = field(default=-1, metadata=LIVE_CONTENT)

    def start(self, idx: int) -> None:
        self.began = idx
        self.showed = self.ended = -1
        self.cancelled_tools = set()
        self.tool_calls = set()

    def end(self, idx: int, *, cancelled: bool) -> None:
        """The work ended at ``idx``; ended cancelled, its tool calls get no more updates
        (CANCEL-09), otherwise content after it shows work still pending (V1-TURN-01)."""
        if cancelled:
            self.cancelled_tools = set(self.tool_calls)
        self.ended = -1 if cancelled else idx
        self.tool_calls = set()
