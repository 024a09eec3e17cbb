"""The shape of the ready-made campaigns of ``fuzz/``, without running them: the quick plan is
representative, the full plan covers every mutant, three timings and three seeds, the designs
plan >= 40 designs covering every pair of axis values (an agent sharing no code with the
reference agent, fast and slow, three seeds, >= 200 examples); usage errors are clear; the
example database is keyed by the agent, not the budget.
(Running them: test_campaigns.py.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acp_model.agents.design import Design, covered
from acp_model.agents.mutants import MUTANTS
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import example_database
from acp_model.spec.readings import DEFAULT
from tests.helpers import load_fuzz_module

zoo = load_fuzz_module("acp_zoo_campaign")
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


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
