"""``--minimize-alone``: a fuzz run holds its gate shared while it generates and minimizes
only once no other run holds it (a matrix's rows minimize one at a time with nothing else
running; fuzzing/alone.py). The waiting is in no failure's budget."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from acp_model.fuzzing.alone import GateHold
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import FuzzResult, run_fuzz
from acp_model.fuzzing.stop import Stop

RULE = "STOP-03"  # every turn of this mutant ends with a stop reason the text does not have
AGENT = [sys.executable, "-m", "acp_model.agents.reference", "--mutant", "unknown_stop_reason"]


def test_a_run_minimizes_only_once_the_run_beside_it_stopped_generating(
        tmp_path: Path) -> None:
    path = tmp_path / "gate.lock"
    phases: list[str] = []
    waiting = threading.Event()

    def on_phase(name: str) -> None:
        phases.append(name)
        if name == "waiting to minimize alone":
            waiting.set()

    cfg = FuzzConfig(AGENT, seed=1, time_budget=60, minimize_budget=10, replay_runs=2,
                     stop_on=frozenset({RULE}), minimize_alone=str(path))
    results: list[FuzzResult] = []
    with GateHold(path) as beside:  # another run, still generating
        assert beside.shared(Stop())
        thread = threading.Thread(target=lambda: results.append(run_fuzz(cfg,
                                                                         on_phase=on_phase)))
        thread.start()
        assert waiting.wait(120), f"the run never waited for the gate: {phases}"
        assert not [p for p in phases if p.startswith("minimizing")], phases
        beside.release()
        thread.join(180)
    assert not thread.is_alive()
    result = results[0]
    found = result.recorder.found[RULE]
    assert found.minimize is not None and found.replays == 2, found.minimize
    after = phases.index("waiting to minimize alone")
    assert f"minimizing {RULE}" in phases[after:], phases
    assert "waiting" in result.phases  # the wait is a phase of its own, no failure's budget
    assert found.minimize["seconds"] < 10 + 2, found.minimize
