"""Minimizing to a fixpoint on racy failures (issue 49, the s10 reader's C4 and C7): actions
written after the offending message go in one trial with the teardown held in their place, a
removal that missed on a racy program gets one more try, the search is not cut by seconds
before its own trials ran, and the notes say one thing about the program shown."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from typing import Any

import pytest

from acp_model.fuzzing import shrink
from acp_model.fuzzing.actions import Action, NewSession, Prompt, Wait
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.hold import Hold
from acp_model.fuzzing.recorder import Found, program_key
from acp_model.fuzzing.schedule import Boundary, Crossing, Schedule, event_key
from acp_model.fuzzing.shrink import ReplayOutcome
from acp_model.oracle.monitor import Violation

CMD = ["true"]  # never started: every replay here is a stand-in


def _text(text: str) -> Prompt:
    return Prompt(0, [{"type": "text", "text": text}])


def _violation(rule: str | None) -> Violation:
    return Violation(rule or "X", "fail", "MUST", 1, "x")


def _stamped(actions: list[Action], late: set[int]) -> tuple[list[dict[str, Any]], int]:
    """A replay's records, each action's write stamped with its number (``trace/authors``):
    the actions at ``late`` (1-based) wrote after the offending message; its index."""
    def write(n: int) -> dict[str, Any]:
        return {"dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "x"},
                "by": {"part": "action", "n": n}}

    records = [write(n) for n in range(1, len(actions) + 1)
               if n not in late and not isinstance(actions[n - 1], NewSession)]
    offending = len(records)
    records.append({"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 1, "result": {}}})
    records += [write(n) for n in sorted(late)]
    return records, offending


@dataclasses.dataclass
class _Agent:
    """A stand-in agent: a program reproduces when it opens a session, then prompts "bug";
    ``racy(program, attempt)`` says whether that attempt of a reproducing program misses.
    The failure shows only once the program's last action ran (as codex-acp's CANCEL-11: the
    offending answer came while the last action was being written), so the replay cuts
    nothing; the actions at ``late`` wrote after the offending message."""

    late: set[int] = dataclasses.field(default_factory=set)
    racy: Any = None
    seconds: float = 0.01
    attempts: Counter[str] = dataclasses.field(default_factory=Counter)
    asked: list[tuple[list[Action], Schedule | None]] = dataclasses.field(default_factory=list)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def __call__(self, cfg: FuzzConfig, actions: list[Action], rule: str | None,
                 abort: threading.Event | None = None, **kw: Any) -> ReplayOutcome:
        program = list(actions)
        with self.lock:
            self.attempts[program_key(program)] += 1
            attempt = self.attempts[program_key(program)]
            self.asked.append((program, kw.get("schedule")))
        if abort is not None and self.seconds > 0.05:
            abort.wait(self.seconds)  # a slow agent's replay (ends when told to stop)
        shows = _text("bug") in program and NewSession() in program[:program.index(_text("bug"))]
        if shows and self.racy is not None and self.racy(program, attempt):
            shows = False
        records, offending = _stamped(program, {n for n in self.late if n <= len(program)})
        found = Violation(rule or "X", "fail", "MUST", offending, "x")
        out = ReplayOutcome(shows, [found] if shows else [], records,
                            offending if shows else None, None, len(program) if shows else None)
        return dataclasses.replace(out, schedule=Schedule((), len(program)),
                                   held=kw.get("schedule") is not None, seconds=self.seconds)


def _found(actions: list[Action], history: list[list[Action]] | None = None) -> Found:
    found = Found("X", _violation("X"), actions, [], 0, history or [actions], 0.0, 0.0,
                  candidates=[(actions, history or [actions])])
    found.schedules[program_key(actions)] = Schedule((), len(actions))
    return found


def test_actions_written_after_the_offending_message_go_in_one_held_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every action whose first write came after the offending message goes at once, before
    delta debugging, held to the schedule with the teardown in the first one's place; a
    ``new session`` (taking a spare writes nothing) is kept for the later stages."""
    program = [NewSession(), _text("bug"), _text("late one"), NewSession(), _text("late two")]
    agent = _Agent(late={3, 5})
    monkeypatch.setattr(shrink, "replay_once", agent)
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=30.0), found)
    late = found.minimize["stages"]["late"]  # type: ignore[index]
    # one candidate (a batch's idle slots replay it again: they cost nothing)
    assert (late["changes"], late["actions"]) == (1, [5, 3]) and \
        late["trials"] <= shrink.PARALLEL, late
    first_after_search = next(p for p, s in agent.asked if s is not None and len(p) < 5)
    assert first_after_search == [NewSession(), _text("bug"), NewSession()]
    assert found.actions == [NewSession(), _text("bug")]
    assert found.minimize["fixpoint"]  # type: ignore[index]


def test_the_teardown_of_a_cut_program_is_held_in_the_first_cut_action_s_place() -> None:
    """A recording that showed the rule ends at the action it showed in (no teardown): the
    cut program's teardown takes the cut action's place, so its first look waits for the
    offending answer the recording read before that action wrote (run free, it would look at
    once and cancel the turn, and the cancel would explain the stop)."""
    events = (Crossing(Boundary.WRITE, ("request", "session/prompt"), action=0, by_action=True),
              Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=1),
              Crossing(Boundary.WRITE, ("notify", "$/cancel_request"), action=1, by_action=True))
    cut = Schedule(events, 2).restrict([0], teardown=1)
    assert [e.action for e in cut.events] == [0, 1, 1]
    hold = Hold(cut)
    write = Crossing(Boundary.WRITE, ("request", "session/prompt"), action=0, by_action=True)
    hold.observe(0, event_key(write, hold.ref))
    hold.left_behind(1)  # the teardown begins
    look = Crossing(Boundary.LOOK, ("look",), action=1, by_action=True)
    assert not hold.free and hold.would_wait(event_key(look, hold.ref), look)
    answer = Crossing(Boundary.MESSAGE, ("response", "result"), cause=0, action=0)
    hold.observe(1, event_key(answer, hold.ref))
    assert not hold.would_wait(event_key(look, hold.ref), look)


def test_a_removal_that_missed_on_a_racy_program_is_tried_once_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that misses some of its own held replays makes a removal's misses weak
    evidence: once every removal missed CERTIFY times, each gets one more try (codex-acp v1's
    CANCEL-11 kept an action its removal had missed by chance)."""
    program = [NewSession(), _text("noise"), _text("bug")]

    def racy(p: list[Action], attempt: int) -> bool:
        if p == program:
            return attempt % 2 == 0  # the program itself reproduces every other time
        return _text("noise") not in p and attempt <= shrink.CERTIFY  # unlucky twice

    agent = _Agent(racy=racy)
    monkeypatch.setattr(shrink, "replay_once", agent)
    found = _found(program)
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=30.0), found)
    assert found.actions == [NewSession(), _text("bug")]
    without = program_key([NewSession(), _text("bug")])
    assert agent.attempts[without] > shrink.CERTIFY


def test_the_search_runs_its_own_trials_before_seconds_cut_it_and_tries_settling_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """codex-acp v2's CANCEL-07 (s10): only the program letting its sessions settle
    reproduced, rarely; it came last in each search round, after the long history's trials,
    and the search was cut by its base seconds. Now the settled program comes right after the
    held one, the history runs once, and the search may take its own trials' time."""
    program = [NewSession(), _text("bug")]
    history = [[_text(f"earlier {n}")] for n in range(40)] + [program]

    def racy(p: list[Action], attempt: int) -> bool:
        settled = isinstance(p[-1], Wait)
        return not settled or attempt < 3  # the settled program, on its third try

    agent = _Agent(racy=racy, seconds=0.2)
    monkeypatch.setattr(shrink, "replay_once", agent)
    found = _found(program, history)
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=1, minimize_budget=0.3,
                                           minimize_growth=15.0), found)
    m = found.minimize
    assert m is not None and m["stages"]["search"]["done"], m
    assert found.verified


def test_the_notes_of_a_program_no_minimizing_trial_reproduced_agree(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No search trial reproduced, and the measurement found the settled program does: the
    notes say so, never "the shortest that reproduced during minimization" of a program that
    did not (s10: "32 actions reproduced 0/6" beside "the shortest that reproduced so far (35
    actions)")."""
    program = [NewSession(), _text("bug")]

    def racy(p: list[Action], attempt: int) -> bool:
        return not isinstance(p[-1], Wait) or attempt < 2

    monkeypatch.setattr(shrink, "replay_once", _Agent(racy=racy))
    found = _found(program)
    found.schedules.clear()
    shrink.measure_reproduction(FuzzConfig(CMD, replay_runs=2, minimize_budget=30.0,
                                           minimize_trials=1), found)
    assert found.minimize_cut and len(found.actions) == 3
    notes = json.dumps(found.notes)
    assert "reproduced during minimization" not in notes, found.notes
    assert "shortest that reproduced so far" not in notes, found.notes
    assert "the program the run showed it with" in notes
    assert "is the one that reproduced when measured" in notes


def test_only_what_came_after_the_whole_proof_of_an_agent_s_message_is_late() -> None:
    """An action is late only after every record the proof rests on, and only for a finding
    about a message the agent wrote: of a deadline's finding (what the agent never did) or of
    a client message, a later write may be the cause."""
    program: list[Action] = [NewSession(), _text("bug"), _text("late")]
    records, offending = _stamped(program, {3})
    records.append({"dir": "a2c", "msg": {"jsonrpc": "2.0", "method": "x"}})
    v = Violation("X", "fail", "MUST", offending, "x")
    hit = ReplayOutcome(True, [v], records, offending, None, 3)
    assert shrink.proof_end(hit) == offending
    assert shrink.written_before(program, records, offending) == [0, 1]
    cites_later = dataclasses.replace(v, evidence=[(len(records) - 1, "a later message")])
    assert shrink.proof_end(dataclasses.replace(hit, violations=[cites_later])) == \
        len(records) - 1
    assert shrink.written_before(program, records, len(records) - 1) is None
    owed = dataclasses.replace(v, kind="liveness")
    assert shrink.proof_end(dataclasses.replace(hit, violations=[owed])) is None
    client = dataclasses.replace(v, index=0)
    assert shrink.proof_end(dataclasses.replace(hit, violations=[client], offending=0)) is None
