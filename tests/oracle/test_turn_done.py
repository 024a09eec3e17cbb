"""CANCEL-07 in the end-of-turn window (issue 49): a cancel the fuzzer wrote once its scripted
model had released the turn's whole final response (``turn_done`` on the cancel's record) left
nothing to abort, so the turn's real end answering it is a warning by default (reading A-33),
unless a later record says the agent asked the model again (``model_asked``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from acp_model.trace.format import TraceError, parse_record, read_trace
from tests.helpers import S, base, check, failed_rules, turn_start, warned_rules

V1 = DEFAULT.parse(["SPEC=v1"])


def _v1_cancelled_after_the_end(*, done: bool = True, asked: bool = False) -> TraceBuilder:
    """v1: the turn's final text shows, then a cancel (read: a sync answered), then end_turn."""
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S, "answer")
    final = t.log.last
    t.cancel(S)
    if done:
        t.turn_done(final)
    t.sync()
    if asked:
        t.v1.chunk(S, "more").model_asked(S)
    return t.v1.ended(10, "end_turn")


def _cancel_07(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for v in report["violations"] if v["rule"] == "CANCEL-07"]


def test_a_cancel_after_the_turn_was_done_is_a_warning_citing_the_record() -> None:
    t = _v1_cancelled_after_the_end()
    report = check(t, V1)
    assert "CANCEL-07" not in failed_rules(report), report["violations"]
    (found,) = _cancel_07(report)
    assert found["level"] == "warn"
    cancel = next(i for i, r in enumerate(t.records)
                  if isinstance(r.msg, dict) and r.msg.get("method") == "session/cancel")
    final = cancel - 1
    assert (f"the scripted model had released the turn's final response (after #{final}) "
            f"before the cancel #{cancel} was written; nothing was left to abort"
            ) in found["message"], found


def test_without_the_fact_the_same_trace_fails_as_before() -> None:
    """Old traces carry no fact: today's verdict."""
    report = check(_v1_cancelled_after_the_end(done=False), V1)
    assert "CANCEL-07" in failed_rules(report), report["violations"]


def test_a_later_model_request_voids_the_fact() -> None:
    """The agent asked its model again after the cancel: the turn was not done."""
    report = check(_v1_cancelled_after_the_end(asked=True), V1)
    assert "CANCEL-07" in failed_rules(report), report["violations"]


def test_a_model_request_of_another_session_does_not_void_it() -> None:
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S, "answer")
    t.cancel(S).turn_done(t.log.last).sync().model_asked("other-session")
    report = check(t.v1.ended(10, "end_turn"), V1)
    assert "CANCEL-07" not in failed_rules(report), report["violations"]
    assert "CANCEL-07" in warned_rules(report), report["violations"]


def test_the_strict_reading_keeps_the_failure() -> None:
    report = check(_v1_cancelled_after_the_end(), V1.parse(["A-33=strict"]))
    assert "CANCEL-07" in failed_rules(report), report["violations"]
    report = check(_v1_cancelled_after_the_end(), V1.parse(["cancel-after-turn-done=strict"]))
    assert "CANCEL-07" in failed_rules(report), report["violations"]


def test_a_cancelled_end_is_clean_with_the_fact() -> None:
    t = TraceBuilder().v1.handshake().v1.new_session(S).prompt(S, 10).v1.chunk(S, "answer")
    t.cancel(S).turn_done(t.log.last).sync()
    report = check(t.v1.ended(10, "cancelled"), V1)
    assert _cancel_07(report) == [], report["violations"]


def test_v2_reported_work_is_judged_alike() -> None:
    t = turn_start(base(), 10).agent_message(S)
    t.cancel(S).turn_done(t.log.last).sync()
    report = check(t.idle(S, "end_turn"))
    assert "CANCEL-07" not in failed_rules(report), report["violations"]
    assert "CANCEL-07" in warned_rules(report), report["violations"]
    plain = turn_start(base(), 10).agent_message(S).cancel(S).sync().idle(S, "end_turn")
    assert "CANCEL-07" in failed_rules(check(plain)), check(plain)["violations"]


def test_the_facts_survive_a_file_and_bad_values_are_refused(tmp_path: Path) -> None:
    t = _v1_cancelled_after_the_end(asked=True)
    back = read_trace(t.log.write(tmp_path / "t.jsonl"))
    assert back == t.records
    assert [r.turn_done for r in back if r.turn_done is not None] == [
        r.turn_done for r in t.records if r.turn_done is not None] != []
    assert any(r.model_asked == (S,) for r in back)
    for bad in ({"turn_done": -1}, {"turn_done": True}, {"model_asked": S},
                {"model_asked": [1]}):
        with pytest.raises(TraceError):
            parse_record({"dir": "c2a", "msg": {}, **bad})


def test_a_trace_file_carrying_the_fact_is_judged_by_it(tmp_path: Path) -> None:
    """What ``acp-model check`` reads: the keys as a fuzzer's transcript writes them."""
    t = _v1_cancelled_after_the_end(done=False)
    lines = [r.to_json() for r in t.records]
    cancel = next(i for i, o in enumerate(lines) if o.get("msg", {}).get("method")
                  == "session/cancel")
    lines[cancel]["turn_done"] = cancel - 1
    path = tmp_path / "transcript.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines), encoding="utf-8")
    report = check_records(read_trace(path), readings=V1)
    assert "CANCEL-07" not in failed_rules(report), report["violations"]
    assert "CANCEL-07" in warned_rules(report), report["violations"]
