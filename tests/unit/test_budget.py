"""``--time-budget``'s clock (fuzzing/budget.py): where each phase ends, and the slack.

What a whole run takes against agents whose bugs make every wait run out is measured in
tests/live/test_budget.py; the probe's share in tests/live/test_probe.py.
"""

from __future__ import annotations

from acp_model.fuzzing.budget import DRAIN_SHARE, RESERVE, Budget, slack
from acp_model.fuzzing.stop import Stop


def test_slack_is_ten_percent_or_ten_seconds() -> None:
    assert slack(30) == 10.0
    assert slack(300) == 30.0


def test_a_failure_moves_generations_end_earlier() -> None:
    budget = Budget(100.0, start=1000.0)
    assert budget.generation_end(found=False) == 1100.0
    assert budget.generation_end(found=True) == 1100.0 - RESERVE * 100.0
    # the last example's teardown may wait for what the agent owes: that ends by the end too
    assert budget.generation_end(found=False, drain=6.0) == 1094.0
    assert budget.generation_end(found=False, drain=600.0) == 1100.0 - DRAIN_SHARE * 100.0
    assert budget.generation_end(found=True, drain=600.0) == \
        1100.0 - (DRAIN_SHARE + RESERVE) * 100.0
    assert Budget(None).generation_end(found=True) is None


def test_each_failure_gets_a_share_of_what_is_left() -> None:
    budget = Budget(60.0)
    assert 29.0 < budget.share(2) <= 30.0
    assert Budget(None).share(3) == float("inf")


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


def test_generation_keeps_time_back_only_for_failures_it_will_minimize() -> None:
    """A failure found makes generation leave minimizing its share, unless the run was told
    not to minimize that rule (``reproduce_only``): then the budget stays generation's."""
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.recorder import Recorder
    from acp_model.fuzzing.run import _reserve

    rec = Recorder()
    rec.found["CANCEL-07"] = object()  # type: ignore[assignment]
    assert _reserve(FuzzConfig(["x"]), rec)
    assert not _reserve(FuzzConfig(["x"], reproduce_only=frozenset()), rec)
    assert _reserve(FuzzConfig(["x"], reproduce_only=frozenset({"CANCEL-07"})), rec)
    assert not _reserve(FuzzConfig(["x"]), Recorder())
