"""Small helpers for building and checking traces in tests."""

from __future__ import annotations

from typing import Any

from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import TraceBuilder

S = "s1"


def base(sid: str = S, **caps: Any) -> TraceBuilder:
    """Handshake plus one session."""
    return TraceBuilder().handshake(**caps).new_session(sid)


def turn_start(t: TraceBuilder, req_id: int, sid: str = S) -> TraceBuilder:
    return t.prompt(sid, req_id).accepted(req_id).user_message(sid).running(sid)


def check(t: TraceBuilder, readings: Readings = DEFAULT, **kw: Any) -> dict[str, Any]:
    return check_records(t.records, readings=readings, **kw)


def failed_rules(report: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in report["violations"] if v["level"] == "fail"}


def warned_rules(report: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in report["violations"] if v["level"] == "warn"}


def assert_clean(report: dict[str, Any]) -> None:
    assert report["violations"] == [], report["violations"]
    assert report["verdict"] == "pass"
