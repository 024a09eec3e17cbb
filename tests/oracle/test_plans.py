"""The router's plans (issue 51 step 2): built once per (direction, method) and update kind;
a conforming message formats no description; a violation's text says which message it is."""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.oracle import said
from acp_model.oracle.monitor import Monitor
from acp_model.oracle.offline import check_records
from acp_model.oracle.said import Said
from acp_model.spec.readings import DEFAULT
from benchmarks.gen_trace import generate


def _records(n: int = 400) -> list[dict[str, Any]]:
    return [rec.to_json() for rec in generate(n, 2).log.records]


def test_a_conforming_trace_formats_no_description(monkeypatch: pytest.MonkeyPatch) -> None:
    formatted: list[str] = []
    for name in ("MESSAGE", "REQUEST", "UPDATE", "RESPONSE"):
        fmt = getattr(said, name)
        monkeypatch.setattr(said, name,
                            lambda *a, f=fmt: formatted.append(f(*a)) or formatted[-1])
    report = check_records(_records())
    assert report["summary"]["failures"] == 0
    assert formatted == []


def test_a_violation_says_which_message_it_is() -> None:
    records = _records(60)
    records.append({"dir": "a2c", "msg": {"jsonrpc": "2.0", "method": "session/update",
                                          "params": {"sessionId": "nobody", "update": {
                                              "sessionUpdate": "agent_message_chunk",
                                              "content": {"type": "video"}}}}})
    report = check_records(records)
    texts = [v["message"] for v in report["violations"]]
    idx = len(records) - 1
    assert any(t.startswith(f"session/update agent_message_chunk #{idx}: ") for t in texts), \
        texts


def test_a_plan_is_built_once_per_direction_and_method() -> None:
    monitor = Monitor(DEFAULT)
    records = _records()
    for rec in records:
        monitor.feed(rec)
    plans = monitor.router._plans
    kinds = {(r["dir"], r["msg"]["method"], "id" in r["msg"]) for r in records
             if isinstance(r["msg"], dict) and "method" in r["msg"]}
    assert set(plans) == kinds
    first = dict(plans)
    for rec in records:
        monitor.feed(rec)
    assert all(plans[key] is plan for key, plan in first.items())


def test_a_description_is_text_when_read() -> None:
    what = Said((said.UPDATE, "plan_update", 12))
    assert f"{what} breaks" == "session/update plan_update #12 breaks"
    assert str(what) + "!" == what + "!" == "session/update plan_update #12!"
    assert "at " + what == "at session/update plan_update #12"
