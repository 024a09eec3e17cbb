"""``--time-budget`` for the whole run: probe, generation, minimization and replays.

A CI job sets its own timeout; a run that overran its budget would be killed with its report.
So one clock, started before the probe, bounds every phase:

* generation starts no action after the budget's end less the time the last example's teardown
  may wait for what the agent owes (a liveness failure's proof), and once a failure is found
  it stops early enough to leave :data:`RESERVE` of the budget for minimizing and replaying
  what was found;
* each failure then gets an equal share of what is left: at most :data:`MINIMIZE_SHARE` of it
  (and never more than ``--minimize-budget``) for minimizing, the rest for replays;
* a stop event fires at the budget's end whatever runs then (an example's wait, a replay
  waiting out a liveness deadline), so nothing starts or keeps waiting after it.

What follows the end (closing agent processes, writing the report) fits in the stated slack:
:func:`slack`, the larger of 10 % of the budget and 10 s.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from acp_model.fuzzing.stop import Stop, cutoff

RESERVE = 0.35  # of the budget kept for minimizing and replays once a failure is found
MINIMIZE_SHARE = 0.6  # of a failure's share: minimizing; the rest: its replays
DRAIN_SHARE = 0.4  # at most this much of the budget is kept for the last example's teardown
DRAIN_DEADLINES = 3  # ... which waits about this many deadlines for what the agent owes
SLACK_SHARE = 0.10
SLACK_FLOOR = 10.0


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

    def generation_end(self, found: bool, drain: float = 0.0) -> float | None:
        """When generation stops starting actions: early enough that the last example's
        teardown (waiting up to ``drain`` seconds for what the agent owes: the proof of a
        liveness failure) ends by the budget's end, and once a failure is found, early enough
        to leave :data:`RESERVE` of the budget for minimizing and replaying it."""
        end = self.end
        if end is None or self.total is None:
            return end
        end -= min(drain, DRAIN_SHARE * self.total)
        return end - RESERVE * self.total if found else end

    def share(self, failures_left: int) -> float:
        """The seconds the next failure may spend on minimizing and replays."""
        return self.remaining() / max(1, failures_left)

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
