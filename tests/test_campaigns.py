"""The ready-made campaigns of ``fuzz/``.

* the zoo campaign's quick plan, one test per case: bug mutants are reported under their rule,
  the reference agent (fast, real, slow) and a sample of correct designs give no failure and
  warnings only where a reading leaves the behaviour open;
* the shape of the full plan (every mutant, three timings, three seeds) and of the designs plan
  (>= 40 designs covering every pair of axis values, an agent sharing no code with the
  reference agent, fast and slow, three seeds, >= 200 examples);
* the long campaign for any agent (``fuzz/test_agent.py``) end to end on two xdist workers,
  and the example database it relies on: a failure stored by one run replays first in the next.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from acp_model.agents.design import Design, covered
from acp_model.agents.mutants import MUTANTS
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import example_database
from acp_model.fuzzing.recorder import Recorder
from acp_model.fuzzing.run import run_fuzz
from acp_model.spec.readings import DEFAULT

pytestmark = pytest.mark.slow  # runs the mutant zoo

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


def _load(name: str) -> ModuleType:
    """``fuzz/`` is not a package (``fuzz`` is taken on PyPI): load its module by path."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "fuzz" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


zoo = _load("acp_zoo_campaign")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in zoo.plan("quick")])
def test_quick_zoo_case(case: Any) -> None:
    outcome = zoo.run_case(case)
    assert outcome.ok, outcome.explain()
    if case.kind != "bug":
        assert outcome.examples >= case.max_examples  # the whole budget ran, nothing cut short


def test_quick_plan_is_representative() -> None:
    cases = zoo.plan("quick")
    assert {c.timing for c in cases if c.kind == "reference"} == set(zoo.TIMINGS)
    bug_groups = {c.rule.split("-")[0] for c in cases if c.kind == "bug"}
    assert len(bug_groups) >= 8, bug_groups
    assert any(c.kind == "design" and "plain" in c.argv()[2] for c in cases)
    assert any(c.kind == "design" and "reference" in c.argv()[2] for c in cases)


def test_full_plan_covers_every_variant_timing_and_seed() -> None:
    cases = zoo.plan("full")
    variants = {"reference", *(m.name for m in MUTANTS)}
    for timing in zoo.TIMINGS:
        for variant in variants:
            seeds = {c.seed for c in cases if c.variant == variant and c.timing == timing}
            assert len(seeds) >= 3, (variant, timing)
    rules = {m.name: m.rule for m in MUTANTS}
    for c in cases:
        if c.kind == "bug":
            assert c.rule == rules[c.variant]
        else:
            assert c.rule is None and c.max_examples >= 200, c.id
    assert zoo.plan("full", seeds=[7], timings=["slow"], only=["reference"])[0].id == \
        "reference-slow-s7"


def test_designs_plan_covers_every_pair_fast_and_slow_three_seeds() -> None:
    cases = zoo.plan("designs")
    designs = {c.variant for c in cases if c.kind == "design"}
    reference_points = [Design.parse(zoo.DESIGNS[v][3]) for v in designs
                        if zoo.DESIGNS[v][2] == "--design"]
    assert len(reference_points) + 1 >= 40 and covered([Design(), *reference_points])
    assert any(zoo.DESIGNS[v][1] == "acp_model.agents.plain" for v in designs)
    for variant in designs | {"reference"}:
        for timing in ("fast", "slow"):
            runs = [c for c in cases if c.variant == variant and c.timing == timing]
            assert {c.seed for c in runs} == {1, 2, 3} and all(c.max_examples >= 200
                                                               for c in runs), variant


def test_each_revision_is_played_and_judged() -> None:
    """Mutants of the newer revision are judged under --spec auto; the newer reference agent
    too; what the newer revision forbids and the seed allows is judged under the seed."""
    cases = {c.variant: c for c in zoo.plan("quick")}
    assert cases["receipt_id_differs"].config().spec == "auto"
    assert cases["sdk-reference"].config().spec == "auto"
    assert cases["sdk-held-under-seed"].config().spec == "seed"
    assert cases["cancel_as_end_turn"].config().spec is None  # the seed's readings
    full = zoo.plan("full")
    assert {m.name for m in MUTANTS if m.revisions != ("seed",)} <= {c.variant for c in full}


def test_design_outcome_allows_only_open_warnings() -> None:
    case = zoo.plan("quick", only=["design-01"])[0]
    held = zoo.Outcome(case, ok=True, warnings={"A-10.cancel": "held"},
                       open_warnings={"A-10.cancel": "A-10"})
    assert "open under A-10" in held.explain() and "WARNING" not in held.explain()
    should = zoo.Outcome(case, ok=False, warnings={"STATE-05": "no requires_action"})
    assert "WARNING STATE-05" in should.explain()
    assert zoo.reading_of_warning("held_prompt_cancelled", DEFAULT) == "A-10"
    assert zoo.reading_of_warning("held_prompt_cancelled", DEFAULT.parse(["A-10=cancel"])) \
        is None
    assert zoo.reading_of_warning("cancel_probably_honoured", DEFAULT) is None


@pytest.mark.parametrize("args", [["--seeds", "x"], ["--timings", "fst"], ["--only", "nope"],
                                  ["--jobs", "0"]])
def test_campaign_usage_errors_are_clear(args: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        zoo.main(args)
    assert exc.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_database_directory_is_keyed_by_agent_not_budget(tmp_path: Path) -> None:
    argv = [*REFERENCE, "--mutant", "cancel_as_end_turn"]
    base = example_database(FuzzConfig(argv, database=str(tmp_path)))
    assert base is not None and Path(base.path).parent == tmp_path
    # Budgets, seeds and steps change what is generated next, not what a stored entry means.
    same = example_database(FuzzConfig(argv, max_examples=5, steps=7, seed=3, time_budget=1,
                                       deadline=9, database=str(tmp_path)))
    assert same is not None and same.path == base.path
    for other in (FuzzConfig(REFERENCE, database=str(tmp_path)),
                  FuzzConfig(argv, max_sessions=2, database=str(tmp_path)),
                  FuzzConfig(argv, readings=DEFAULT.parse(["A-01=forbid"]),
                             database=str(tmp_path))):
        db = example_database(other)
        assert db is not None and db.path != base.path
    assert example_database(FuzzConfig(argv)) is None


def _examples_until(rule: str, cfg: FuzzConfig) -> int | None:
    """How many examples had finished when ``rule`` was first recorded."""
    seen: list[tuple[int, bool]] = []

    def progress(rec: Recorder) -> None:
        seen.append((rec.examples, rule in rec.found))

    run_fuzz(cfg, on_progress=progress)
    return next((n for n, hit in seen if hit), None)


def test_a_stored_failure_replays_first_in_the_next_run(tmp_path: Path) -> None:
    # Needs a notification-only batch: seed 3 generates one in its 10th example, seed 1 only
    # in its 88th. The trigger does not depend on timing, so the stored program fails again.
    rule = "RPC-09"
    argv = [*REFERENCE, "--mutant", "empty_batch_reply"]

    def cfg(seed: int) -> FuzzConfig:
        return FuzzConfig(argv, max_examples=150, steps=15, seed=seed, deadline=1.0,
                          max_rounds=1, replay_runs=0, shrink_budget=3.0,
                          stop_on=frozenset({rule}), database=str(tmp_path))

    assert _examples_until(rule, cfg(3)) is not None
    db = example_database(cfg(3))
    assert db is not None and any(Path(db.path).rglob("*")), "the failure was stored"
    assert _examples_until(rule, cfg(1)) == 1  # replayed before seed 1's own programs


def test_agent_campaign_on_two_workers(tmp_path: Path) -> None:
    agent = shlex.join([*REFERENCE, "--mutant", "cancel_as_end_turn"])
    env = {**os.environ, "ACP_AGENT": agent, "ACP_BUDGET": "10", "ACP_REPLAYS": "1",
           "ACP_DB": str(tmp_path / "db"), "ACP_OUT": str(tmp_path / "out"), "ACP_SEED": "5"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-q",
         str(ROOT / "fuzz" / "test_agent.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "2 failed" in out and "CANCEL-07 (MUST, binds the agent)" in out, out
    for shard in (0, 1):
        report = json.loads((tmp_path / "out" / f"shard-{shard}" / "report.json").read_text())
        assert report["config"]["seed"] == 5 + 1000 * shard
        assert "CANCEL-07" in {ce["rule"] for ce in report["counterexamples"]}
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


@pytest.mark.parametrize(("setting", "needle"), [
    ("ACP_BUDGET=abc", "ACP_BUDGET='abc': expected a number"),
    ("ACP_SHARDS=0", "ACP_SHARDS='0': must be at least 1"),
    ("ACP_READINGS=A-01=zz", "has no value 'zz'"),
])
def test_agent_campaign_names_a_bad_setting(setting: str, needle: str) -> None:
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
