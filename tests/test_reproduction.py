"""Reproducing a failure after the run is bounded: by history length, by the shrink budget,
and by Ctrl-C (a 30-minute run must not spend hours replaying its own history)."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.shrink import ReplayOutcome, replay_once

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"]


def _example(n: int) -> list[dict[str, Any]]:
    return [{"op": "new_session"}, {"op": "prompt", "s": 0,
                                    "blocks": [{"type": "text", "text": f"example {n}"}]}]


class _CountingReplays:
    """Stands in for fresh-process replays: records what was asked, never reproduces."""

    def __init__(self) -> None:
        self.trials: list[list[dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, cfg: FuzzConfig, actions: list[dict[str, Any]], rule: str | None,
                 abort: threading.Event | None = None) -> ReplayOutcome:
        with self.lock:
            self.trials.append(actions)
        return ReplayOutcome(False, [], [], None)


def test_history_suffix_replays_at_most_the_last_examples(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    fake = _CountingReplays()
    monkeypatch.setattr(shrink, "replay_once", fake)
    history = [_example(n) for n in range(2000)]
    got = shrink.history_suffix(FuzzConfig(REFERENCE), "CANCEL-07", history,
                                   stop_at=time.monotonic() + 60)
    assert got is None
    assert fake.trials, "some suffix must have been tried"
    longest = max(sum(a["op"] == "new_session" for a in t) for t in fake.trials)
    assert longest == shrink.MAX_HISTORY_EXAMPLES
    # the suffixes end with the newest example
    assert all(t[-1]["blocks"][0]["text"] == "example 1999" for t in fake.trials)


def test_no_replay_starts_after_the_shrink_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _CountingReplays()
    monkeypatch.setattr(shrink, "replay_once", fake)
    trials = [_example(n) for n in range(10)]
    assert shrink.first_reproducing(FuzzConfig(REFERENCE), "X", trials,
                                       stop_at=time.monotonic() - 1) is None
    assert fake.trials == []
    assert shrink.delta_debug(FuzzConfig(REFERENCE), "X", _example(0) * 8,
                                 time.monotonic() - 1) == _example(0) * 8
    assert fake.trials == []


def test_an_aborted_replay_stops_before_its_next_action() -> None:
    abort = threading.Event()
    abort.set()
    actions = [{"op": "new_session"}] + [{"op": "wait", "s": 0, "mode": "settled"}] * 50
    started = time.monotonic()
    outcome = replay_once(FuzzConfig(REFERENCE), actions, None, abort)
    assert outcome.error == "interrupted"
    assert not outcome.reproduced
    assert time.monotonic() - started < 20


def test_ctrl_c_during_replays_sets_abort_for_the_running_ones() -> None:
    seen: list[threading.Event] = []

    def job(item: int, abort: threading.Event) -> ReplayOutcome:
        seen.append(abort)
        if item == 0:
            raise KeyboardInterrupt  # what the main thread sees on Ctrl-C
        assert abort.wait(5), "the running replays must be told to stop"
        return ReplayOutcome(False, [], [], None, "interrupted")

    with pytest.raises(KeyboardInterrupt):
        shrink.in_threads(job, range(3))
    assert seen and all(a.is_set() for a in seen)


def test_a_long_run_moves_to_a_fresh_process_before_the_transcript_cap() -> None:
    """A shared process's transcript grows with every example; a legitimate agent must never
    reach the cap (ACPM-OUTPUT) just because the run is long."""
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.recorder import Recorder

    cfg = FuzzConfig(REFERENCE)
    recorder = Recorder()
    pool = AgentPool(cfg, recorder)
    try:
        first = pool.client()
        first.proc.max_transcript_bytes = 64 * 1024  # as if the run had gone on for hours
        examples = 0
        while pool.client() is first:
            examples += 1
            assert examples < 200, "the pool never moved to a fresh process"
            ex = Example(first, recorder, deadline=3.0)
            ex.act({"op": "new_session"})
            ex.act({"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "go"}]})
            pool.end_example(ex)
        assert first.proc.stored_bytes > first.proc.max_transcript_bytes // 4
        assert not first.proc.truncated
        assert recorder.restarts == 0  # planned, not a crash
        assert pool.current is not first and pool.current is not None
        assert not [v for m in pool.monitors() for v in m.violations if v.level == "fail"]
    finally:
        pool.retire()
