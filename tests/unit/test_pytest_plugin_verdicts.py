"""The pytest plugin's group verdicts, without an agent: a warning does not fail a group, a
group nothing exercised is skipped, a failure states its rule, its proof and its steps."""

from __future__ import annotations

import pytest

from acp_model.fuzzing.actions import Cancel, NewSession
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.run import FuzzResult
from acp_model.oracle.monitor import Violation
from acp_model.pytest_plugin import AcpWarning
from acp_model.pytest_plugin.items import AcpGroupFailure, check_group
from acp_model.pytest_plugin.profiles import PROFILES
from acp_model.pytest_plugin.run import AcpRun


def _run_with(recorder: Recorder, exercised: set[str]) -> AcpRun:
    """A finished run without an agent: only what check_group reads."""
    from acp_model.spec.rules import RULES

    result = FuzzResult(FuzzConfig(["agent"]), recorder, [], 1.0)
    rules = [{"id": r, "exercised": int(r in exercised)} for r in RULES]
    return AcpRun(result, {"rules": rules}, PROFILES["quick"])


def test_group_verdicts_warn_skip_and_fail() -> None:
    rec = Recorder()
    rec.warning(Violation("PROMPT-05", "warn", "SHOULD", 3, "the prompt result lacks x"))
    run = _run_with(rec, {"PROMPT-05", "CANCEL-07", "STOP-03"})
    with pytest.warns(AcpWarning, match=r"PROMPT-05 \(SHOULD\): the prompt result lacks x"):
        check_group(run, "PROMPT")  # a warning does not fail the group
    check_group(run, "CANCEL")  # exercised, nothing found: passes silently
    with pytest.raises(pytest.skip.Exception, match="no PLAN rule was exercised"):
        check_group(run, "PLAN")
    rec.failure(Violation("CANCEL-07", "fail", "MUST", 9, "ended end_turn"),
                [NewSession(), Cancel(0)],
                [{"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}}], 0, [])
    with pytest.raises(AcpGroupFailure) as failed:
        check_group(run, "CANCEL")
    text = str(failed.value)
    assert text.startswith("CANCEL: 1 rule(s) failed against agent (profile quick")
    assert "CANCEL-07 (MUST, binds the agent)" in text and "what happened: ended end_turn" in text
    assert "counterexample, 2 client action(s), not replayed:" in text
    assert "    2. cancel s1" in text
    assert text.count("not replayed") == 1  # said once, by the rate
    check_group(run, "STOP")  # no failure of its own: unaffected
