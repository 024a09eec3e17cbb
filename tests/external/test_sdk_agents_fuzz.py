"""The fuzzer against the agents built on the official SDKs (issue 7).

Every failure must be explained in docs/findings.md (its summary table); anything else is
either a new SDK finding to triage or a false positive of ours to fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.spec.readings import DEFAULT
from tests.external.test_sdk_agents_smoke import SPECS

pytestmark = [pytest.mark.slow, pytest.mark.external]  # fuzzes the SDK agents for minutes

FINDINGS = Path(__file__).resolve().parents[2] / "docs" / "findings.md"
ROW = re.compile(r"^\| (python|typescript) \| ([^|]+) \| ([A-Za-z0-9.-]+) \| ([a-zA-Z ]+) \|$")


def explained() -> dict[tuple[str, str], set[str]]:
    """(agent, reading) -> rules the findings document explains."""
    out: dict[tuple[str, str], set[str]] = {}
    for line in FINDINGS.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line.strip())
        if m:
            out.setdefault((m[1], m[2].strip()), set()).add(m[3])
    return out


def test_findings_table_is_readable() -> None:
    table = explained()
    assert ("typescript", "default") in table and ("python", "A-03=diagram") in table


@pytest.mark.parametrize(("agent", "reading", "examples"), [
    ("python", "default", 30), ("typescript", "default", 30),
    ("python", "A-03=diagram", 6), ("typescript", "A-04=idle-cancelled", 20),
])
def test_sdk_agent_failures_are_all_explained(agent: str, reading: str, examples: int) -> None:
    spec = SPECS[agent]
    if spec.missing:
        pytest.skip(spec.missing)
    readings = DEFAULT if reading == "default" else DEFAULT.parse([reading])
    # Under the default readings the revision is decided by the agent (both SDKs answer with
    # receipts: sdk-2.4.0); the seed's readings are judged under the seed.
    cfg = FuzzConfig(spec.argv, max_examples=examples, steps=20, seed=3, deadline=3.0,
                     readings=readings, replay_runs=1, max_rounds=2, time_budget=150,
                     shrink_budget=5.0, minimize_budget=5.0,  # counterexamples unused here
                     spec="auto" if reading == "default" else "seed")
    result = run_fuzz(cfg)
    assert result.unusable is None, result.unusable
    assert result.cfg.decision is not None
    assert result.cfg.decision.revision == ("sdk-2.4.0" if reading == "default" else "seed")
    seen = set(result.recorder.found) | {rule for rule, _ in result.recorder.warnings}
    table = explained()  # findings under the default readings show under any other too
    allowed = table.get((agent, reading), set()) | table.get((agent, "default"), set())
    assert seen <= allowed, {r: f.violation.message for r, f in result.recorder.found.items()
                             if r not in allowed}
    # the run drove the agent (steps per example are drawn: 20 examples once made 181 actions)
    assert result.recorder.actions >= 5 * examples
    if reading != "default":  # the reading the SDK takes really shows, as documented
        assert table[(agent, reading)] <= seen
