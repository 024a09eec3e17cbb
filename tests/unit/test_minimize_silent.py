"""Minimizing spends its trials where they inform (issue 49, the s12 reader's O4 and O5):
the actions that wrote nothing go in one trial, and an agent that keeps failing on its own
does not eat the failure's trials in re-runs."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, NewSession, Prompt, Relaunch, Wait, WaitMode
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.recorder import Found, program_key
from acp_model.fuzzing.schedule import Boundary, Crossing, Schedule
from acp_model.fuzzing.shrink import ReplayOutcome
from acp_model.oracle.monitor import Violation

CMD = ["true"]  # never started: every replay here is a stand-in


def _text(text: str) -> Prompt:
    return Prompt(0, [{"type": "text", "text": text}])


SKIPPED = _text("kept back")  # a prompt a reading kept back (A-01=forbid): it writes nothing


@dataclasses.dataclass
class _Agent:
    """A stand-in agent: a program reproduces when it opens a session, then prompts "bug";
    a wait and the prompt ``SKIPPED`` write nothing (each other action writes once, stamped
    with its number)."""

    attempts: Counter[str] = dataclasses.field(default_factory=Counter)
    asked: list[tuple[list[Action], Schedule | None]] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        program = list(actions)
        with self.lock:
            self.attempts[program_key(program)] += 1
            self.asked.append((program, kw.get("schedule")))
        bug = _text("bug")
        shows = bug in program and NewSession() in program[:program.index(bug)]
        end = program.index(bug) + 1 if shows else len(program)
        records = [{"dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "x"},
                    "by": {"part": "action", "n": n}}
                   for n, a in enumerate(program[:end], start=1)
                   if not isinstance(a, NewSession | Wait) and a != SKIPPED]
        offending = len(records)
        records.append({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}})
        found = Violation(rule or "X", "fail", "MUST", offending, "x")
        out = ReplayOutcome(shows, [found] if shows else [], records,
                            offending if shows else None, None, end if shows else None)
        return dataclasses.replace(out, schedule=Schedule((), end),
                                   held=kw.get("schedule") is not None, seconds=0.01)


def _found(actions: list[Action]) -> Found:
    found = Found("X", Violation("X", "fail", "MUST", 1, "x"), actions, [], 0, [actions], 0.0,
                  0.0, candidates=[(actions, [actions])])
    found.schedules[program_key(actions)] = Schedule((), len(actions))
    return found


def test_the_actions_that_wrote_nothing_go_in_one_held_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kilo v1's PROMPT-04 (s12) kept 11 of its 24 actions writing nothing when its seconds
    ran out in delta debugging: such actions now go first, all at once, held to the schedule
    (they add no write to it); a ``new session`` (it takes a spare: no write) stays."""
    program: list[Action] = [NewSession(), SKIPPED, Wait(0, WaitMode.UPDATE), _text("noise"),
                             SKIPPED, _text("bug")]
    agent = _Agent()
    monkeypatch.setattr(shrink, "replay_once", agent)
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=30.0), found)
    silent = found.minimize["stages"]["silent"]  # type: ignore[index]
    assert (silent["changes"], silent["actions"]) == (1, [6, 3]), silent
    assert silent["trials"] <= shrink.PARALLEL, silent
    first_cut = next(p for p, s in agent.asked if s is not None and len(p) < len(program))
    assert first_cut == [NewSession(), _text("noise"), _text("bug")]
    assert found.actions == [NewSession(), _text("bug")]
    assert found.minimize["fixpoint"]  # type: ignore[index]


def test_which_actions_wrote_is_read_from_the_stamps_and_a_relaunch_says_nothing() -> None:
    """Only stamped writes count; with no stamp at all, or a relaunch (the records are of its
    last process), nothing is called silent; every ``new session`` is kept."""
    program: list[Action] = [NewSession(), SKIPPED, _text("bug")]
    stamped = [{"dir": "c2a", "msg": {}, "by": {"part": "action", "n": 3}}]
    assert shrink.wrote(program, stamped) == [0, 2]
    assert shrink.wrote(program, [{"dir": "c2a", "msg": {}}]) is None
    every = [{"dir": "c2a", "msg": {}, "by": {"part": "action", "n": 2}}]
    assert shrink.wrote([NewSession(), _text("bug")], every) is None
    relaunch = Relaunch(0)
    assert shrink.wrote([*program, relaunch], stamped) is None


def test_minimizing_ends_once_the_agent_failed_on_its_own_in_every_latest_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """gemini-cli v1's V1-LOAD-01 (s12): in fresh processes its session/load failed on its
    own (a session loaded in the clock minute it was made loses its history), and minimizing
    spent all 200 of its trials on replays that said nothing. Now it ends after
    UNSURE_STREAK inconclusive trials in a row, and says why."""
    program: list[Action] = [NewSession(), *(_text(f"noise {n}") for n in range(12)),
                             _text("bug")]
    agent = _Agent()
    made = (Crossing(Boundary.WRITE, ("request", "session/new"), action=0),
            Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=0))

    def failing(cfg: FuzzConfig, actions: list[Action], rule: str | None,
                abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        out = agent(cfg, actions, rule, abort, **kw)
        if out.reproduced and len(actions) == len(program):
            # the search's run: the recording, in which session/new had a result
            return dataclasses.replace(out, schedule=Schedule(made, len(program)))
        records = [{"dir": "c2a", "msg": {"id": 2, "method": "session/new"}},
                   {"dir": "a2c", "msg": {"id": 2, "error": {"code": -32603}}}]
        return dataclasses.replace(out, reproduced=False, violations=[], records=records,
                                   offending=None, performed=None)

    monkeypatch.setattr(shrink, "replay_once", failing)
    found = _found(program)
    found.schedules[program_key(program)] = Schedule(made, len(program))
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=60.0), found)
    m = found.minimize
    assert m is not None and m["cut_by"] == "unsure", m
    assert m["trials"] <= 2 * shrink.UNSURE_STREAK + 2 * shrink.PARALLEL * shrink.UNSURE_ROUNDS, m
    assert "the agent failed on its own in each of its latest trials" in " ".join(found.notes)


def _dup_ids(news: int) -> list[dict[str, Any]]:
    """gptme v1's SESS-01 (s12): every session/new answered with one id; the client makes
    spares ahead, and its first ``news`` actions took the first ``news`` of them."""
    records: list[dict[str, Any]] = [{"dir": "c2a", "msg": {"id": 0, "method": "initialize"},
                                      "by": {"part": "handshake"}},
                                     {"dir": "a2c", "msg": {"id": 0, "result": {}}}]
    for n in (1, 2, 3):
        records.append({"dir": "c2a", "msg": {"id": n, "method": "session/new"},
                        "by": {"part": "spare"}})
        records.append({"dir": "a2c", "msg": {"id": n, "result": {"sessionId": "acp-1"}}})
        if n <= news:
            records.append({"dir": "a2c", "msg": {"method": "session/update"},
                            "taken": [["acp-1", n]]})
    return records


def _dup_outcome(news: int) -> ReplayOutcome:
    records = _dup_ids(news)
    second = next(i for i, r in enumerate(records) if r["msg"].get("id") == 2
                  and "result" in r["msg"])
    v = Violation("SESS-01", "fail", "MUST", second, "x", evidence=[(3, "the first")])
    return ReplayOutcome(True, [v], records, second, None, news or None)


def test_a_proof_that_rests_on_an_untaken_spare_is_told() -> None:
    assert shrink.rests_on_spare(_dup_outcome(1))  # the second session/new is a spare's
    assert not shrink.rests_on_spare(_dup_outcome(2))  # action 2 took it


def test_at_the_fixpoint_a_spare_the_proof_rests_on_is_made_by_an_action(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The s12 reader's O4: gptme's "1. new session s1" could not show a breach that needs
    two session/new; at the fixpoint one trial adds the action that takes the spare, kept
    when its proof no longer rests on a spare, and no removal follows."""
    def agent(cfg: FuzzConfig, actions: list[Action], rule: str | None,
              abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        news = sum(isinstance(a, NewSession) for a in actions)
        if not news:
            return ReplayOutcome(False, [], [], None, schedule=Schedule((), len(actions)),
                                 held=kw.get("schedule") is not None, seconds=0.01)
        out = _dup_outcome(min(news, 2))
        return dataclasses.replace(out, performed=len(actions), schedule=Schedule(
            (), len(actions)), held=kw.get("schedule") is not None, seconds=0.01)

    monkeypatch.setattr(shrink, "replay_once", agent)
    found = _found([NewSession(), _text("noise")])
    found.rule = "SESS-01"
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=30.0), found)
    m = found.minimize
    assert m is not None and m["fixpoint"], m
    assert m["stages"]["spare"]["changes"] == 1, m
    assert found.actions == [NewSession(), NewSession()]


def test_the_silent_trial_runs_once_a_removal_lets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemini-cli v1's V1-LOAD-01 (s13): its 36 actions began with a relaunch (a replay that
    relaunches records no schedule, and its records are of its last process), so neither the
    late nor the silent stage could run, and delta debugging, cut at 20 actions, left 12 that
    wrote nothing. Once a removal takes the relaunch, delta debugging pauses for the silent
    stage's one held trial."""
    wait = Wait(0, WaitMode.UPDATE)
    program: list[Action] = [NewSession(), Relaunch(0), _text("noise"), SKIPPED, wait,
                             _text("bug")]
    agent = _Agent()

    def relaunching(cfg: FuzzConfig, actions: list[Action], rule: str | None,
                    abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        out = agent(cfg, actions, rule, abort, **kw)
        if any(isinstance(a, Relaunch) for a in actions):
            # only the whole program reproduces with it, and its replay has no schedule
            return dataclasses.replace(out, reproduced=out.reproduced and actions == program,
                                       schedule=None)
        return out

    monkeypatch.setattr(shrink, "replay_once", relaunching)
    found = _found(program)
    found.schedules.clear()  # the run's failure came after a relaunch: no schedule either
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=60.0), found)
    m = found.minimize
    assert m is not None and m["fixpoint"], m
    silent = m["stages"].get("silent")
    assert silent is not None and (silent["changes"], silent["actions"]) == (1, [4, 2]), m
    assert found.actions == [NewSession(), _text("bug")]
