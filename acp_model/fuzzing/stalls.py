"""The drain's deadline and the scripted model's stalls.

An agent that waits for its model's stream to end before it answers a cancel is slow, not
provably dead: while our scripted model holds that stream stalled, the agent's silence proves
nothing (deepagents' CANCEL-14 "never answered" of 2026-12-04 was ours). When the drain's
deadline falls on a busy session whose turn the model stalls, the stall ends and the session
gets a fresh deadline; that the model request outlived the cancel is CANCEL-05's warning.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp_model.model.check import declare
from acp_model.model.vocab import Level, Role

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import ClientOps

MODEL_STOPPED = declare(
    "CANCEL-05", "model_request_stopped", "Once it has read the cancel, the agent stops its "
    "model requests: a response stalled by the scripted model is not still open a deadline "
    "after the cancel.", module=__name__, role=Role.PROCESS)


class Stalls:
    """One drain's view of the stalls it ended (each session's once)."""

    def __init__(self, client: ClientOps, indices: Sequence[int]) -> None:
        self.client = client
        self.indices = indices
        self.ended: set[str] = set()

    def fresh_deadline(self, end: float) -> float | None:
        """The deadline ``end`` fell while a session still busy waits on a stalled model
        response: the stalls end, and the new deadline is returned (None: nothing ended)."""
        if time.monotonic() < end or not self._end():
            return None
        return time.monotonic() + self.client.deadline

    def _end(self) -> bool:
        client, freed = self.client, False
        if client.model is None:
            return False
        for i in self.indices:
            sid = client.sessions[i].sid
            if sid in self.ended or not client.busy(i) or client.open_permissions(i):
                continue
            if not client.model.end_stalls(sid):
                continue
            self.ended.add(sid)
            freed = True
            with client.lock:
                client.monitor.note(MODEL_STOPPED, f"a model request of the cancelled work "
                                    f"was still open {client.deadline:g} s after the cancel "
                                    "(the agent did not stop it, or waits for its stream to "
                                    "end): the scripted model ended its stall, and what the "
                                    "agent owes is judged on a fresh deadline", session=sid,
                                    level=Level.WARN)
        return freed
