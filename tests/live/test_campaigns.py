"""The ready-made campaigns of ``fuzz/``.

* the zoo campaign's quick plan, one test per case: bug mutants are reported under their rule,
  the reference agent (fast, real, slow) and a sample of correct designs give no failure and
  warnings only where a reading leaves the behaviour open;
* (the shape of the plans, without running them: test_campaign_plans.py);
* the long campaign for any agent (``fuzz/test_agent.py``) end to end on two xdist workers,
  and the example database it relies on: a failure stored by one run replays first in the next.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import example_database
from tests.helpers import load_fuzz_module
from tests.live.agents.recordings import recorded
from tests.live.shared import examples_until, first_seed_finding

pytestmark = pytest.mark.slow  # runs the mutant zoo

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


zoo = load_fuzz_module("acp_zoo_campaign")


# A bug mutant whose transcript the oracle tier judges (tests/data/transcripts) does not
# depend on timing: only the others are fuzzed here (the racy ones: the search must win the
# race); the full campaign fuzzes them all.
RECORDED = set(recorded())


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in zoo.plan("quick")
                                  if not (c.kind == "bug" and c.variant in RECORDED)])
def test_quick_zoo_case(case: Any) -> None:
    cfg = case.config()
    if case.kind == "bug":
        # the verdict is what generation found; the counterexample's minimizing and replays
        # (fresh processes, each waiting out a liveness mutant's deadlines) are not read here
        cfg = dataclasses.replace(cfg, minimize_budget=1.0, replay_runs=0)
    outcome = zoo.run_case(case, config=cfg)
    assert outcome.ok, outcome.explain()
    if case.kind != "bug":
        assert outcome.examples >= case.max_examples  # the whole budget ran, nothing cut short


def test_a_stored_failure_replays_first_in_the_next_run(tmp_path: Path) -> None:
    # Needs a notification-only batch: seed 3 mostly generates one in its 10th example, seed
    # 1 only in its 88th. What Hypothesis draws is steered by the agent's timing (its targets
    # score the transitions each example reached), so a loaded machine may need another
    # seed to find it first; the trigger itself does not depend on timing, so the stored
    # program fails again.
    rule = "RPC-09"
    argv = [*REFERENCE, "--mutant", "empty_batch_reply"]

    def cfg(seed: int) -> FuzzConfig:
        # (what follows generation, minimizing the failure, is not what this test reads)
        return FuzzConfig(argv, max_examples=150, steps=15, seed=seed, deadline=1.0,
                          max_rounds=1, replay_runs=0, shrink_budget=3.0, minimize_budget=0.5,
                          stop_on=frozenset({rule}), database=str(tmp_path))

    found = first_seed_finding(rule, cfg)
    assert found[-1] is not None, found
    db = example_database(cfg(3))
    assert db is not None and any(Path(db.path).rglob("*")), "the failure was stored"
    assert examples_until(rule, cfg(1)) == 1  # replayed before seed 1's own programs


def test_agent_campaign_on_two_workers(tmp_path: Path) -> None:
    # a bug every turn shows (no race): each shard fuzzes until it is found (the budget is
    # the cap for a loaded machine: 4 s once left a shard without it)
    agent = shlex.join([*REFERENCE, "--mutant", "unknown_stop_reason"])
    env = {**os.environ, "ACP_AGENT": agent, "ACP_BUDGET": "60", "ACP_STOP_ON": "STOP-03",
           "ACP_REPLAYS": "1",
           "ACP_DB": str(tmp_path / "db"), "ACP_OUT": str(tmp_path / "out"), "ACP_SEED": "5"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q",
         str(ROOT / "fuzz" / "test_agent.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "2 failed" in out and "STOP-03 (MUST, binds the agent)" in out, out
    for shard in (0, 1):
        report = json.loads((tmp_path / "out" / f"shard-{shard}" / "report.json").read_text())
        assert report["config"]["seed"] == 5 + 1000 * shard
        assert "STOP-03" in {ce["rule"] for ce in report["counterexamples"]}
        assert "stopped: what was asked for is found" in report["notes"], report["notes"]
    # Both shards stored into the directory of this agent, the one the plugin reads as well.
    db = example_database(FuzzConfig(shlex.split(agent), database=str(tmp_path / "db")))
    assert db is not None and any(Path(db.path).rglob("*"))
    assert [p.name for p in (tmp_path / "db").iterdir()] == [Path(db.path).name]


def test_agent_campaign_is_skipped_without_an_agent() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ACP_AGENT"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
         str(ROOT / "fuzz" / "test_agent.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    # a module-level skip collects nothing: exit code 5, the reason in the summary
    assert proc.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout
    assert "set ACP_AGENT" in proc.stdout


BAD_SETTINGS = [
    ("ACP_BUDGET=abc", "ACP_BUDGET='abc': expected a number"),
    ("ACP_STOP_ON=STOP-3", "ACP_STOP_ON='STOP-3': unknown rule ID STOP-3"),
    ("ACP_SHARDS=0", "ACP_SHARDS='0': must be at least 1"),
    ("ACP_READINGS=A-01=zz", "has no value 'zz'"),
]


@pytest.mark.parametrize(("setting", "needle"), BAD_SETTINGS)
def test_the_campaign_module_names_a_bad_setting(setting: str, needle: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each setting is read when the module is imported: a bad one is a usage error naming
    it (what pytest then does with it: the test below, once)."""
    import importlib.util

    name, value = setting.split("=", 1)
    monkeypatch.setenv("ACP_AGENT", f"{sys.executable} -m acp_model.agents.reference")
    monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("acp_campaign_settings",
                                                  ROOT / "fuzz" / "test_agent.py")
    assert spec is not None and spec.loader is not None
    with pytest.raises(pytest.UsageError) as caught:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert needle in str(caught.value)


def test_agent_campaign_names_a_bad_setting() -> None:
    """pytest stops with the usage error and runs nothing (one setting: which setting it is
    does not change what pytest does with the error)."""
    setting, needle = BAD_SETTINGS[0]
    name, value = setting.split("=", 1)
    env = {**os.environ, "ACP_AGENT": f"{sys.executable} -m acp_model.agents.reference",
           name: value}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         str(ROOT / "fuzz" / "test_agent.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode not in (0, pytest.ExitCode.NO_TESTS_COLLECTED), proc.stdout
    assert needle in proc.stdout + proc.stderr
    assert "test_agent_campaign" not in proc.stdout  # nothing ran
