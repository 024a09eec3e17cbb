"""The user-action requests of one session (permission requests and session-scoped
elicitations) and the tool calls they guard.

:class:`PermissionBook` owns the open and answered requests (``PermRec``), the settled ones moved
out of the scans (``retired``), and the tool calls (``ToolRec``, which name the permission
request guarding them). An elicitation waits on the user as a permission request does (the
foreground-state rules STATE-05/06 read both alike), but guards no tool and is owed no answer
by a cancel (CANCEL-04 is the permission request's). The moves that only change this state
(``note_withdraw``, ``note_blocked``, ``note_resumed``, ``note_overlap``) are named by the
lifecycle directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from acp_model.model.events import Payload
from acp_model.model.records import RETIRED, PermRec, ToolRec
from acp_model.model.vocab import PROCEEDING_TOOL_STATUSES, Answer, ErrorCode, PermState

__all__ = ["PermissionBook"]

# The states the scans below compare each request with, read once: an enum's member read off
# its class costs about 150 ns in CPython 3.11 (``EnumType.__getattr__`` keeps the lookup off
# the attribute cache), and ``silent_block`` scans the book on every update a running session
# reports.
_OPEN, _ANSWERED = PermState.OPEN, PermState.ANSWERED


@dataclass(slots=True)
class PermissionBook:
    """User-action requests by id (open, answered, withdrawn), and the session's tool calls."""

    perms: dict[Any, PermRec] = field(default_factory=dict)
    # Requests done with, out of the scans (:meth:`retire`), found by id for their tools.
    retired: dict[Any, PermRec] = field(default_factory=dict, metadata=RETIRED)
    tools: dict[str, ToolRec] = field(default_factory=dict)

    # --- queries ---------------------------------------------------------------------------
    def perm(self, perm_id: Any) -> PermRec | None:
        """The permission request ``perm_id``, open, answered or retired."""
        return self.perms.get(perm_id) or self.retired.get(perm_id)

    def guard(self, tool_call_id: str | None) -> PermRec | None:
        """The permission request guarding this tool call, if any."""
        tool = self.tools.get(tool_call_id or "")
        return self.perm(tool.perm) if tool is not None else None

    def started(self, tool_call_id: str | None) -> bool:
        """The tool call went in_progress or completed at some point."""
        tool = self.tools.get(tool_call_id or "")
        return tool is not None and tool.started

    def any_open(self) -> bool:
        return any(p.state == _OPEN for p in self.perms.values())

    def elicitation_for(self, tool_call_id: str | None) -> PermRec | None:
        """The newest elicitation tied to this tool call (None: none, or no tool call)."""
        if tool_call_id is None:
            return None
        found = [p for p in (*self.retired.values(), *self.perms.values())
                 if p.elicitation and p.tool_call_id == tool_call_id]
        return max(found, key=lambda p: p.idx) if found else None

    def unwithdrawn_blocking(self) -> list[PermRec]:
        """Open elicitations the blocked work needed (SDK-ELICIT-01): sent, open when the
        agent reported requires_action, and neither answered nor withdrawn since."""
        return [p for p in self.perms.values()
                if p.elicitation and p.blocked_work and p.state == _OPEN]

    def block_unreported(self) -> bool:
        """A wait that is over was never reported as requires_action (STATE-05)."""
        return any(p.unreported_block and p.state != _OPEN for p in self.perms.values())

    def required_answers(self, perm_id: Any, *, error_too: bool,
                         ) -> frozenset[tuple[str, int | None]] | None:
        """The answers the client may still give to a permission request (CANCEL-04), as
        ``(answer, error code)`` pairs; ``None``: any answer.

        After a cancel, only the cancelled outcome; with ``error_too`` (reading A-14=both)
        also error -32800 once the agent withdrew the request with ``$/cancel_request``.
        """
        perm = self.perm(perm_id)
        if perm is None or not perm.owed_cancel:
            return None
        allowed = {(Answer.CANCELLED, None)}
        if error_too and perm.state == PermState.WITHDRAWN:
            allowed.add((Answer.ERROR, ErrorCode.REQUEST_CANCELLED))
        return frozenset(allowed)

    # --- changes ---------------------------------------------------------------------------
    def request(self, ev: Payload, *, owed_cancel: bool, elicitation: bool = False) -> None:
        """A new request; a reused id names the new request from now on, the newest in order.
        An elicitation guards no tool and is owed no cancelled answer."""
        self.retired.pop(ev.id, None)
        self.perms.pop(ev.id, None)
        perm = PermRec(ev.id, ev.idx, ev.tool_call_id, MappingProxyType(dict(ev.options or {})))
        perm.owed_cancel = owed_cancel and not elicitation
        perm.elicitation = elicitation
        self.perms[ev.id] = perm
        if ev.tool_call_id is not None and not elicitation:
            self.tools.setdefault(ev.tool_call_id, ToolRec()).perm = ev.id

    def answer(self, ev: Payload) -> PermRec | None:
        """The client's first answer to an open request (None: no such request)."""
        perm = self.perms.get(ev.id)
        if perm is None:
            return None
        perm.state = PermState.ANSWERED
        perm.answer = ev.answer
        perm.answer_idx = ev.idx
        for other in self.perms.values():  # each was sent before this answer
            if other is not perm:
                other.sibling_answered = True
        perm.overlapped = False  # read only while it waits
        return perm

    def cancel_reached(self) -> None:
        """A cancel: every request not yet answered must get the cancelled outcome."""
        for perm in self.perms.values():
            if perm.state != _ANSWERED and not perm.elicitation:
                perm.owed_cancel = True

    def note_tool(self, ev: Payload) -> None:
        """A tool call update: the tool call is known, and started once it proceeds."""
        tool = self.tools.setdefault(ev.tool_call_id or "", ToolRec())
        if ev.status in PROCEEDING_TOOL_STATUSES:
            tool.started = True

    def note_withdraw(self, ev: Payload) -> None:
        perm = self.perms.get(ev.id)
        if perm is not None and perm.state == PermState.OPEN:
            perm.state = PermState.WITHDRAWN
            perm.withdrawn = True
            perm.overlapped = False  # read only while it waits

    def note_blocked(self, ev: Payload) -> None:
        for perm in self.perms.values():
            perm.unreported_block = perm.overlapped = False  # it says the work is blocked now
            if perm.elicitation and perm.state == _OPEN:
                perm.blocked_work = True  # the blocked work waits on it (SDK-ELICIT-01)

    def note_resumed(self, ev: Payload) -> None:
        for perm in self.perms.values():
            if perm.state != _OPEN:
                perm.unreported_block = False

    def note_overlap(self, ev: Payload) -> None:
        """Running reported while a request waits: the agent says other work progresses."""
        for perm in self.perms.values():
            if perm.state == _OPEN:
                perm.overlapped = True

    def answered_indices(self) -> list[int]:
        return [p.answer_idx for p in self.perms.values() if p.state == _ANSWERED]

    def silent_block(self) -> None:
        """The agent wrote something while the session showed running: each request that
        blocks the work could have been reported as requires_action (STATE-05). A request a
        cancel reached holds nothing up any more: the work is winding down, running is its
        state. Nor does one the agent reported running after, or one whose sibling was
        answered since it was sent: other work (the answered request's tool, say) may be what
        progresses ("If other foreground work can progress, the state remains running",
        sdk-2.4.0 $defs.StateUpdate; the seed's "blocked" alike)."""
        for perm in self.perms.values():
            if perm.state == _OPEN and not perm.owed_cancel \
                    and not perm.overlapped and not perm.sibling_answered:
                perm.unreported_block = True

    # --- what can be forgotten -------------------------------------------------------------
    @staticmethod
    def settled(perm: PermRec, horizon: int) -> bool:
        """Answered, owing no requires_action report (STATE-05), and the agent acting on the
        answer (``Context.acted_on``) could no longer change a verdict: the answer is at or
        below ``horizon``, what it probably read or provably read (every index a verdict could
        still ask about is above it)."""
        return perm.state == _ANSWERED and not perm.unreported_block \
            and perm.answer_idx <= horizon

    def retire(self, horizon: int) -> None:
        """Move requests no scan can see again out of ``perms`` (the monitor's bound on a long
        session's cost; verdicts do not change).

        A request is settled (:meth:`settled`) once it is answered (the client's later answers
        to its id never reach the model: they are duplicates), owes no requires_action report
        (STATE-05) and no verdict can depend on the agent acting on it any more. Every check
        that scans ``perms`` then skips it; what reads it by id (PERM-11, STATE-06, CANCEL-04
        via :meth:`perm`) finds it in ``retired``. Not called by the explorer: its snapshots
        list ``perms``.
        """
        for pid, perm in list(self.perms.items()):
            if self.settled(perm, horizon):
                self.retired[pid] = self.perms.pop(pid)

    def compact(self, horizon: int) -> None:
        """Forget answered requests no check can read any more.

        Answered requests are read by STATE-05 (``unreported_block``), PERM-11 and STATE-06
        (through the tool call they guard); a settled one that guards no tool call only takes
        up room. The explorer calls this after each event, which frees the request's place in
        its bounds (``tests/unit/test_explore.py`` checks that a compacted configuration is one
        the exploration reaches).
        """
        for pid in self.forgettable(horizon):
            del self.perms[pid]

    def forgettable(self, horizon: int) -> list[Any]:
        """The ids :meth:`compact` forgets (the explorer copies a book it shares first)."""
        guarding = {t.perm for t in self.tools.values()} if self.perms else ()
        return [pid for pid, perm in self.perms.items()
                if self.settled(perm, horizon) and pid not in guarding]
