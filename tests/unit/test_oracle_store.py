"""The monitor's violation store on its own: the cap per check, the probes kept apart from the
client's bugs, and a failure without its proof demoted to a warning.

The metadata used are two obligations every trace tier already exercises (PROMPT-04, the
agent's; PERM-12, the client's), so these tests add no rule coverage the rule sweep would
count for a rule.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

from acp_model.model.obligations import PERMISSION_ANSWERED, PROMPT_ANSWERED
from acp_model.model.reducers import SessionView
from acp_model.oracle.store import MAX_REPORTS_PER_CHECK, ViolationStore
from acp_model.spec.levels import Level
from acp_model.spec.readings import DEFAULT


def _store(views: dict[str, SessionView] | None = None) -> ViolationStore:
    return ViolationStore(DEFAULT, views if views is not None else {})


def test_a_flood_of_one_check_is_stored_up_to_the_cap_and_counted_past_it() -> None:
    store = _store()
    for i in range(MAX_REPORTS_PER_CHECK + 7):
        store.report(PROMPT_ANSWERED, i, "never answered")
    other = dataclasses.replace(PROMPT_ANSWERED, name="another_check_of_the_rule")
    store.report(other, 0, "never answered")  # another check of the rule has its own cap
    assert len(store.violations) == MAX_REPORTS_PER_CHECK + 1
    assert store.suppressed == 7
    assert store.exercised[PROMPT_ANSWERED.rule] == MAX_REPORTS_PER_CHECK + 8


def test_a_probe_breaks_client_rules_on_purpose_but_not_the_agents() -> None:
    store = _store()
    store.probes.add(3)
    store.report(PERMISSION_ANSWERED, 3, "the probe's deliberate breach")
    store.report(PROMPT_ANSWERED, 3, "the agent's own failure at the probe")
    store.report(PERMISSION_ANSWERED, 4, "a client bug")
    assert [v.message for v in store.probe_hits] == ["the probe's deliberate breach"]
    assert [(v.rule, v.index) for v in store.violations] == [
        (PROMPT_ANSWERED.rule, 3), (PERMISSION_ANSWERED.rule, 4)]


def test_a_violation_about_a_session_carries_the_clients_view_and_batch_element() -> None:
    views = {"s": SessionView()}
    store = _store(views)
    store.sub = 2
    store.report(PROMPT_ANSWERED, 0, "about s", session="s")
    store.report(PROMPT_ANSWERED, 1, "about no session")
    with_view, without = store.violations
    assert with_view.view is not None and with_view.sub == 2
    assert without.view is None


def test_a_failure_without_the_proof_its_check_names_is_a_warning() -> None:
    proved = dataclasses.replace(PROMPT_ANSWERED, name="proved", evidence="proof_of_proved")
    unproved = dataclasses.replace(PROMPT_ANSWERED, name="unproved", evidence="proof")
    failures: list[Any] = [(SimpleNamespace(meta=proved), Level.FAIL),
                           (SimpleNamespace(meta=unproved), Level.FAIL)]
    store = _store()
    store.failures_of(failures, 5, None, "response #5",
                      {"proved": ("read at #4", [(4, "response proving it was read")])})
    first, second = store.violations
    assert (first.level, first.evidence) == (Level.FAIL, [(4, "response proving it was read")])
    assert "read at #4" in first.message
    assert second.level == Level.WARN and "reported as a warning" in second.message
    assert [v.level for v in store.with_level(Level.FAIL)] == [Level.FAIL]


def test_an_entry_run_together_counts_each_check_once_and_reports_each_failure() -> None:
    """A static entry of checks that all hold is counted once per run and its rules are
    expanded when the counts are read; a failing check is reported, the others counted."""
    store = _store()
    entry = ((lambda at: None, PROMPT_ANSWERED), (lambda at: None, PERMISSION_ANSWERED))
    for _ in range(3):
        assert not store.run_entry(entry, 0, "fine")
    assert store.exercised == {PROMPT_ANSWERED.rule: 3, PERMISSION_ANSWERED.rule: 3}
    failing = ((lambda at: None, PROMPT_ANSWERED), (lambda at: f"broken at {at}",
                                                   PERMISSION_ANSWERED))
    assert store.run_entry(failing, 4, "#4", session="s")
    assert [(v.rule, v.index, v.message, v.session) for v in store.violations] == [
        (PERMISSION_ANSWERED.rule, 4, "broken at #4", "s")]
    assert store.exercised == {PROMPT_ANSWERED.rule: 4, PERMISSION_ANSWERED.rule: 4}
