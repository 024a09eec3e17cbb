"""Elicitations the fuzz client holds open: a user who leaves the form up while the work goes
on, and stops the turn with the form still showing.

Unless told otherwise the client's services answer each elicitation at once
(``fuzzing/services.py``), and then an agent never shows what it does with an elicitation its
cancelled work no longer needs (SDK-ELICIT-01: withdraw it). A drawn action
(:class:`~acp_model.fuzzing.actions.HoldElicitations`) makes the client hold the session's
elicitations from then on, as it holds permission requests: an ``answer_elicitation`` action
answers one; a cancel of the session answers those it held once the cancelled work has ended
(or a short wait has passed: an agent may wait for them), with the action the hold drew; the
drain answers any left and ends the hold with the example, so an example on a shared process
starts as a fresh one does. A request the agent withdrew (``$/cancel_request``) is answered
with error -32800, as cancellation.mdx shows (CANCEL-14: it is still answered).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acp_model.fuzzing.answers import CANCELLED_ERROR
from acp_model.fuzzing.calls import AgentExited
from acp_model.fuzzing.services import ELICIT, elicitation_result
from acp_model.model.vocab import ElicitationAction
from acp_model.report.reach import Reach

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import HoldingOps


@dataclass(frozen=True)
class Held:
    """One elicitation the client holds open."""

    sid: str
    rid: Any
    params: Mapping[str, Any]


class HeldElicitations:
    """Which sessions' elicitations this client holds (and what a cancel then answers them
    with), and those it holds now, in the order they came."""

    def __init__(self, client: HoldingOps) -> None:
        self.client = client
        self.holding: dict[str, ElicitationAction] = {}  # sid -> the answer after a cancel
        self.held: list[Held] = []

    def hold(self, sid: str, after_cancel: ElicitationAction) -> None:
        with self.client.lock:
            self.holding[sid] = after_cancel

    def take(self, msg: Mapping[str, Any]) -> bool:
        """Hold ``msg`` if it is an elicitation of a session whose elicitations are held (the
        caller checked that the client serves elicitations); False leaves it to the services."""
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, Mapping) else None
        with self.client.lock:
            if msg.get("method") != ELICIT or sid not in self.holding:
                return False
            self.held.append(Held(sid, msg["id"], params))
        return True

    def waiting(self, sid: str) -> list[Held]:
        """The elicitations of session ``sid`` held now."""
        with self.client.lock:
            return [h for h in self.held if h.sid == sid]

    def answer(self, sid: str, action: ElicitationAction, *, newest: bool = False) -> bool:
        """Answer one held elicitation of ``sid`` (the oldest, or the newest) with ``action``,
        or with -32800 if the agent withdrew it; False when none is held."""
        with self.client.lock:
            mine = [h for h in self.held if h.sid == sid]
            if not mine:
                return False
            held = mine[-1] if newest else mine[0]
            self.held.remove(held)
            withdrawn = self.client.oracle.withdrawn(held.rid)
        with contextlib.suppress(AgentExited, TimeoutError):
            if withdrawn:
                self.client.calls.respond(held.rid, error=CANCELLED_ERROR)
            else:
                self.client.calls.respond(held.rid, result=elicitation_result(held.params,
                                                                             action))
        return True

    def after_cancel(self, idx: int) -> None:
        """Once a cancel of session ``idx`` was sent: wait (a short window) until the
        cancelled work has ended, then answer what was held with the hold's action, and
        prove it read (what the agent does with it is judged)."""
        c = self.client
        sid = c.sessions[idx].sid
        if not self.waiting(sid):
            return
        c.reach[Reach.CANCELS_DURING_ELICITATION] += 1
        c.wait_until(lambda: not c.busy(idx), c.window(1.0))
        action = self.holding.get(sid, ElicitationAction.CANCEL)
        while self.answer(sid, action):
            pass
        c.sync()

    def release(self, sids: Sequence[str]) -> int:
        """The example ends: answer what the sessions ``sids`` hold (cancel, or -32800 where
        withdrawn) and hold theirs no more. Returns how many were answered."""
        with self.client.lock:
            for sid in sids:
                self.holding.pop(sid, None)
        answered = 0
        for sid in sids:
            while self.answer(sid, ElicitationAction.CANCEL):
                answered += 1
        return answered


__all__ = ["Held", "HeldElicitations"]
