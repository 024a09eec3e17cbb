"""What v2 changed in the lifecycle against v1, as witness traces the checker judges.

Between revisions of one protocol (``seed`` and ``sdk-2.4.0``) the explorer compares the
reachable graphs of the abstract machine (``diff.diff_readings``). v1 and v2 differ in their
wire, not only in their guards: a v1 turn has no acknowledgement and no state reports, so the
abstract alphabet (v2's) says nothing a v1 agent author can act on. Here each difference is
one behaviour, written as it looks on each protocol's wire; the checker judges both traces
under their own revision whenever the table is printed (and a test keeps the verdicts), so a
row that stops being a difference is seen at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_model.model.vocab import Level
from acp_model.oracle.offline import check_records
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder

S = "s1"
Build = Callable[[], TraceBuilder]
BuildV2 = Callable[[bool], TraceBuilder]  # receipts or not (sdk-2.4.0 or the seed)


def _v1() -> TraceBuilder:
    return TraceBuilder().v1.handshake().v1.new_session(S)


def _v2() -> TraceBuilder:
    return TraceBuilder().handshake().new_session(S)


def _accept(t: TraceBuilder, rid: int, receipts: bool, echo: bool = True) -> TraceBuilder:
    """A v2 acknowledgement (a receipt in sdk-2.4.0) and, with ``echo``, its user message."""
    mid = f"u{rid}"
    t.accepted(rid, {"messageId": mid} if receipts else None)
    return t.user_message(S, mid) if echo else t


def _v2_turn(t: TraceBuilder, rid: int, receipts: bool) -> TraceBuilder:
    return _accept(t.prompt(S, rid), rid, receipts).running(S)


@dataclass(frozen=True)
class Behaviour:
    """One lifecycle behaviour whose verdict differs between v1 and v2."""

    name: str
    change: str  # what v2 changed, in one sentence
    v1: Build  # the behaviour on v1's wire
    v2: BuildV2  # the same behaviour on v2's wire


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "prompt-while-busy",
        "v1 runs one turn at a time ('Once a prompt turn completes, the Client may send "
        "another'); v2 lets a prompt join or queue behind running work (A-01).",
        lambda: _v1().prompt(S, 10).v1.chunk(S).prompt(S, 11).v1.ended(10).v1.ended(11),
        lambda r: _accept(_v2_turn(_v2(), 10, r).prompt(S, 11), 11, r).idle(S, "end_turn")),
    Behaviour(
        "content-after-cancelled-end",
        "v1: content of a cancelled turn comes before the prompt's response; v2 binds only "
        "the cancelled work's tool calls to precede the cancelled idle (A-13).",
        lambda: _v1().prompt(S, 10).v1.chunk(S).cancel(S).v1.ended(10, "cancelled")
        .v1.chunk(S, "late"),
        lambda r: _v2_turn(_v2(), 10, r).cancel(S).idle(S, "cancelled").agent_message(S)),
    Behaviour(
        "no-user-message",
        "v2 reports every accepted prompt as a user message (PROMPT-06); v1 never echoes the "
        "prompt.",
        lambda: _v1().prompt(S, 10).v1.chunk(S).v1.ended(10),
        lambda r: _accept(_v2().prompt(S, 10), 10, r, echo=False).running(S)
        .agent_message(S).idle(S, "end_turn")),
    Behaviour(
        "turn-end-in-response",
        "v1 ends a turn with the prompt's response ({stopReason}); v2's response only "
        "acknowledges and an idle state update ends the work (STATE-02, PROMPT-05).",
        lambda: _v1().prompt(S, 10).v1.chunk(S).v1.ended(10),
        lambda r: _v2().prompt(S, 10).user_message(S, "u10").running(S).agent_message(S)
        .v1.ended(10)),
    Behaviour(
        "agent-initiated-work",
        "v2 lets an agent start foreground work without a prompt (running, then idle; "
        "A-07); in v1 work exists only as a prompt's turn, and the same report is no v1 "
        "message at all.",
        lambda: _v1().running(S),  # (the same v2 report, written to a v1 session)
        lambda r: _v2().running(S).agent_message(S).idle(S, "end_turn")),
)


def _verdict(records: list[dict[str, Any]], revision: str) -> dict[str, Any]:
    report = check_records(records, readings=DEFAULT.parse([f"SPEC={revision}"]),
                           spec=revision)
    fails = sorted({v["rule"] for v in report["violations"] if v["level"] == Level.FAIL})
    warns = sorted({v["rule"] for v in report["violations"] if v["level"] == Level.WARN})
    return {"revision": revision, "verdict": report["verdict"], "failures": fails,
            "warnings": warns}


def across_protocols(a: str, b: str) -> bool:
    """Do the two revisions speak different protocol versions (v1 against a v2 one)?"""
    return revisions.get(a).protocol != revisions.get(b).protocol


def protocol_diff(a: str, b: str) -> dict[str, Any]:
    """Each behaviour's two traces, judged now: the v1 one under the v1 revision, the v2
    one under the other revision."""
    names = (a, b)
    v1_name = next(n for n in names if revisions.get(n).protocol == 1)
    v2_name = next(n for n in names if n != v1_name)
    rows = []
    for behaviour in BEHAVIOURS:
        t1, t2 = behaviour.v1(), behaviour.v2(v2_name != revisions.SEED)
        r1, r2 = [r.to_json() for r in t1.records], [r.to_json() for r in t2.records]
        rows.append({"id": behaviour.name, "behaviour": behaviour.name,
                     "change": behaviour.change,
                     v1_name: {**_verdict(r1, v1_name), "trace": r1,
                               "events": [f"{behaviour.name} on v1's wire"]},
                     v2_name: {**_verdict(r2, v2_name), "trace": r2,
                               "events": [f"{behaviour.name} on v2's wire"]}})
    return {"command": "explore --diff-spec", "a": a, "b": b, "protocols": True,
            "behaviours": rows}
