"""``--time-budget`` for the search, and each failure's own budget after it.

A CI job sets its own timeout; a run that overran what it states would be killed with its
report. So the run's time is bounded in two parts, each stated:

* ``--time-budget`` (one clock, started before the probe) bounds the probe and generation:
  no action starts after the budget's end less the time the last example's teardown may wait
  for what the agent owes (a liveness failure's proof), and a stop event fires at its end
  whatever runs then (an example's wait), so nothing keeps waiting after it;
* each failure found then gets a budget of its own, counted in trials (``--minimize-trials``,
  by default what its program's length needs: ``fuzzing/shrink.py``), within an outer bound in
  seconds (:func:`failure_budget`): ``--minimize-budget`` seconds to minimize its
  counterexample (a program called minimal only at the fixpoint), grown up to
  ``--minimize-growth`` times that when its agent's replays are slow
  (``fuzzing/shrink.py``: once a program reproduced, the latest trial's end plus what the
  stages still to run need at the agent's own trial time), and as much at most for its
  replays. A budget that was the
  leftover of the search cut minimizing in 17 of 18 failures of a real-agent matrix, and a
  fixed 60 s cut 8 of 13 on the slow agents (seconds per replay): a report of unminimized,
  unproven programs is a worse use of the time than a shorter search.

So a run ends within ``time_budget + failures * 2 * growth * minimize_budget`` plus the
slack for
closing agent processes and writing the report (:func:`slack`, the larger of 10 % of the time
budget and 10 s); the report states each failure's minimizing time and budget.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from acp_model.fuzzing.stop import Stop, cutoff

DRAIN_SHARE = 0.4  # at most this much of the budget is kept for the last example's teardown
DRAIN_DEADLINES = 3  # ... which waits about this many deadlines for what the agent owes
# the matrix's --minimize-growth (a row runs unattended, for its report): the ceiling of its
# rows' bound in seconds, which follows a reproducing failure's trial cost (fuzzing/shrink.py
# Minimizer.deadline: the latest trial's end plus what the stages still to run need). The
# trials (--minimize-trials) are the budget; the ceiling only bounds the wall-clock: 15 x 60 s
# lets a 12 s trial (the s7 run's claude-agent-acp v2 and qwen-code, cut at 5 x 60 s with 158
# and 168 of their trials unused) run a 7-action program's ~76 trials after a long history's
# search and cut. The matrix minimizes one failure at a time (fuzz --minimize-alone); its
# failures' fast agents end at their fixpoint long before it (the s7 run: 4.5-182 s)
MATRIX_GROWTH = 15.0
SLACK_SHARE = 0.10
SLACK_FLOOR = 10.0


def failure_budget(minimize_budget: float, growth: float = 1.0) -> tuple[float, float]:
    """Seconds one failure may get after the search at most: to minimize (its budget as its
    agent's trial time grows it), and then for its replays (a slow agent's 2 x replay_runs
    replays outlast a fixed ``--minimize-budget``: the s4 matrix cut opencode's free replays
    at 11 s each; they end when they are done, well before the bound on a fast agent).
    ``growth`` 1 (``fuzz``'s default) keeps both at ``--minimize-budget``: the bound a CI job
    states is the one it gets."""
    return growth * minimize_budget, growth * minimize_budget


def slack(total: float) -> float:
    """How far past its budget a run may end (teardown and writing): max(10 %, 10 s)."""
    return max(SLACK_SHARE * total, SLACK_FLOOR)


@dataclass
class Budget:
    """One run's clock: where each phase must end, and how long each took."""

    total: float | None
    start: float = field(default_factory=time.monotonic)
    phases: dict[str, float] = field(default_factory=dict)
    _phase: tuple[str, float] | None = None

    @property
    def end(self) -> float | None:
        return self.start + self.total if self.total else None

    def remaining(self) -> float:
        """Seconds left (infinite without a budget)."""
        end = self.end
        return float("inf") if end is None else max(0.0, end - time.monotonic())

    def spent(self) -> bool:
        end = self.end
        return end is not None and time.monotonic() >= end

    def generation_end(self, drain: float = 0.0) -> float | None:
        """When generation stops starting actions: early enough that the last example's
        teardown (waiting up to ``drain`` seconds for what the agent owes: the proof of a
        liveness failure) ends by the budget's end."""
        end = self.end
        if end is None or self.total is None:
            return end
        return end - min(drain, DRAIN_SHARE * self.total)

    def enter(self, name: str) -> None:
        """Start timing phase ``name`` (the previous one ends now)."""
        now = time.monotonic()
        if self._phase is not None:
            old, since = self._phase
            self.phases[old] = self.phases.get(old, 0.0) + now - since
        self._phase = (name, now) if name else None

    def close(self) -> None:
        self.enter("")

    def seconds(self) -> dict[str, float]:
        """Each phase's seconds, rounded (the one running counted up to now)."""
        out = dict(self.phases)
        if self._phase is not None:
            name, since = self._phase
            out[name] = out.get(name, 0.0) + time.monotonic() - since
        return {k: round(v, 2) for k, v in out.items()}

    def cutoff(self, stop: Stop, at: float | None = None) -> AbstractContextManager[Stop]:
        """A stop request that fires on ``stop`` or at ``at`` (default: the budget's end)."""
        return cutoff(stop, self.end if at is None else at)
