"""``--time-budget``'s clock (fuzzing/budget.py): where each phase ends, and the slack.

What a whole run takes against agents whose bugs make every wait run out is measured in
tests/live/test_budget.py; the probe's share in tests/live/test_probe.py.
"""

from __future__ import annotations

import time

from acp_model.fuzzing.budget import DRAIN_SHARE, MATRIX_GROWTH, Budget, failure_budget, slack
from acp_model.fuzzing.stop import Stop


def test_slack_is_ten_percent_or_ten_seconds() -> None:
    assert slack(30) == 10.0
    assert slack(300) == 30.0


def test_generation_ends_in_time_for_the_last_teardown() -> None:
    budget = Budget(100.0, start=1000.0)
    assert budget.generation_end() == 1100.0
    # the last example's teardown may wait for what the agent owes: that ends by the end too
    assert budget.generation_end(drain=6.0) == 1094.0
    assert budget.generation_end(drain=600.0) == 1100.0 - DRAIN_SHARE * 100.0
    assert Budget(None).generation_end() is None


def test_each_failure_has_a_budget_of_its_own() -> None:
    """Minimizing is not the leftover of the search: each failure gets --minimize-budget to
    minimize, and as much at most for its replays, however much of the time budget the
    search used; grown on a slow agent only when asked (the matrix's --minimize-growth)."""
    assert failure_budget(60.0) == (60.0, 60.0)
    assert failure_budget(60.0, MATRIX_GROWTH) == (MATRIX_GROWTH * 60.0, MATRIX_GROWTH * 60.0)


def test_the_cutoff_fires_at_its_time_or_on_the_parents_stop() -> None:
    budget = Budget(0.3)
    parent = Stop()
    with budget.cutoff(parent) as cut:
        assert cut.event.wait(5.0)  # the budget's end, without any stop request
    assert not parent.requested
    parent = Stop()
    with Budget(100.0).cutoff(parent) as cut:
        assert not cut.requested
        parent.request()
        assert cut.event.wait(5.0)


def test_phases_are_timed() -> None:
    budget = Budget(None)
    budget.enter("generation")
    budget.enter("minimizing")
    budget.close()
    assert set(budget.seconds()) == {"generation", "minimizing"}


def test_a_replay_that_ignores_the_stop_is_left_behind_counted_as_cut() -> None:
    """The budget's end stops the replays under way: one still busy (judging an agent's flood,
    waiting on its close) a moment later is not waited for. It counts as cut (no evidence),
    and the others' outcomes stay."""
    import threading

    from acp_model.fuzzing.replay import INTERRUPTED, STRAGGLER_GRACE, ReplayOutcome, in_threads

    release = threading.Event()
    started = threading.Event()

    def job(item: str, abort: threading.Event) -> ReplayOutcome:
        if item == "quick":
            return ReplayOutcome(True, [], [], None)
        started.set()
        release.wait(60.0)  # deaf to ``abort``, as a CPU-bound judgment is
        return ReplayOutcome(True, [], [], None)

    stop = Stop()
    threading.Thread(target=lambda: started.wait(5.0) and stop.request(), daemon=True).start()
    try:
        t0 = time.monotonic()
        outcomes = in_threads(job, ["quick", "deaf"], stop=stop, parallel=2)
        took = time.monotonic() - t0
    finally:
        release.set()
    assert [o.error for o in outcomes] == [None, INTERRUPTED]
    assert outcomes[0].reproduced and not outcomes[1].reproduced
    assert took < STRAGGLER_GRACE + 5.0  # not the deaf replay's 60 s
