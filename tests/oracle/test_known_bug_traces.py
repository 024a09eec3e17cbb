"""The published-bugs benchmark proves the oracle first (issue 50 item 6): for every entry of
``benchmarks/known_bugs.toml``, the wire its report describes (``tests/data/known-bugs``,
written by ``make.py`` there) fails the checker under the entry's rule, with the readings the
entry names. Before any fuzzing question arises, the rule can see the bug."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT
from acp_model.trace.format import read_trace
from benchmarks.bench_known_bugs import KnownBug, load

DATA = Path(__file__).resolve().parents[1] / "data" / "known-bugs"
BUGS = load()


def _make() -> ModuleType:
    if "known_bug_traces" not in sys.modules:
        spec = importlib.util.spec_from_file_location("known_bug_traces", DATA / "make.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["known_bug_traces"] = module
        spec.loader.exec_module(module)
    return sys.modules["known_bug_traces"]


def _check(records: list[Any], bug: KnownBug) -> dict[str, Any]:
    readings = DEFAULT.parse(["SPEC=v1" if bug.protocol == "v1" else "SPEC=seed",
                              *bug.reading])
    return check_records(records, readings=readings)


def _levels(report: dict[str, Any], rule: str) -> set[str]:
    return {str(v["level"]) for v in report["violations"] if v["rule"] == rule}


def test_every_entry_has_its_wire() -> None:
    assert set(_make().TRACES) == {b.id for b in BUGS}
    for bug in BUGS:
        assert _make().path_of(bug.id).is_file(), bug.id


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.id)
def test_the_reports_wire_fails_under_the_entrys_rule(bug: KnownBug) -> None:
    records = read_trace(_make().path_of(bug.id))
    assert [r.to_json() for r in records] == [r.to_json() for r in _make().TRACES[bug.id]()
                                              .records], "stale data: run make.py"
    report = _check(records, bug)
    assert "fail" in _levels(report, bug.rule), report["violations"]
    failing = next(v for v in report["violations"]
                   if v["rule"] == bug.rule and v["level"] == "fail")
    assert failing["message"], failing


@pytest.mark.parametrize("bug_id", sorted(_make().BARE))
def test_without_a_request_after_the_cancel_the_reports_wire_is_a_legal_race(
        bug_id: str) -> None:
    """The report's client sent nothing after its cancel: nothing proves the agent read the
    cancel before it answered, and the text's MUST is conditional on that ("When the Agent
    receives this notification ... MUST respond ... with the cancelled stop reason"). No
    failure; the fuzzer's sync after a cancel is what proves it."""
    bug = next(b for b in BUGS if b.id == bug_id)
    report = _check(_make().TRACES[bug_id](bare=True).records, bug)
    assert "fail" not in _levels(report, bug.rule), report["violations"]


def test_a_reopen_entry_is_a_warning_under_the_default_reading() -> None:
    """#415 and #186 fail under reading A-30=same (their entries name it); by default a
    cancel after a reopen of the working session only warns: the text does not say whether
    a reopen replaces the session the turn runs in."""
    for bug in BUGS:
        if "A-30=same" not in bug.reading:
            continue
        report = check_records(read_trace(_make().path_of(bug.id)),
                               readings=DEFAULT.parse(["SPEC=v1"]))
        assert _levels(report, bug.rule) == {"warn"}, (bug.id, report["violations"])
