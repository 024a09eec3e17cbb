"""What a cancel meets when the client sends it (the run's reach, ``report/reach.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_model.report.reach import Reach

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import MeetOps


def cancel_meets(client: MeetOps, idx: int) -> list[Reach]:
    """The counters a cancel of session ``idx``, about to be sent, counts in: as the client
    sees the session now (the agent may have moved on by the time it reads the cancel)."""
    sid = client.sessions[idx].sid
    with client.lock:
        busy = client.oracle.busy(sid)
        tool = busy and client.oracle.tool_running(sid)
    met = {Reach.CANCELS: True, Reach.CANCELS_DURING_WORK: busy,
           Reach.CANCELS_DURING_MODEL: client.model is not None and client.model.serving(sid),
           Reach.CANCELS_DURING_TOOL: tool,
           Reach.CANCELS_DURING_PERMISSION: bool(client.open_permissions(idx))}
    return [key for key, hit in met.items() if hit]
