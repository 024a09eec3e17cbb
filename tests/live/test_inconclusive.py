"""An agent that fails on its own in some processes (the reference agent answering every
other process's session/new with -32603): those replays are inconclusive, not misses, so
minimizing still reaches the minimal program and the report states them beside its rates
(issue 49, cause H; fuzzing/inconclusive.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from acp_model.fuzzing.artifacts import reproduction_text
from tests.live.shared import fuzz_until_found

RULE = "INIT-10"  # the 2nd prompt on a session answered with -32601 (method not found)
RUNS = 4


def test_replays_the_agent_failed_on_its_own_are_inconclusive(tmp_path: Path) -> None:
    agent = [sys.executable, "-m", "acp_model.agents.reference",
             "--mutant", "prompt_method_not_found",
             "--flaky", "session/new", "--flaky-count", str(tmp_path / "processes")]
    _, found = fuzz_until_found(agent, RULE, minimize_budget=60.0, replay_runs=RUNS)
    m = found.minimize
    assert found.verified and m is not None and m["fixpoint"], (m, found.notes)
    # a session, a prompt, the prompt answered -32601: what the agent without --flaky
    # minimizes to
    assert len(found.actions) == 3, [a.to_json() for a in found.actions]
    # every conclusive replay reproduced; the inconclusive ones are beside the rate, each
    # mode's run again at most RUNS more times
    assert found.reproduced == found.replays >= 1, reproduction_text(found)
    assert found.free_reproduced == found.free_replays >= 1, reproduction_text(found)
    assert found.inconclusive + found.free_inconclusive >= 1, reproduction_text(found)
    assert found.replays + found.inconclusive <= 2 * RUNS
    assert found.free_replays + found.free_inconclusive <= 2 * RUNS
    assert ("more inconclusive: the agent answered the client's first session/new with error "
            "-32603 where the recording had a result") in reproduction_text(found)
