"""The quick version of the rule sweep (tests/rule_sweep.py): over the trace-based oracle
tests, every rule decided from the trace has a test that fails with the rule switched off.
`make test` runs the whole sweep over the fast tiers and reports the count per rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from acp_model.model.check import DISABLED_ENV, rules_disabled
from tests.helpers import base, check, failed_rules, turn_start
from tests.rule_sweep import swept_rules

ROOT = Path(__file__).resolve().parents[2]
# The violating and warning traces, and the one test of each rule they do not break alone
# (the whole sweep over tests/oracle, in `make test`, counts every test per rule).
QUICK = ["tests/oracle/test_rule_violations.py", "tests/oracle/test_rule_warnings.py",
         "tests/oracle/test_races.py::test_null_id_errors_only_answer_unreadable_input",
         "tests/oracle/test_races.py::test_permission_wait_not_reported_is_a_warning",
         "tests/oracle/test_soundness.py::test_a_broken_evidence_check_reports_its_proof",
         "tests/oracle/test_schema.py::test_a_part_the_schema_tolerates_is_one_warning_naming_it",
         "tests/oracle/test_audit_rules.py::test_a_trace_breaks_the_rule_and_another_keeps_it",
         "tests/oracle/test_audit_rules.py::"
         "test_a_cancel_of_what_had_ended_is_refused_with_invalid_params"]


def test_switching_a_rule_off_drops_only_its_violations() -> None:
    t = turn_start(base(), 10).idle("s1", "end_turn")
    t.update("s1", {"sessionUpdate": "agent_message", "messageId": "m1",
                    "content": {"type": "x"}})  # ACPM-SCHEMA
    t.prompt("s1", 11).accepted(11, {"stopReason": "end_turn"})  # and no turn after it
    before = failed_rules(check(t))
    assert len(before) >= 2, before
    rule = sorted(before)[0]
    with rules_disabled(rule):
        after = failed_rules(check(t))
    assert after == before - {rule}
    assert failed_rules(check(t)) == before  # and back on once the block ends


def test_an_unknown_rule_to_switch_off_is_refused() -> None:
    proc = subprocess.run([sys.executable, "-c", "import acp_model.oracle.monitor"],
                          env={**os.environ, DISABLED_ENV: "NO-SUCH-RULE"},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "NO-SUCH-RULE" in proc.stderr


def test_every_rule_has_a_test_that_fails_without_it(tmp_path: Path) -> None:
    report = tmp_path / "sweep.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-m", "not slow and not external", "--rule-sweep=first",
         f"--rule-sweep-report={report}", *QUICK],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != DISABLED_ENV})
    assert report.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads(report.read_text())
    assert found["without_a_test"] == [], proc.stdout[-3000:]
    assert set(found["tests_per_rule"]) == swept_rules()
    assert proc.returncode == 0, proc.stdout[-3000:]
