"""The drain's deadline and the scripted model's stalls.

An agent that waits for its model's stream to end before it answers a cancel is slow, not
provably dead: while our scripted model holds that stream stalled, the agent's silence proves
nothing. When the drain's deadline falls on a busy session whose turn the model stalls, the
stall ends and the session gets a fresh deadline; that the model request outlived the cancel
is CANCEL-05's warning. In the same way a long-running command the scripted model gave the
agent's tool (``sleep``, then a file) may still run when the deadline falls: the session gets
the command's whole time and a fresh deadline after it, and that the tool outlived the cancel
is the same warning.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp_model.llm.tools import LONG_RUN_SECONDS
from acp_model.model.check import declare
from acp_model.model.vocab import Level, Role

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import StallOps

MODEL_STOPPED = declare(
    "CANCEL-05", "model_request_stopped", "Once it has read the cancel, the agent stops its "
    "model requests and tool calls: a response stalled by the scripted model, or a "
    "long-running command it gave a tool, is not still going a deadline after the cancel.",
    module=__name__, role=Role.PROCESS)


class Stalls:
    """One drain's view of the stalls it ended (each session's once)."""

    def __init__(self, client: StallOps, indices: Sequence[int]) -> None:
        self.client = client
        self.indices = indices
        self.ended: set[str] = set()

    def fresh_deadline(self, end: float) -> float | None:
        """The deadline ``end`` fell while a session still busy waits on a stalled model
        response, or on a long-running command of ours: the stalls end, and the new deadline
        is returned, after the command's time where one may still run (None: nothing to wait
        for)."""
        if time.monotonic() < end:
            return None
        extra = self._end()
        return None if extra is None else time.monotonic() + extra + self.client.deadline

    def _end(self) -> float | None:
        """End the stalls of the busy sessions; the time still owed to one of them (a
        long-running command's), None when no session waited on anything of ours."""
        client, owed = self.client, None
        if client.model is None:
            return None
        for i in self.indices:
            sid = client.sessions[i].sid
            if sid in self.ended or not client.busy(i) or client.open_permissions(i):
                continue
            if client.model.end_stalls(sid):
                what, wait = ("a model request of the cancelled work was still open", 0.0)
            elif client.model.running_long(sid):
                what, wait = ("a long-running command the model gave the cancelled work's tool "
                              "had not returned", float(LONG_RUN_SECONDS))
            else:
                continue
            self.ended.add(sid)
            owed = max(owed or 0.0, wait)
            with client.lock:
                if client.oracle.cancel_may_miss(sid):
                    continue  # the cancel came after a reopen of the working session: it may
                    # not reach the stalled work (replay.cancel_after_reopen), so no warning
                client.oracle.note(MODEL_STOPPED, f"{what} {client.deadline:g} s after the "
                                   "cancel (the agent did not stop it, or waits for it to "
                                   "end): what the agent owes is judged on a fresh deadline "
                                   "after it", session=sid, level=Level.WARN)
        return owed
