"""Whether a replay that did not reproduce is evidence at all (issue 49, cause H).

A fresh-process replay that misses says "the program does not need what it left out" only
when the agent did what it did in the recording up to where the rule showed. An agent that
failed on its own on the way (answered one of our requests with an error where the recording
had a result, or exited) never reached the state the failure needs: counting that replay as
a miss steered delta debugging (an action looked needed) and lowered the reported rate
(gemini-cli v1 V1-LOAD-01: ``session/load`` answered -32603 in some replays). Such a replay
is *inconclusive*: no evidence either way. An error the recording had too is the same
behaviour, not an own failure; so is a "request cancelled" (-32800) answered after the client
cancelled or closed something: the client's input chose that branch (codex-acp v2's CANCEL-07
answered its prompt -32800 in every free-running replay, the client's cancel having come
before the prompt began, and the rate read "0/0 free-running, 12 more inconclusive"). What
happens after the point where the recording showed the rule (its teardown) is not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from acp_model.fuzzing.replay import ReplayOutcome
from acp_model.fuzzing.schedule import Boundary, Schedule
from acp_model.model import wire_table
from acp_model.model.vocab import ErrorCode
from acp_model.report.proof import ordinal

__all__ = ["answered", "own_failure"]

Request = tuple[str, int]  # a request of ours: its method, and which of that method (1, 2, ...)


def own_failure(outcome: ReplayOutcome, recording: Schedule | None) -> str | None:
    """Why a replay that did not reproduce is inconclusive (None: it is evidence).

    ``recording``: the schedule the failing program's reproducing run recorded (cut where it
    showed the rule); a request of ours is named by its method and ordinal, which a replay of
    the same program (or of a sub-program, against the recording restricted to it) shares.
    An exit counts during an action before the one that showed the rule (the recording's
    process lived past it; at that action the exit may be what the rule judges). Without a
    recording nothing is compared: the replay is evidence.
    """
    if outcome.reproduced or recording is None:
        return None
    if outcome.exited is not None and outcome.exited[0] < recording.actions:
        action, code = outcome.exited
        return f"the agent exited (code {code}) during action {action}"
    results = {r for r, ok in answered(recording).items() if ok}
    for (method, n), code in _errors(outcome.records).items():
        if (method, n) in results:
            return (f"the agent answered the client's {ordinal(n)} {method} with error {code} "
                    "where the recording had a result")
    return None


def answered(schedule: Schedule) -> dict[Request, bool]:
    """Each of our requests in ``schedule`` before its end (the rule's action, for a
    reproducing run), with whether the agent answered it with a result."""
    seen: Counter[str] = Counter()
    named: dict[int, Request] = {}
    out: dict[Request, bool] = {}
    for k, e in enumerate(schedule.events):
        if e.boundary is Boundary.WRITE and e.what[:1] == ("request",) and len(e.what) > 1:
            seen[e.what[1]] += 1
            named[k] = (e.what[1], seen[e.what[1]])
        elif e.boundary is Boundary.MESSAGE and e.what[:1] == ("response",) \
                and e.cause in named and (e.action is None or e.action < schedule.actions):
            out[named[e.cause]] = e.what[1:2] == ("result",)
    return out


def _errors(records: Sequence[Mapping[str, Any]]) -> dict[Request, Any]:
    """Our requests of a replay's transcript the agent answered with an error (its code), but
    a "request cancelled" after one of the client's cancels or closes (the client's doing)."""
    seen: Counter[str] = Counter()
    ids: dict[Any, Request] = {}
    out: dict[Request, Any] = {}
    cancelled = False  # the client has cancelled or closed something by now
    for record in records:
        msg = record.get("msg")
        if not isinstance(msg, dict):
            continue
        method, rid = msg.get("method"), msg.get("id")
        if record.get("dir") == "c2a":
            cancelled = cancelled or (isinstance(method, str)
                                      and method in wire_table.cancelling())
            if isinstance(method, str) and rid is not None and method != "initialize":
                seen[method] += 1
                ids[_hashable(rid)] = (method, seen[method])
        elif method is None and "error" in msg and _hashable(rid) in ids:
            error = msg["error"]
            code = error.get("code") if isinstance(error, dict) else error
            if not (cancelled and code == ErrorCode.REQUEST_CANCELLED):
                out[ids[_hashable(rid)]] = code
    return out


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | None) else repr(value)
