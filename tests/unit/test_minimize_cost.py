"""What minimizing spends: a budget that grows with the agent's own trial time, a batch whose
first reproduction ends the others, and no held trial replayed once it was refuted."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, NewSession, Prompt
from acp_model.fuzzing.budget import MATRIX_GROWTH
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Found
from acp_model.fuzzing.schedule import Schedule
from acp_model.fuzzing.shrink import CERTIFY, Minimizer, ReplayOutcome, Trial, TrialClock
from acp_model.oracle.monitor import Violation
from acp_model.report.text import CutBy, minimize_stopped

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "docs" / "matrix-run"  # the kept matrix run
KEPT_DATA = ROOT / "tests" / "data"  # earlier runs' rows the tests keep (s12, s13)
CMD = ["true"]  # never started: every replay here is a stand-in


def _text(text: str) -> Prompt:
    return Prompt(0, [{"type": "text", "text": text}])


class _BugPrompt:
    """A deterministic bug: a program reproduces once a session exists and a prompt says
    "bug"; each replay says it took ``seconds`` (the agent's trial time)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        with self.lock:
            self.calls += 1
        opened = False
        out = ReplayOutcome(False, [], [], None)
        for n, a in enumerate(actions, start=1):
            opened = opened or isinstance(a, NewSession)
            if opened and isinstance(a, Prompt) and a.blocks[0]["text"] == "bug":
                out = ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")],
                                    [], 1, None, n)
                break
        return dataclasses.replace(out, schedule=Schedule((), len(actions)),
                                   held=kw.get("schedule") is not None, seconds=self.seconds)


def _found(actions: list[Action]) -> Found:
    v = Violation("X", "fail", "MUST", 1, "x")
    return Found("X", v, actions, [], 0, [actions], 0.0, 0.0, candidates=[(actions, [actions])])


def _program() -> list[Action]:
    return [NewSession(), *(_text(f"noise {n}") for n in range(8)), _text("bug")]


@pytest.mark.parametrize(("seconds", "grows"), [(4.0, True), (0.01, False)])
def test_the_minimizing_budget_grows_with_the_agent_s_trial_time(
        monkeypatch: pytest.MonkeyPatch, seconds: float, grows: bool) -> None:
    """A slow agent (seconds per replay) gets the time the trials of its program's length
    take, up to --minimize-growth times --minimize-budget (the matrix's); a fast one keeps
    the base budget. The report states the budget it had and the agent's median trial time."""
    fake = _BugPrompt(seconds)
    monkeypatch.setattr(shrink, "replay_once", fake)
    found = _found(_program())
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=2, minimize_budget=2.0,
                                           minimize_growth=MATRIX_GROWTH), found)
    m = found.minimize
    assert m is not None and m["fixpoint"], m
    assert m["trial_seconds"] == seconds
    if grows:
        assert 2.0 < m["budget"] <= MATRIX_GROWTH * 2.0 + 0.1, m
    else:
        assert m["budget"] <= 2.0 + 0.1, m
    assert found.actions == [NewSession(), _text("bug")]


def test_searching_grows_the_budget_to_its_own_trials_only() -> None:
    """Searching is not minimizing: until a program reproduced, the budget grows to what the
    search's own trials (SEARCH_ALLOWED) take at the agent's cost, a floor per failure (a slow
    agent's search is not cut by seconds after a few trials: codex-acp v2's CANCEL-07, s10);
    then to what minimizing a program of its length needs, up to the cap; a shorter program
    does not shrink it back."""
    now = time.monotonic()
    per = 1.0 / shrink.PARALLEL  # seconds per trial, as PARALLEL run at once
    m = Minimizer(FuzzConfig(CMD), "X", TrialClock(now + 0.5, now + 1000.0, now))
    assert m.deadline() == now + 0.5  # no trial ran yet: the base budget
    m.clock.durations = [1.0] * 5
    assert m.deadline() == pytest.approx(now + shrink.SEARCH_ALLOWED * per)
    m.best = Trial(_program())
    assert m.deadline() == pytest.approx(now + shrink.trials_for(len(_program())) * per)
    m.best = Trial(_program()[:2])
    assert m.deadline() == pytest.approx(now + shrink.trials_for(len(_program())) * per)
    m.clock.durations = [60.0] * 5
    assert m.deadline() == now + 1000.0  # capped


def test_the_first_reproduction_of_a_batch_ends_the_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial that reproduced answers the batch: the others are stopped (cut, no evidence)
    instead of running out their programs and deadlines."""
    if shrink.PARALLEL < 2:
        pytest.skip("one replay at a time: a batch has no other trial")
    stopped: list[bool] = []

    def replay(cfg: FuzzConfig, actions: list[Action], rule: str | None,
               abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        if actions[-1] == _text("bug"):
            return ReplayOutcome(True, [Violation("X", "fail", "MUST", 1, "x")], [], 1, None, 2)
        assert abort is not None
        stopped.append(abort.wait(30.0))  # a slow trial: it ends when it is told to
        return ReplayOutcome(False, [], [], None, shrink.INTERRUPTED)

    monkeypatch.setattr(shrink, "replay_once", replay)
    started = time.monotonic()
    hit = shrink.first_reproducing(FuzzConfig(CMD), "X", [[NewSession(), _text("slow")],
                                                          [NewSession(), _text("bug")]])
    assert hit is not None and hit[0] == 1
    deadline = time.monotonic() + 10.0
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stopped == [True]
    assert time.monotonic() - started < 30.0


def test_a_refuted_held_trial_is_not_replayed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held to its schedule, a program that missed CERTIFY replays is refuted: asking for it
    again runs no replay (the outcome cache by program)."""
    fake = _BugPrompt(0.01)
    monkeypatch.setattr(shrink, "replay_once", fake)
    m = Minimizer(FuzzConfig(CMD), "X", TrialClock(time.monotonic() + 60))
    trial = Trial([NewSession(), _text("harmless")], Schedule((), 2))
    for _ in range(CERTIFY + 2):
        assert m.first([trial]) is None
    assert m.seen.get(trial.program, True)[:2] == (0, fake.calls)
    assert CERTIFY <= fake.calls < CERTIFY + shrink.PARALLEL
    free = Trial(trial.program)  # free-running misses are weak evidence: still replayed
    before = fake.calls
    assert m.first([free]) is None
    assert fake.calls > before
    # held to another schedule (a later best's), the same program is another trial
    other = Trial(trial.program, Schedule((), 1))
    before = fake.calls
    assert m.first([other]) is None
    assert fake.calls > before


def test_measuring_the_reported_program_expects_its_recorded_events_trials_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported program's held replays run ``exact`` (each agent event it recorded may
    take the deadline); minimizing's trials of smaller programs do not (an event they do not
    bring is left out soon)."""
    seen: list[tuple[bool, bool]] = []  # (held, exact) of each replay
    fake = _BugPrompt(0.01)

    def replay(cfg: FuzzConfig, actions: list[Action], rule: str | None,
               abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        seen.append((kw.get("schedule") is not None, bool(kw.get("exact"))))
        return fake(cfg, actions, rule, abort, **kw)

    monkeypatch.setattr(shrink, "replay_once", replay)
    found = _found(_program())
    shrink.measure_reproduction(dataclasses.replace(FuzzConfig(CMD), replay_runs=3,
                                                    minimize_budget=30), found)
    assert found.reproduced == found.replays == 3
    minimizing, measuring = seen[:-6], seen[-6:]  # the last: 3 held, 3 free
    assert sorted(measuring) == [(False, False)] * 3 + [(True, True)] * 3
    assert any(held for held, _ in minimizing) and not any(e for _, e in minimizing)


def test_the_minimizing_budget_is_counted_in_trials_and_each_stage_says_how_far_it_got(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--minimize-trials N bounds a failure's minimizing in trials, whatever the seconds allow:
    it stops after at most N replays, cut by its trials, and the report states the trials used
    and allowed and, per stage, its trials, the program's length before and after and whether
    it ran to its end."""
    fake = _BugPrompt(0.01)
    monkeypatch.setattr(shrink, "replay_once", fake)
    found = _found(_program())
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=600.0,
                                           minimize_trials=6), found)
    m = found.minimize
    assert m is not None and not m["fixpoint"] and m["cut_by"] == "trials", m
    assert type(m["cut_by"]) is str  # the JSON's word, as reports before CutBy wrote it
    assert m["trials"] == m["trials_allowed"] == 6
    stages = m["stages"]
    assert stages["search"]["done"] and stages["search"]["trials"] >= 1
    assert sum(s["trials"] for s in stages.values()) == 6
    last = list(stages.values())[-1]
    assert not last["done"]
    assert found.minimize_cut
    text = minimize_stopped(m)
    assert "6 of its 6 trials" in text and "its trials ran out" in text
    assert "search for a program that reproduces" in text and ", cut" in text
    assert any(n.startswith("minimizing stopped at its") and "not proven minimal" in n
               for n in found.notes), found.notes


def test_by_default_the_trials_allowed_are_what_the_program_s_length_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --minimize-trials a failure gets the search's trials and then trials_for()
    of the first program that reproduced (at most MAX_TRIALS): enough for this program's
    fixpoint, each stage of which ran to its end."""
    fake = _BugPrompt(0.01)
    monkeypatch.setattr(shrink, "replay_once", fake)
    found = _found(_program())
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=600.0), found)
    m = found.minimize
    assert m is not None and m["fixpoint"] and m["cut_by"] is None, m
    search = m["stages"]["search"]["trials"]
    assert m["trials_allowed"] == min(shrink.MAX_TRIALS,
                                      search + shrink.trials_for(len(_program())))
    assert m["trials"] <= m["trials_allowed"]
    assert all(s["done"] for s in m["stages"].values()), m["stages"]
    assert m["stages"]["chunks"]["actions"][0] == len(_program())
    assert m["stages"]["single"]["actions"][1] == 2 and m["stages"]["single"]["passes"] == 2
    assert found.actions == [NewSession(), _text("bug")]


def test_a_batch_never_runs_more_trials_than_are_left(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _BugPrompt(0.01)
    monkeypatch.setattr(shrink, "replay_once", fake)
    left = [1]
    hit = shrink.first_reproducing(FuzzConfig(CMD), "X",
                                   [[NewSession(), _text(f"no {n}")] for n in range(5)],
                                   left=lambda: left[0] - fake.calls)
    assert hit is None and fake.calls == 1


def _reproducing(now: float, *, trials: int, seconds: float, took: float, actions: int,
                 growth: float) -> Minimizer:
    """A minimizer of a failure that reproduced: ``trials`` replays of ``seconds`` each ran
    in ``took`` s, and its best program has ``actions`` actions (the base budget 60 s, the
    ceiling ``growth`` times that)."""
    m = Minimizer(FuzzConfig(CMD), "X", TrialClock(now + 60.0, now + growth * 60.0, now))
    m.clock.durations = [seconds] * trials
    m.trials, m.clock.last = trials, now + took
    m.best = Trial(_program()[:actions])
    m.fixed = shrink.MAX_TRIALS
    return m


def test_the_matrix_ceiling_lets_a_slow_agent_s_short_program_reach_its_fixpoint() -> None:
    """The s7 matrix's claude-agent-acp v2 SDK-PROMPT-03: 42 trials of 12 s in 300 s (a
    55-action history's search and cut), 6 actions left, 158 trials unused: the deadline is the
    latest trial's end plus what minimizing 6 actions needs at that cost, within the matrix's
    ceiling (5 x 60 s cut it there)."""
    now = time.monotonic()
    m = _reproducing(now, trials=42, seconds=12.06, took=300.0, actions=6,
                     growth=MATRIX_GROWTH)
    need = shrink.trials_for(6) * max(12.06 / shrink.PARALLEL, 300.0 / 42)
    assert m.deadline() == pytest.approx(now + 300.0 + need)
    assert m.deadline() < now + MATRIX_GROWTH * 60.0


def test_the_estimate_counts_the_measured_wall_time_of_a_trial() -> None:
    """Replays overlap less than PARALLEL (a batch's first reproduction ends the others): the
    s7 run's qwen-code ran 32 trials of 11.2 s in 301 s. The stages still to run are costed at
    what a trial took apart, and a search that used the base budget does not eat them."""
    now = time.monotonic()
    m = _reproducing(now, trials=32, seconds=11.16, took=301.0, actions=4, growth=1000.0)
    m.fixed = 62  # a 4-action program's allowance, fixed after 10 trials of search
    left = m.trials_left()
    assert m.deadline() == pytest.approx(now + 301.0 + left * 301.0 / 32)
    assert m.deadline() > now + m.allowed() * 11.16 / shrink.PARALLEL  # the old estimate


def test_the_ceiling_bounds_what_the_stages_need() -> None:
    """However slow the agent, the deadline stays within the ceiling (``cap_at``: the stated
    --minimize-growth times --minimize-budget), and ``fuzz``'s growth 1 keeps the base."""
    now = time.monotonic()
    m = _reproducing(now, trials=10, seconds=60.0, took=300.0, actions=8, growth=3.0)
    assert m.deadline() == now + 180.0
    m = _reproducing(now, trials=10, seconds=60.0, took=30.0, actions=8, growth=1.0)
    assert m.deadline() == now + 60.0


def test_what_cut_minimizing_is_typed_and_kept_reports_read_and_write_as_they_were() -> None:
    """``cut_by`` is a :class:`CutBy`, read from the word a report keeps (a word no run writes
    reads as none, and says nothing); each kept report's words read back as a member, say why
    and write back the same."""
    assert CutBy.of("unsure") is CutBy.UNSURE and CutBy.of(None) is CutBy.of("budget") is None
    assert "(its trials ran out" in minimize_stopped(
        {"stage": "chunks", "trials": 6, "trials_allowed": 6, "cut_by": "trials"})
    assert "(" not in minimize_stopped(
        {"stage": "chunks", "trials": 6, "trials_allowed": 6, "cut_by": "budget"})
    reports = [*RUN.glob("*/report.json"), *KEPT_DATA.glob("s1*-run/*/report.json")]
    kept = [f.get("minimize") or {} for path in reports
            for f in json.loads(path.read_text(encoding="utf-8")).get("counterexamples", [])]
    cuts = [m["cut_by"] for m in kept if m.get("cut_by") is not None]
    assert cuts, "the kept runs have a failure whose minimizing was cut"
    for word in cuts:
        cut = CutBy.of(word)
        assert cut is not None and cut.words and json.dumps(cut) == json.dumps(word), word
