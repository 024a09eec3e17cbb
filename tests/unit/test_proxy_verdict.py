"""A session the proxy judged only in part never passes (``judge.covered_verdict``)."""

from __future__ import annotations

import pytest

from acp_model.proxy.judge import Judge, JudgeSettings, covered_verdict
from acp_model.spec.readings import DEFAULT

INIT = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
        b'"capabilities":{},"info":{"name":"ed","version":"1"}}}\n')


@pytest.mark.parametrize(("why", "verdict"), [
    ({}, "pass"),
    ({"judge_overflowed": True}, "incomplete"),
    ({"trace_truncated": True}, "incomplete"),
    ({"judging_cut_short": True}, "incomplete"),
    ({"internal_error": "KeyError('x')"}, "error"),
    ({"judge_overflowed": False, "trace_truncated": False, "judging_cut_short": False,
      "internal_error": None}, "pass"),
])
def test_a_pass_over_part_of_a_session_is_not_a_pass(why: dict, verdict: str) -> None:
    assert covered_verdict("pass", why) == verdict


def test_a_failure_found_in_the_part_judged_stands() -> None:
    assert covered_verdict("fail", {"judge_overflowed": True, "internal_error": "x"}) == "fail"


def test_the_judge_reports_a_session_cut_off_behind_the_wire_as_incomplete() -> None:
    judge = Judge(JudgeSettings(DEFAULT, "seed", "agent"), trace=None, live=lambda _v: None)
    judge.chunk("c2a", 0.0, INIT)
    whole = judge.report({"judge_overflowed": False}, 0.0)
    assert whole["verdict"] == "pass" and whole["proxy"]["records"] == 1
    assert judge.report({"judge_overflowed": True}, 0.0)["verdict"] == "incomplete"
