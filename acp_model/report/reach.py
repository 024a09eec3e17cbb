"""How far a fuzz run got into the lifecycle: counters a pass means little without.

A run that never saw a permission request, or never cancelled while a tool ran, "passes" the
rules of those paths without having tried them. The client counts, as it acts, what it reached:
the agent's permission requests, and each ``session/cancel`` by what it met (foreground work,
a model request of the turn in flight behind the agent, an unfinished tool call, an open
permission request). A cancel may meet several at once and counts in each. So does each
reopening of a session (``session/load``, ``session/resume``), and whether it met work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import StrEnum


class Reach(StrEnum):
    PERMISSION_REQUESTS = "permission_requests"
    CANCELS = "cancels"
    CANCELS_DURING_WORK = "cancels_during_work"
    CANCELS_DURING_MODEL = "cancels_during_model_request"
    CANCELS_DURING_TOOL = "cancels_during_tool_call"
    CANCELS_DURING_PERMISSION = "cancels_during_permission"
    CANCELS_DURING_ELICITATION = "cancels_during_elicitation"  # one the client held open
    LOADS = "session_loads"
    LOADS_DURING_WORK = "session_loads_during_work"


LABELS: dict[Reach, str] = {
    Reach.PERMISSION_REQUESTS: "permission requests",
    Reach.CANCELS: "cancels",
    Reach.CANCELS_DURING_WORK: "cancels during work",
    Reach.CANCELS_DURING_MODEL: "cancels during a model request",
    Reach.CANCELS_DURING_TOOL: "cancels during a tool call",
    Reach.CANCELS_DURING_PERMISSION: "cancels during a permission request",
    Reach.CANCELS_DURING_ELICITATION: "cancels during an elicitation held open",
    Reach.LOADS: "session loads (session/load, session/resume)",
    Reach.LOADS_DURING_WORK: "session loads during work",
}


def reach_json(counts: Counter[Reach]) -> dict[str, int]:
    """Every counter, zeros included (a zero is the point: that path was never reached)."""
    return {str(key): int(counts.get(key, 0)) for key in Reach}


def reach_line(reach: Mapping[str, int]) -> str:
    """One line for a terminal: ``reached: 39 permission requests, 273 cancels (162 during
    work, ...)``."""
    cancels = ", ".join(f"{int(reach.get(k, 0))} {LABELS[k].removeprefix('cancels ')}"
                        for k in Reach if k.startswith("cancels_"))
    return (f"reached: {int(reach.get(Reach.PERMISSION_REQUESTS, 0))} permission requests, "
            f"{int(reach.get(Reach.CANCELS, 0))} cancels ({cancels})")
