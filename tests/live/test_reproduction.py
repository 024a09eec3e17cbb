"""Reproducing a failure after the run is bounded: by history length, by the shrink budget,
and by Ctrl-C (a 30-minute run must not spend hours replaying its own history)."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import time
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import (
    Action,
    CancelPromptRequest,
    NewSession,
    Prompt,
    Wait,
    WaitMode,
)
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.program import Program
from acp_model.fuzzing.recorder import Found, Recorder
from acp_model.fuzzing.schedule import Schedule
from acp_model.fuzzing.shrink import ReplayOutcome, replay_once
from acp_model.oracle.monitor import Violation

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference", "--timing", "fast"]


def _recording(call: Any) -> Any:
    """A stand-in's outcomes as a real replay's: each records a (here empty) boundary schedule
    of its program, and says whether it was held to one."""
    def replay(*args: Any, **kw: Any) -> ReplayOutcome:
        outcome = call(*args)
        actions = next(a for a in args if isinstance(a, list))
        return dataclasses.replace(outcome, schedule=Schedule((), len(actions)),
                                   held=kw.get("schedule") is not None)
    return replay


def _example(n: int) -> list[Action]:
    return [NewSession(), Prompt(0, [{"type": "text", "text": f"example {n}"}])]


class _CountingReplays:
    """Stands in for fresh-process replays: records what was asked, never reproduces."""

    def __init__(self) -> None:
        self.trials: list[list[Action]] = []
        self.lock = threading.Lock()

    @_recording
    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        with self.lock:
            self.trials.append(actions)
        return ReplayOutcome(False, [], [], None)


def test_history_suffix_replays_at_most_the_last_examples(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    fake = _CountingReplays()
    monkeypatch.setattr(shrink, "replay_once", fake)
    history = [_example(n) for n in range(2000)]
    got = shrink.history_suffix(
        shrink.Minimizer(FuzzConfig(REFERENCE), "CANCEL-07",
                         shrink.TrialClock(time.monotonic() + 60)), history)
    assert got is None
    assert fake.trials, "some suffix must have been tried"
    longest = max(sum(isinstance(a, NewSession) for a in t) for t in fake.trials)
    assert longest == shrink.MAX_HISTORY_EXAMPLES
    # the suffixes end with the newest example
    assert all(t[-1].blocks[0]["text"] == "example 1999" for t in fake.trials)


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


class _NeedsBugPrompt:
    """Stands in for fresh-process replays of a deterministic bug: a program reproduces when
    a session exists and a prompt saying "bug" follows (it shows at that action)."""

    def __init__(self, flaky_below: int = 0) -> None:
        self.calls = 0
        self.flaky_below = flaky_below  # programs shorter than this reproduce only once
        self.seen: set[int] = set()
        self.lock = threading.Lock()

    @_recording
    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        with self.lock:
            self.calls += 1
            opened = False
            for n, a in enumerate(actions, start=1):
                opened = opened or isinstance(a, NewSession)
                if opened and isinstance(a, Prompt) and a.blocks[0]["text"] == "bug":
                    if len(actions) < self.flaky_below and len(actions) in self.seen:
                        break  # lucky once, never again
                    self.seen.add(len(actions))
                    return ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")],
                                         [], 1, None, n)
            return ReplayOutcome(False, [], [], None)


def _noise(n: int) -> list[Action]:
    return [Prompt(0, [{"type": "text", "text": f"noise {n}"}])]


def _found(actions: list[Action], history: list[list[Action]] | None = None) -> Found:
    v = Violation("X", "fail", "MUST", 1, "x")
    return Found("X", v, actions, [], 0, history or [actions], 0.0, 0.0,
                 candidates=[(actions, history or [actions])])


def test_minimizing_cuts_after_the_failure_and_drops_the_noise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NeedsBugPrompt()
    monkeypatch.setattr(shrink, "replay_once", fake)
    program = [NewSession()] + [a for n in range(12) for a in _noise(n)] \
        + [Prompt(0, [{"type": "text", "text": "bug"}])] + [a for n in range(9) for a in _noise(n)]
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=3), found)
    assert found.actions == [NewSession(), Prompt(0, [{"type": "text", "text": "bug"}])]
    # the rate counts every fresh-process run of that program, minimization's included
    assert found.verified and found.reproduced == found.replays >= 3


class _DeterministicBug:
    """Stands in for fresh-process replays of a deterministic bug, counting them: ``shows``
    says at which action (and on which session) a program shows it, None if it does not."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def shows(self, actions: list[Action]) -> tuple[int, int | None] | None:
        raise NotImplementedError

    @_recording
    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        with self.lock:
            self.calls += 1
        hit = self.shows(actions)
        if hit is None:
            return ReplayOutcome(False, [], [], None)
        return ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")], [], 1,
                             None, hit[0], session=hit[1])


class _NeedsBugOnSecondSession(_DeterministicBug):
    """A bug on the second session a program creates (the ``cancel_crosses_sessions`` kind):
    a prompt saying "bug" that lands there."""

    def shows(self, actions: list[Action]) -> tuple[int, int | None] | None:
        made = 0
        for n, a in enumerate(actions, start=1):
            made += isinstance(a, NewSession)
            if isinstance(a, Prompt) and a.blocks[0]["text"] == "bug" and made >= 2 \
                    and a.s % made == 1:
                return n, None
        return None


def test_removing_a_chunk_keeps_its_session_creations_until_they_stand_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Actions name sessions by order of creation: a chunk removed with its ``session/new``
    sends the later actions to other sessions, so delta debugging kept failing on every chunk
    holding one (79 actions left of ``cancel_crosses_sessions`` in a 20 s budget). Chunks
    now keep their session creations, which go once they stand alone: less than half the
    replays (67 before, on this program)."""
    fake = _NeedsBugOnSecondSession()
    monkeypatch.setattr(shrink, "replay_once", fake)
    bug = Prompt(1, [{"type": "text", "text": "bug"}])
    program = [NewSession(), *[a for n in range(30) for a in _noise(n)], NewSession(),
               *[a for n in range(30) for a in _noise(n)], bug,
               *[a for n in range(5) for a in _noise(n)]]
    got = shrink.delta_debug(FuzzConfig(REFERENCE), "X", program, time.monotonic() + 60)
    assert got == [NewSession(), NewSession(), bug]
    assert fake.calls <= 34, fake.calls


def test_a_shared_process_history_is_minimized_by_whole_examples_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug needs a session opened two examples earlier: only the history reproduces."""
    fake = _NeedsBugPrompt()
    monkeypatch.setattr(shrink, "replay_once", fake)
    bug = [Prompt(0, [{"type": "text", "text": "bug"}])]
    history = [[NewSession(created=0)], *[_noise(n) for n in range(30)], bug]
    found = _found(bug, history)
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2), found)
    assert found.actions == [NewSession(), *bug]
    assert any("earlier examples" in note for note in found.notes)


def test_a_program_lucky_once_gives_way_to_one_that_reproduces(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _NeedsBugPrompt(flaky_below=4)
    monkeypatch.setattr(shrink, "replay_once", fake)
    # (delta debugging must meet a lucky program on its way: [N, n, n, n, bug] no longer
    # does, its chunks keep the session/new and reach a 4-action program first)
    program = [NewSession(), *_noise(1), *_noise(2), Prompt(0, [{"type": "text", "text": "bug"}])]
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2), found)
    assert len(found.actions) >= 4 and found.reproduced == found.replays >= 2
    assert any("reproduces more often" in note for note in found.notes)


def test_a_failure_no_replay_shows_is_reported_unverified(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _CountingReplays()
    monkeypatch.setattr(shrink, "replay_once", fake)
    found = _found([NewSession(), *_noise(1)])
    started = time.monotonic()
    # a budget the rounds cannot use up (a loaded machine ran 9 rounds in 0.5 s): the search
    # must end by its round count, not by the clock
    budget = 60.0
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2, minimize_budget=budget),
                                found)
    assert not found.verified and found.reproduced == 0
    assert any("unverified" in note for note in found.notes)
    # a racy failure gets its rounds of tries (each a batch of parallel replays), then the
    # measurement (of the program, then of it letting its session settle)
    assert len(fake.trials) == shrink.SEARCH_ROUNDS * shrink.PARALLEL + 2 * 2
    assert time.monotonic() - started < budget


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
        assert not first.proc.log.truncated
        assert recorder.restarts == 0  # planned, not a crash
        assert pool.current is not first and pool.current is not None
        assert not [v for m in pool.monitors() for v in m.violations if v.level == "fail"]
    finally:
        pool.retire()


class _CutShortByTheTeardown(_NeedsBugPrompt):
    """A bug at the end of a turn: a program that stops right after its prompt reproduced
    once (the run that found it) and then only one run in four (the teardown's cancel usually
    ends the turn first); one that lets the session settle always does."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[str, int] = {}  # per program

    @_recording
    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        outcome = super().__call__(cfg, actions, rule, abort)
        if not outcome.reproduced:
            return outcome
        if actions and isinstance(actions[-1], Wait):  # it shows while the session settles
            return dataclasses.replace(outcome, performed=len(actions))
        key = repr(actions)
        with self.lock:
            self.runs[key] = self.runs.get(key, 0) + 1
            lucky = self.runs[key] % 4 == 1
        return outcome if lucky else ReplayOutcome(False, [], [], None)


def test_a_program_cut_short_by_the_teardown_is_reported_with_its_sessions_settled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shrink, "replay_once", _CutShortByTheTeardown())
    program = [NewSession(), *_noise(1), Prompt(0, [{"type": "text", "text": "bug"}])]
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=4), found)
    assert isinstance(found.actions[-1], Wait) and found.actions[-1].mode == "settled"
    assert 2 * found.reproduced >= found.replays > 0


def test_what_the_machine_may_draw_does_not_depend_on_the_agent_s_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's only precondition (another session may be opened) counts the sessions
    the program asked for, not those the agent made: a session/new answered too late must
    not change what Hypothesis may draw when it replays the program (that raised
    FlakyStrategyDefinition and lost the exact replay)."""
    from acp_model.fuzzing.actions import NewSession
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.recorder import Recorder

    recorder = Recorder()
    pool = AgentPool(FuzzConfig(REFERENCE), recorder)
    try:
        client = pool.client()
        monkeypatch.setattr(client, "new_session", lambda: None)  # no answer in time
        ex = Example(client, recorder, deadline=3.0)
        ex.act(NewSession())
        ex.act(NewSession())
        assert ex.local == [] and ex.n_sessions == 2
        pool.end_example(ex)
    finally:
        pool.retire()


class _NeedsPrimedSession(_DeterministicBug):
    """A bug that needs two prompts on one session ("prime", then "bug"): it reports the
    failure on that session, as the monitor does."""

    def shows(self, actions: list[Action]) -> tuple[int, int | None] | None:
        made, primed = 0, set()
        for n, a in enumerate(actions, start=1):
            if isinstance(a, NewSession):
                made += 1
            elif isinstance(a, Prompt) and made:
                s, text = a.s % made, a.blocks[0]["text"]
                if text == "prime":
                    primed.add(s)
                elif text == "bug" and s in primed:
                    return n, s
        return None


def _many_sessions() -> list[Action]:
    def say(s: int, text: str) -> Prompt:
        return Prompt(s, [{"type": "text", "text": text}])

    program: list[Action] = []
    for s in range(6):
        program += [NewSession(), say(s, f"noise {s}")]
    for n in range(80):
        program.append(say(n % 6, f"noise {n}"))
        if n == 30:
            program.append(say(3, "prime"))
    return [*program, say(3, "bug")]


def test_a_failure_on_one_session_is_cut_to_that_session_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other session's actions go in one replay (a slow agent with a racy failure
    cannot afford delta debugging over hundreds of actions)."""
    expected = [NewSession(), Prompt(0, [{"type": "text", "text": "prime"}]),
                Prompt(0, [{"type": "text", "text": "bug"}])]
    calls = {}
    for sliced in (True, False):
        fake = _NeedsPrimedSession()
        monkeypatch.setattr(shrink, "replay_once", fake)
        if not sliced:
            monkeypatch.setattr(Program, "session_slice_at", lambda program, target: None)
        found = _found(_many_sessions())
        shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2), found)
        if sliced:
            assert found.actions == expected
        else:  # the same program, its session numbered as the run had it (3 % 1 == 0)
            assert [dataclasses.replace(a, s=0) if isinstance(a, Prompt) else a
                    for a in found.actions] == expected
        calls[sliced] = fake.calls
    assert calls[True] < calls[False], calls


def test_a_program_whose_turn_needs_time_is_searched_with_its_sessions_settled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run saw the bug because the next example gave the last turn time; replayed alone,
    the teardown's cancel cuts that turn short. The settled variant is tried at once."""
    bug = Prompt(0, [{"type": "text", "text": "bug"}])

    @_recording
    def replay(cfg: FuzzConfig, actions: list[Action], rule: str | None,
               abort: threading.Event | None = None, **_: Any) -> ReplayOutcome:
        for n, a in enumerate(actions, start=1):
            if isinstance(a, Wait) and bug in actions[:n] and NewSession() in actions[:n]:
                return ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")],
                                     [], 1, None, n, session=0)
        return ReplayOutcome(False, [], [], None)

    monkeypatch.setattr(shrink, "replay_once", replay)
    found = _found([NewSession(), *_noise(1), bug])
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2), found)
    assert found.verified and found.actions == [NewSession(), bug, Wait(0, "settled")]
    assert not any("earlier examples" in note for note in found.notes)


def test_a_late_failure_of_an_earlier_example_s_session_keeps_the_program_that_opened_it(
        ) -> None:
    """On a shared process an earlier example's session can break a rule while a later example
    runs (an update after its cancelled end): the program recorded for the failure starts with
    the example that opened that session, not the unrelated one that happened to be running
    (a clean-clone run's counterexample showed that one, and no replay could reproduce it)."""
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.program import standalone
    from acp_model.fuzzing.recorder import LifecycleFailure, Recorder
    from acp_model.model.vocab import Level

    recorder = Recorder()
    pool = AgentPool(FuzzConfig(REFERENCE), recorder)
    try:
        client = pool.client()
        first = Example(client, recorder, deadline=3.0)
        for a in _example(1):
            first.act(a)
        pool.end_example(first)
        earlier = client.sessions[first.local[0]].sid
        second = Example(client, recorder, deadline=3.0)
        for a in _example(2):
            second.act(a)
        # the monitor's verdict on the earlier session, as a late update would raise it
        client.monitor.violations.append(Violation(
            "CANCEL-09", Level.FAIL, "MUST", client.proc.mark(), "late update",
            session=earlier))
        with pytest.raises(LifecycleFailure):
            second.check()
        program = standalone(recorder.found["CANCEL-09"].actions)
        assert [type(a) for a in program] == [NewSession, Prompt, NewSession, Prompt]
        assert program[1].blocks[0]["text"] == "example 1" and program[1].s == 0
        assert program[3].s == 1
        # and its transcript starts there too: the earlier session's prompt is in it
        assert any("example 1" in json.dumps(r) for r in recorder.found["CANCEL-09"].records)
        own = Violation("CANCEL-07", Level.FAIL, "MUST", client.proc.mark(), "its own",
                        session=client.sessions[second.local[0]].sid)
        assert second._program_of(own) == (second.actions, second.start)
    finally:
        pool.retire()


def test_a_proof_resting_on_a_taken_over_session_s_past_keeps_the_program_that_made_it() -> None:
    """An example may take over a quiet session an earlier example left (``reuse_sessions``,
    real agents): a failure whose proof cites a message of that earlier example records the
    program from the example that made the session, replayed on that same session (a run on
    codex-acp showed a proof resting on a cancel the counterexample left out); a failure
    whose proof lies in the example itself keeps the example's program."""
    from acp_model.fuzzing.pool import AgentPool, Example
    from acp_model.fuzzing.program import standalone
    from acp_model.fuzzing.recorder import LifecycleFailure, Recorder
    from acp_model.model.vocab import Level

    recorder = Recorder()
    pool = AgentPool(FuzzConfig(REFERENCE, reuse_sessions=1), recorder)
    try:
        client = pool.client()
        first = Example(client, recorder, deadline=3.0)
        for a in _example(1):
            first.act(a)
        earlier_record = client.proc.mark()
        pool.end_example(first)
        second = Example(client, recorder, deadline=3.0)
        for a in _example(2):
            second.act(a)
        sid = client.sessions[second.local[0]].sid
        assert sid == client.sessions[first.local[0]].sid, "the quiet session was taken over"
        own = Violation("CANCEL-07", Level.FAIL, "MUST", client.proc.mark(), "its own",
                        session=sid, evidence=[(second.start + 1, "session/cancel")])
        assert second._program_of(own) == (second.actions, second.start)
        client.monitor.violations.append(Violation(
            "A-10.cancel", Level.FAIL, "MUST", client.proc.mark(), "an earlier cancel",
            session=sid, evidence=[(earlier_record - 1, "session/cancel")]))
        with pytest.raises(LifecycleFailure):
            second.check()
        program = standalone(recorder.found["A-10.cancel"].actions)
        assert [type(a) for a in program] == [NewSession, Prompt, Prompt]
        assert [a.blocks[0]["text"] for a in program[1:]] == ["example 1", "example 2"]
        assert program[1].s == program[2].s == 0
        assert any("example 1" in json.dumps(r) for r in recorder.found["A-10.cancel"].records)
    finally:
        pool.retire()


def test_a_cut_minimization_keeps_the_shortest_program_so_far_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's time budget ends minimizing (``minimize_until`` already past once the first
    reproduction is found): the program shown is the one that reproduced, and a note says
    minimizing was cut."""
    fake = _NeedsBugPrompt()
    monkeypatch.setattr(shrink, "replay_once", fake)
    program = [NewSession(), *_noise(1), *_noise(2), *_noise(3),
               Prompt(0, [{"type": "text", "text": "bug"}])]
    found = _found(program)
    steps: list[str] = []
    shrink.measure_reproduction(FuzzConfig(REFERENCE, replay_runs=2), found,
                                minimize_until=time.monotonic(), on_step=steps.append)
    assert found.minimize_cut and found.verified
    assert found.actions == program  # nothing removed: the cut came first
    assert found.minimize is not None and not found.minimize["fixpoint"]
    assert any(n.startswith("minimizing stopped at its search stage") and "(5 actions)" in n
               for n in found.notes), found.notes
    assert steps == ["minimizing", "replaying"]
    assert found.reproduced == found.replays >= 2


def test_replays_a_stop_cut_are_not_counted() -> None:
    from acp_model.fuzzing.shrink import INTERRUPTED, Tally

    tally = Tally()
    program: list[Action] = [NewSession()]
    tally.count(program, ReplayOutcome(False, [], [], None, INTERRUPTED))
    assert tally.get(program, False)[:2] == (0, 0)
    tally.count(program, ReplayOutcome(False, [], [], None))
    assert tally.get(program, False)[:2] == (0, 1)
    tally.count(program, ReplayOutcome(False, [], [], None, held=True))
    assert tally.get(program, True)[:2] == (0, 1)  # held and free runs are told apart


def _say(text: str) -> Prompt:
    return Prompt(0, [{"type": "text", "text": text}])


def _sighting(cfg: FuzzConfig, rule: str, program: list[Action]) -> Found:
    """The run's first sighting of ``rule``: a replay of ``program`` that shows it."""
    for _ in range(5):
        outcome = replay_once(cfg, program, rule)
        if outcome.reproduced and outcome.offending is not None:
            v = next(v for v in outcome.violations if v.rule == rule)
            return Found(rule, v, program, outcome.records, outcome.offending, [program],
                         0.0, 0.0, candidates=[(program, [program])])
    raise AssertionError(f"{program} never showed {rule}")


def test_a_withdrawn_prompt_s_failure_is_rooted_under_prompt_04_when_no_prompt_is_answered(
        ) -> None:
    """kilo v1 (s8, cause I): an agent that answers no prompt (here: none after the first) is
    first seen as CANCEL-14 where the client had withdrawn the prompt. Minimizing counted the
    replays without the withdrawal (PROMPT-04 on the same prompt) as misses, so the program
    kept it; now they are hits, and the failure is PROMPT-04's, short, saying why."""
    # each trial waits out PROMPT-04's deadline: on a loaded 2-core CI (ci-66) 17 trials took
    # the default 60 s; the budget is only the bound, a quiet machine is done in ~40 s
    cfg = FuzzConfig([*REFERENCE, "--mutant", "prompt_never_answered"], replay_runs=2,
                     minimize_budget=300.0)
    noise = [a for n in range(4) for a in (Wait(0, WaitMode.TICK), _say(f"noise {n}"))]
    program = [NewSession(), _say("a"), Wait(0, WaitMode.SETTLED), _say("b"),
               Wait(0, WaitMode.TICK), CancelPromptRequest(0), *noise]
    found = _sighting(cfg, "CANCEL-14", program)
    assert found.method == "session/prompt"
    shrink.measure_reproduction(cfg, found)
    assert found.rule == found.violation.rule == "PROMPT-04", (found.rule, found.notes)
    assert found.verified and not found.minimize_cut, found.notes
    assert not any(isinstance(a, CancelPromptRequest) for a in found.actions), found.actions
    assert len(found.actions) <= 4, found.actions
    assert found.notes[0] == ("first seen as CANCEL-14; the program without the withdrawal "
                              "($/cancel_request) shows it, so the root is PROMPT-04")
    # the run had also seen PROMPT-04 itself: one root, one failure
    recorder = Recorder()
    recorder.found = {"CANCEL-14": found, "PROMPT-04": dataclasses.replace(
        found, rule="PROMPT-04", notes=[], actions=[*found.actions, _say("more")])}
    recorder.one_root()
    assert list(recorder.found) == ["PROMPT-04"]
    assert recorder.found["PROMPT-04"].actions == found.actions
    assert recorder.found["PROMPT-04"].notes[0].startswith("first seen as CANCEL-14")


def test_an_agent_that_answers_only_prompts_not_withdrawn_stays_cancel_14() -> None:
    """The narrow rule is the root when only withdrawn prompts go unanswered: minimizing
    keeps the withdrawal, and the failure stays CANCEL-14."""
    cfg = FuzzConfig([*REFERENCE, "--mutant", "withdrawn_prompt_unanswered"], replay_runs=2)
    program = [NewSession(), _say("a"), _say("b"), CancelPromptRequest(0), _say("c"),
               Wait(0, WaitMode.TICK), _say("d")]
    found = _sighting(cfg, "CANCEL-14", program)
    shrink.measure_reproduction(cfg, found)
    assert found.rule == found.violation.rule == "CANCEL-14", found.notes
    assert found.verified
    assert any(isinstance(a, CancelPromptRequest) for a in found.actions), found.actions
    assert not any(n.startswith("first seen as") for n in found.notes), found.notes
