"""A replay in which the agent failed on its own (an error where the recording had a result,
an exit) is inconclusive: no evidence either way, neither in minimizing nor in the rates
(issue 49, cause H: gemini-cli v1's session/load answered -32603 in some replays)."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, NewSession, Prompt
from acp_model.fuzzing.artifacts import reproduction_text
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.inconclusive import own_failure
from acp_model.fuzzing.recorder import Found
from acp_model.fuzzing.schedule import Boundary, Crossing, Schedule
from acp_model.fuzzing.shrink import CERTIFY, Minimizer, ReplayOutcome, Tally, Trial, TrialClock
from acp_model.oracle.monitor import Violation
from acp_model.report.text import rates_phrase

CMD = ["true"]  # never started: every replay here is a stand-in
LOAD_FAILED = ("the agent answered the client's first session/load with error -32603 where the "
               "recording had a result")


def _recording(load: str = "result", actions: int = 2) -> Schedule:
    """session/new (action 1) then session/load (action 2), each answered with ``load``'s
    outcome for the load."""
    return Schedule((
        Crossing(Boundary.WRITE, ("request", "session/new"), action=0),
        Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=0),
        Crossing(Boundary.WRITE, ("request", "session/load"), action=1, by_action=True),
        Crossing(Boundary.MESSAGE, ("response", load), cause=2, action=1),
    ), actions)


def _records(load_error: bool = True) -> list[dict[str, Any]]:
    load = {"id": 3, "error": {"code": -32603, "message": "internal"}} if load_error \
        else {"id": 3, "result": {}}
    return [{"dir": "c2a", "msg": {"id": 1, "method": "initialize", "params": {}}},
            {"dir": "a2c", "msg": {"id": 1, "error": {"code": -32603, "message": "x"}}},
            {"dir": "c2a", "msg": {"id": 2, "method": "session/new", "params": {}}},
            {"dir": "a2c", "msg": {"id": 2, "result": {"sessionId": "s"}}},
            {"dir": "c2a", "msg": {"id": 3, "method": "session/load", "params": {}}},
            {"dir": "a2c", "msg": load}]


def _missed(records: list[dict[str, Any]], **kw: Any) -> ReplayOutcome:
    return ReplayOutcome(False, [], records, None, **kw)


def test_an_error_where_the_recording_had_a_result_is_inconclusive() -> None:
    assert own_failure(_missed(_records()), _recording()) == LOAD_FAILED


def test_what_the_recording_had_too_or_did_not_reach_is_evidence() -> None:
    """An error the recording also had is the same behaviour; a request past where the
    recording showed the rule (here: it showed it in action 1) is not compared; a replay
    that reproduced, or one with nothing to compare with, is evidence."""
    assert own_failure(_missed(_records()), _recording(load="error")) is None
    assert own_failure(_missed(_records()), _recording(actions=1)) is None
    assert own_failure(_missed(_records(load_error=False)), _recording()) is None
    assert own_failure(dataclasses.replace(_missed(_records()), reproduced=True),
                       _recording()) is None
    assert own_failure(_missed(_records()), None) is None


def test_request_cancelled_after_the_client_s_cancel_is_evidence_not_an_own_failure() -> None:
    """codex-acp v2's CANCEL-07: free-running, the client's cancel came before the prompt
    began and codex answered the prompt -32800 in all 12 replays, each counted inconclusive
    ("0/0 free-running"). The client's cancel chose that branch: a miss, not the agent's own
    failure. The same code with no cancel or close of the client's before it stays one."""
    records = _records()
    cancelled = {"id": 3, "error": {"code": -32800, "message": "Request cancelled"}}
    cancel = {"dir": "c2a", "msg": {"method": "session/cancel", "params": {"sessionId": "s"}}}
    after_cancel = [*records[:5], cancel, {"dir": "a2c", "msg": cancelled}]
    assert own_failure(_missed(after_cancel), _recording()) is None
    for method in ("$/cancel_request", "session/close"):
        other = {"dir": "c2a", "msg": {"method": method, "params": {}}}
        assert own_failure(_missed([*records[:5], other, {"dir": "a2c", "msg": cancelled}]),
                           _recording()) is None
    uncaused = [*records[:5], {"dir": "a2c", "msg": cancelled}]
    assert own_failure(_missed(uncaused), _recording()) == LOAD_FAILED.replace("-32603",
                                                                                "-32800")
    odd = {"dir": "c2a", "msg": {"method": ["not", "a", "name"], "params": {}}}  # a probe's
    assert own_failure(_missed([*records[:5], odd, {"dir": "a2c", "msg": cancelled}]),
                       _recording()) is not None  # no cancel: still the agent's own failure
    internal = [*records[:5], cancel, {"dir": "a2c", "msg": records[5]["msg"]}]
    assert own_failure(_missed(internal), _recording()) == LOAD_FAILED  # not a cancel's code


def test_an_exit_before_the_action_that_showed_the_rule_is_inconclusive() -> None:
    """The recording's process lived past action 1 (it showed the rule in action 2): an exit
    during action 1 is the agent's own failure; one during action 2 may be what the rule
    judges, and without a recording there is nothing to compare with."""
    exited = _missed([], exited=(1, 1))
    assert own_failure(exited, _recording()) == "the agent exited (code 1) during action 1"
    assert own_failure(_missed([], exited=(2, 1)), _recording()) is None
    assert own_failure(exited, None) is None


def test_the_tally_keeps_inconclusive_replays_out_of_the_rate() -> None:
    tally = Tally(cut=False)
    program: list[Action] = [NewSession(), Prompt(0, [{"type": "text", "text": "x"}])]
    assert not tally.count(program, _missed(_records(), held=True), _recording())
    assert tally.count(program, _missed(_records(load_error=False), held=True), _recording())
    assert tally.get(program, True)[:2] == (0, 1)
    assert [u.words() for u in tally.inconclusive(program, True)] == [LOAD_FAILED]
    assert tally.inconclusive(program, False) == []


def test_the_rates_say_the_inconclusive_runs_and_old_reports_read_as_before() -> None:
    ce = {"reproduced": 6, "replays": 6, "free_reproduced": 4, "free_replays": 6,
          "inconclusive": 2, "free_inconclusive": 1, "inconclusive_why": LOAD_FAILED}
    assert rates_phrase(ce) == (f"reproduced 6/6 under the recorded schedule (2 more "
                                f"inconclusive: {LOAD_FAILED}), 4/6 free-running (1 more "
                                "inconclusive)")
    assert rates_phrase({**ce, "reproduced": 0, "replays": 0}).startswith(
        f"no conclusive replay under the recorded schedule (2 more inconclusive: {LOAD_FAILED})")
    old = {k: v for k, v in ce.items() if "inconclusive" not in k}
    assert rates_phrase(old) == "reproduced 6/6 under the recorded schedule, 4/6 free-running"


def _text(text: str) -> Prompt:
    return Prompt(0, [{"type": "text", "text": text}])


class _FlakyBug:
    """A deterministic bug (a session, then a prompt saying "bug") on an agent that answers
    session/new with -32603 on every other replay (``always``: on every one)."""

    def __init__(self, always: bool = False) -> None:
        self.always = always
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        with self.lock:
            self.calls += 1
            failing = self.always or self.calls % 2 == 0
        held = kw.get("schedule") is not None
        new = next((n for n, a in enumerate(actions) if isinstance(a, NewSession)), None)
        if failing and new is not None:
            records = [{"dir": "c2a", "msg": {"id": 2, "method": "session/new"}},
                       {"dir": "a2c", "msg": {"id": 2, "error": {"code": -32603}}}]
            return ReplayOutcome(False, [], records, None, held=held, seconds=0.01)
        bug = next((n for n, a in enumerate(actions, start=1)
                    if new is not None and n > new and a == _text("bug")), None)
        events = () if new is None else (
            Crossing(Boundary.WRITE, ("request", "session/new"), action=new),
            Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=new))
        schedule = Schedule(events, bug or len(actions))
        if bug is None:
            return ReplayOutcome(False, [], [], None, schedule=schedule, held=held,
                                 seconds=0.01)
        return ReplayOutcome(True, [Violation(rule or "X", "fail", "MUST", 1, "x")], [], 1,
                             None, bug, schedule=schedule, held=held, seconds=0.01)


def test_a_held_trial_that_was_only_inconclusive_is_run_again_and_never_refuted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Held to a recording in which session/new had a result, a trial whose agent answered it
    with an error every time is run again CERTIFY more times (bounded), counts no miss, and
    is not refuted; a later ``first`` does not replay it held to the same schedule (the
    agent keeps failing there: gemini-cli v1's V1-LOAD-01 spent its 200 trials re-running
    such trials in every pass), but does held to another one (a later best's)."""
    fake = _FlakyBug(always=True)
    monkeypatch.setattr(shrink, "replay_once", fake)
    m = Minimizer(FuzzConfig(CMD), "X", TrialClock(time.monotonic() + 60))
    program = [NewSession(), _text("harmless")]
    trial = Trial(program, Schedule((
        Crossing(Boundary.WRITE, ("request", "session/new"), action=0),
        Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=0)), 2))
    assert m.first([trial]) is None
    assert fake.calls == shrink.PARALLEL * (1 + CERTIFY)
    assert not m.missed and m.seen.get(program, True)[:2] == (0, 0)
    assert m.first([trial]) is None
    assert fake.calls == shrink.PARALLEL * (1 + CERTIFY)
    assert not m._refuted(trial) and not m.missed
    other = Trial(program, Schedule(trial.schedule.events, 3))  # type: ignore[union-attr]
    assert m.first([other]) is None
    assert fake.calls == 2 * shrink.PARALLEL * (1 + CERTIFY)


def test_minimizing_keeps_the_minimal_program_and_the_report_states_the_inconclusive_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shrink, "replay_once", _FlakyBug())
    actions = [NewSession(), *(_text(f"noise {n}") for n in range(6)), _text("bug")]
    v = Violation("X", "fail", "MUST", 1, "x")
    found = Found("X", v, actions, [], 0, [actions], 0.0, 0.0,
                  candidates=[(actions, [actions])])
    cfg = FuzzConfig(CMD, replay_runs=4, minimize_budget=30.0)
    shrink.measure_reproduction(cfg, found)
    assert found.actions == [NewSession(), _text("bug")], found.minimize
    assert found.minimize is not None and found.minimize["fixpoint"], found.minimize
    # every conclusive run reproduced; the inconclusive ones were run again (at most
    # replay_runs more per mode), so the rate is over more conclusive runs than half
    assert found.reproduced == found.replays > cfg.replay_runs // 2
    assert found.free_reproduced == found.free_replays > cfg.replay_runs // 2
    assert found.inconclusive + found.replays <= 2 * cfg.replay_runs
    assert found.inconclusive >= 1 and found.inconclusive_why is not None
    assert "first session/new with error -32603" in found.inconclusive_why
    assert "more inconclusive: the agent answered the client's first session/new" \
        in reproduction_text(found)


def test_the_matrix_page_and_a_bug_report_state_the_inconclusive_runs() -> None:
    """A matrix finding (report/matrix.py: the page, matrix.json, ``report-bug``) carries the
    inconclusive runs beside its rates; one without any (every older run) reads as before."""
    from acp_model.report.matrix import reproduction_text as finding_text

    finding = {"reproduction": "6/6", "free_reproduction": "4/6", "inconclusive": 2,
               "inconclusive_why": LOAD_FAILED}
    assert finding_text(finding) == (
        f"reproduced 6/6 (2 more inconclusive: {LOAD_FAILED}) in fresh agent processes "
        "under the recorded boundary schedule, 4/6 free-running")
    assert finding_text({"reproduction": "6/6", "free_reproduction": "4/6"}) == (
        "reproduced 6/6 in fresh agent processes under the recorded boundary schedule, "
        "4/6 free-running")


def test_a_program_no_final_replay_reproduced_shows_the_trial_that_made_it_not_the_run(
        ) -> None:
    """gemini-cli v1's V1-LOAD-01 (s12 matrix): every final replay was inconclusive (its
    session/load failed on its own), so the counterexample showed the 15 actions minimizing
    reached beside the run's own transcript of 36, whose breaches it named "(action 24)". The
    transcript shown is the minimizing trial's that made the program what it is."""
    program = [NewSession(), _text("bug")]
    run_records = [{"dir": "c2a", "msg": {"id": n, "method": "session/prompt"}}
                   for n in range(40)]
    v = Violation("X", "fail", "MUST", 39, "x")
    found = Found("X", v, [NewSession(), *(_text(f"noise {n}") for n in range(30)),
                           _text("bug")], run_records, 39, [], 0.0, 0.0)
    tally = Tally(cut=False)
    for held in (True, False):  # all the final replays failed on their own
        assert not tally.count(program, _missed(_records(), held=held), _recording())
    trial = [{"dir": "c2a", "msg": {"id": 2, "method": "session/new"}},
             {"dir": "a2c", "msg": {"id": 2, "result": {"sessionId": "s"}}},
             {"dir": "c2a", "msg": {"id": 3, "method": "session/prompt"}}]
    last = ReplayOutcome(True, [Violation("X", "fail", "MUST", 2, "x")], trial, 2, None, 2,
                         held=True)
    shrink._reported(found, Trial(program), tally, last)
    assert found.actions == program and (found.reproduced, found.replays) == (0, 0)
    assert found.inconclusive == found.free_inconclusive == 1
    records, offending, numbers = found.shown()
    assert records == trial and offending == 2 and numbers == [0, 1, 2]
    assert found.violation.index == 2
    unshown = Found("X", v, list(program), run_records, 39, [], 0.0, 0.0)
    shrink._reported(unshown, Trial(program), tally, None)  # nothing reproduced: the run's own
    assert unshown.shown()[0] == run_records


def test_a_recorded_reason_reads_by_place_and_no_rate_reads_reproduced_not_replayed() -> None:
    """The s12 reader (O3): a re-judged page still said "session/load #1", from a report
    written before the reason named the request by its place, and gemini-cli's cut program
    "reproduced not replayed (12 more inconclusive ...)"."""
    from acp_model.report.matrix import reproduction_text
    from acp_model.report.text import inconclusive_words

    old = "the agent answered session/load #1 with error -32603 where the recording had a result"
    assert inconclusive_words(old) == LOAD_FAILED
    assert inconclusive_words(LOAD_FAILED) == LOAD_FAILED  # the current wording stays
    f = {"reproduction": "not replayed", "free_reproduction": "not replayed",
         "inconclusive": 12, "free_inconclusive": 12, "inconclusive_why": old}
    said = reproduction_text(f)
    assert said.startswith(f"no conclusive replay (12 more inconclusive: {LOAD_FAILED}) in "
                           "fresh agent processes under the recorded boundary schedule, no "
                           "conclusive replay (12 more inconclusive) free-running")
    assert "reproduced not replayed" not in said
    from acp_model.report.matrix import not_filed

    cut = not_filed({**f, "minimize": {"stage": "single", "trials": 200, "fixpoint": False},
                     "steps": 15})
    assert cut is not None and ", and the program had no conclusive replay (12 more" in cut
    assert rates_phrase({"reproduced": 0, "replays": 0, "free_replays": 0, "inconclusive": 1,
                         "inconclusive_why": old}).endswith(f"(1 more inconclusive: "
                                                            f"{LOAD_FAILED})")
    assert reproduction_text({"reproduction": "2/6", "free_reproduction": "not replayed"}) \
        == ("reproduced 2/6 in fresh agent processes under the recorded boundary schedule, "
            "not replayed free-running")


def test_a_reason_s_error_is_worded_and_read_back_in_one_place() -> None:
    """The words a run records for an inconclusive replay's error, by place since s12 and
    "#1" before, are read by one reader (``report.text.ErrorReason``) for the run's re-judging
    and for the page alike; what each writes reads back the same, and a phrase of neither
    wording is no error reason."""
    from acp_model.fuzzing.inconclusive import Unsure, UnsureKind, unsure_in_words
    from acp_model.report.text import ErrorReason, inconclusive_words

    for n in (1, 3, 12):
        unsure = Unsure(UnsureKind.ERROR, -32603, method="session/prompt", n=n)
        assert unsure_in_words(unsure.words()) == (unsure, False)
        assert inconclusive_words(unsure.words()) == unsure.words()
    old = "the agent answered session/prompt #12 with error -32800 where the recording had a result"
    assert ErrorReason.read(old) == ErrorReason("session/prompt", 12, -32800, numbered=True)
    worded = inconclusive_words(old)
    assert "answered the client's 12th session/prompt with error -32800" in worded
    assert unsure_in_words(worded) == (Unsure(UnsureKind.ERROR, -32800, method="session/prompt",
                                              n=12), False)
    assert unsure_in_words("the agent answered the client's own session/new with error 5") \
        is None
