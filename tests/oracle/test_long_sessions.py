"""A long session costs the monitor in proportion to its open work, not to its history.

The monitor retires settled permission requests out of the session model's scans
(``SessionModel.retire``); ``tests/oracle/test_engine_agreement.py`` shows on random event
streams that retiring changes no verdict; here the same holds for whole traces, and the bound
is kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from acp_model.oracle import machines
from acp_model.oracle.monitor import Monitor
from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT
from benchmarks.gen_trace import generate
from tests.oracle.test_rule_violations import CASES


def _verdicts(report: dict[str, Any]) -> Any:
    return (report["verdict"], report["rules"], report["violations"], report["summary"])


def test_settled_permission_requests_leave_the_scans() -> None:
    trace = generate(20_000)
    monitor = Monitor(DEFAULT)
    sessions = monitor.machines.sessions
    largest = 0
    for rec in trace.records:
        monitor.feed(rec)
        largest = max(largest, *(len(s.perm_book.perms) for s in sessions.values()), 0)
    monitor.finish()
    assert not monitor.violations
    asked = sum(len(s.perm_book.perms) + len(s.perm_book.retired) for s in sessions.values())
    assert asked > 500  # the trace asks for many permissions ...
    assert largest <= 2 * machines.RETIRE_AT  # ... but few are ever scanned


@pytest.mark.parametrize("retire_at", [0, 10**9])
def test_retiring_changes_no_report(monkeypatch: pytest.MonkeyPatch, retire_at: int) -> None:
    """Every rule-violation trace and a long conforming one: the same report whether requests
    retire after every event or never."""
    builds = [b for group in CASES.values() for b in group]
    default = [check_records(b().records) for b in builds]
    default.append(check_records(generate(3_000).records))
    monkeypatch.setattr(machines, "RETIRE_AT", retire_at)
    other = [check_records(b().records) for b in builds]
    other.append(check_records(generate(3_000).records))
    assert [_verdicts(r) for r in other] == [_verdicts(r) for r in default]
    assert any(r["verdict"] == "fail" for r in default)
