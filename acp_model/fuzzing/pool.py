"""Running a fuzz campaign: agent processes, examples, failures, shrinking and replays.

One :class:`FuzzRun` owns an :class:`AgentPool` (one agent process reused across examples, fresh
sessions each time; restarted after a crash or per example with ``isolate``) and a
:class:`Recorder`, the side channel where every failure is kept the moment it is seen. That is
what makes the run robust to the agent's timing: Hypothesis may later fail to reproduce a
failure while shrinking (and raise a Flaky error), but the first failure and the shortest action
list that showed it are already safe. Each distinct failure (by rule) is then replayed in fresh
processes to measure how often the minimal counterexample reproduces.

Rules found in one Hypothesis round are masked in the next, so a run can report several
distinct bugs instead of stopping at the first.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from acp_model.fuzzing.actions import (
    Action,
    LoadSession,
    NewSession,
    Relaunch,
    SessionAction,
    from_json,
)
from acp_model.fuzzing.authorship import in_program, writing_as
from acp_model.fuzzing.client import FuzzClient, OracleError
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.excerpt import excerpt
from acp_model.fuzzing.ops import SessionHandle
from acp_model.fuzzing.program import Program, session_at
from acp_model.fuzzing.recorder import BudgetExhausted, LifecycleFailure, Recorder
from acp_model.fuzzing.sessions import close_sessions, first_of
from acp_model.fuzzing.stop import Stop
from acp_model.model.vocab import Level
from acp_model.oracle.monitor import Monitor, Violation
from acp_model.trace.authors import Author, Part, author_of
from acp_model.trace.format import TAKEN

MAX_SESSION_HISTORY = 200  # a failing session's history longer than this is not a program


class AgentPool:
    """The agent process examples run against; restarted when it dies."""

    def __init__(self, cfg: FuzzConfig, recorder: Recorder, stop: Stop | None = None) -> None:
        self.cfg = cfg
        self.recorder = recorder
        self.stop = stop or Stop()
        self.current: FuzzClient | None = None
        self.retired: list[Monitor] = []
        self._pid = os.getpid()

    def client(self) -> FuzzClient:
        """The process for the next example: a fresh one after a crash, with ``isolate``, or
        once the transcript is a quarter full (long runs keep memory bounded, and only an
        example that itself floods the agent's output can reach the transcript cap).

        In a forked child (HypoFuzz forks its workers after importing the test module, which
        made this pool) the inherited client is the parent's: its reader threads did not
        survive the fork, so every wait on it would time out and read as the agent's failure.
        The child leaves it to the parent, untouched, and starts an agent of its own.
        """
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self.current, self.retired = None, []
        current = self.current
        if current is not None:
            if not current.alive:
                self.recorder.restarts += 1
                self.retire()
            elif self.cfg.isolate or (current.proc.stored_bytes
                                      > current.proc.max_transcript_bytes // 4):
                self.retire()
        if self.current is None:
            if self.recorder.on_phase is not None and not self.retired:
                self.recorder.on_phase("initialize")
            client = FuzzClient(self.cfg, self.stop)
            try:
                client.reach = self.recorder.reach  # the run's counters, over every process
                client.handshake.served = self.recorder.served  # what it served too
                answer = client.initialize()
            except BaseException:
                # kept as the current client whatever stopped it (an unusable agent is read
                # by the run; an interrupt or the budget's end during initialize): the run's
                # end retires it, so its process is ended, not left to notice its stdin close
                self.current = client
                raise
            self.current = client
            info = answer.get("info", answer.get("agentInfo"))  # v2 ``info``, v1 ``agentInfo``
            if isinstance(info, dict) and self.recorder.agent_info is None:
                self.recorder.agent_info = info  # the agent's name and version, as it says
            self.harvest()  # what it got wrong while initializing needs no client action
        return self.current

    def harvest(self, *, unusable: bool = False) -> None:
        """Record what the current agent got wrong with no client action behind it, once:
        while it started, or (``unusable``) an agent that never became usable, its crash
        judged first. Examples judge only what comes after."""
        client = self.current
        if client is None:
            return
        if unusable:
            client.check_alive()
        with client.lock:
            fresh = client.oracle.violations(client.checked_violations)
        self.recorder.unprovoked(fresh, client.proc.records())
        client.checked_violations += len(fresh)

    def retire(self) -> None:
        if self.current is not None:
            self.current.close()
            self.retired.append(self.current.monitor)
            self.current = None

    def relaunch(self, old: FuzzClient) -> FuzzClient:
        """A fresh process in place of ``old`` (an example's :class:`Relaunch`): the same
        configuration, so the same command, environment, directory and workspace."""
        if self.current is old:
            self.retire()
        return self.client()

    def monitors(self) -> list[Monitor]:
        return [*self.retired, *([self.current.monitor] if self.current else [])]

    def end_example(self, ex: Example) -> None:
        """Drain and judge the example's sessions; with ``isolate`` its process goes too."""
        try:
            ex.finish()
        finally:
            if self.cfg.isolate:
                self.retire()


class Example:
    """One generated interaction: fresh sessions on the pooled agent, then a drain."""

    def __init__(self, client: FuzzClient, recorder: Recorder, *, deadline: float,
                 stop_at: float | None = None,
                 relaunch: Callable[[FuzzClient], FuzzClient] | None = None) -> None:
        self.client = client
        # a fresh process in place of the given one (:class:`Relaunch`; None: not possible)
        self.relaunch = relaunch
        self.relaunched = False  # a Relaunch replaced the process this example began on
        # The time budget ends the example too, not only the next one: on an agent that
        # makes every action wait out the deadline, one example could overrun it by minutes.
        self.stop_at = stop_at
        self.recorder = recorder
        self.deadline = deadline
        # example-local session index -> client session index (None: gone with a process)
        self.local: list[int | None] = []
        self.actions: list[Action] = []
        self.failed = False
        self._begin_on(client)
        # set when the example ends (the fuzzer's target()): the model transitions it fired,
        # and what it reached first of all the run's examples (transitions, rules judged,
        # lines of the agent's own code under --coverage)
        self.distinct_transitions = 0
        self.new_transitions = 0
        self.new_rules = 0
        self.new_agent_lines = 0
        # Anything the agent did between examples (a banner, a late update) is judged here.
        self.checked = client.checked_violations

    def _begin_on(self, client: FuzzClient) -> None:
        """Where this example begins on ``client``'s process: its history, records, model
        transitions and boundary schedule."""
        self.client = client
        client.example_starts.append(len(client.history))
        with client.lock:
            self.start = client.oracle.judged()
            self.transitions_before = client.oracle.transition_counts()
        client.example_records.append(self.start)
        self.schedule_start = client.schedule.start()  # where its boundary schedule begins

    @property
    def n_sessions(self) -> int:
        """Sessions this program asked for, whatever the agent answered: the machine's
        precondition reads it, and what Hypothesis may draw must not depend on the agent's
        timing (a session/new answered late made replays raise FlakyStrategyDefinition)."""
        return Program(tuple(self.actions)).sessions

    def act(self, action: Action | Mapping[str, Any]) -> None:
        """Log and perform one action, then raise if the oracle saw a failure.

        An exception of the oracle ends the whole run: it is recorded and Hypothesis is stopped
        (``BudgetExhausted``), so it can never look like an agent failure being shrunk.
        """
        if self.stop_at is not None and time.monotonic() > self.stop_at:
            raise BudgetExhausted  # the teardown still judges what this example did
        try:
            with writing_as(Author(Part.ACTION, len(self.actions) + 1)):  # its number
                self._act(from_json(action))
        except OracleError as exc:
            self.recorder.internal_error = exc
            raise BudgetExhausted from exc

    def _act(self, action: Action) -> None:
        self.actions.append(action)
        self.recorder.actions += 1
        client = self.client
        client.schedule.act(len(self.actions) - 1)
        if isinstance(action, NewSession):
            before = len(client.sessions)
            client.perform(action)
            if len(client.sessions) > before:
                self.local.append(len(client.sessions) - 1)
        elif isinstance(action, Relaunch):
            self._relaunch(action)
            client = self.client
        elif isinstance(action, SessionAction):
            idx = session_at(action.s, len(self.local))
            at = None if idx is None else self.local[idx]
            if at is None:
                return
            client.perform(dataclasses.replace(action, s=at))
        else:
            client.perform(action)
        if client.turns.last is not None:
            self.actions[-1] = action.with_turn(client.turns.last)
        client.check_alive()
        self.check()

    def _relaunch(self, action: Relaunch) -> None:
        """The editor restarts: this example's sessions are brought to rest and judged on the
        old process, a fresh one takes its place, and the session is reopened there (a no-op
        without a session, or when the agent advertised no reopen)."""
        old = self.client
        idx = session_at(action.s, len(self.local))
        at = None if idx is None else self.local[idx]
        if at is None or self.relaunch is None or not old.handshake.reloads:
            return
        sid = old.sessions[at].sid
        self._rest()
        self.check()
        new = self.relaunch(old)
        self.relaunched = True
        self.checked = new.checked_violations
        self._begin_on(new)
        reopened = len(new.sessions)
        new.history.append(dataclasses.replace(action, s=reopened))
        new.sessions.append(SessionHandle(sid))
        answer = LoadSession(reopened, action.replay).reopen(new, reopened)
        new.caught_up()
        kept = reopened if isinstance(answer, dict) and "result" in answer \
            else None  # an agent that did not find it: the session is gone
        self.local = [kept if n == idx else None for n in range(len(self.local))]

    def _sessions(self) -> list[int]:
        """The client's sessions this example still has."""
        return [i for i in self.local if i is not None]

    def _rest(self) -> list[str]:
        """Drain this example's sessions and judge what they still owe (liveness); returns
        their ids."""
        client = self.client
        looked = client.drain(self._sessions()) if client.alive else None
        client.check_alive()
        if not client.alive:  # after a crash, what the agent still owed is not a failure
            return []
        sids = [client.sessions[i].sid for i in self._sessions()]
        client.caught_up()  # the oracle has seen everything the drain waited for
        with client.lock:
            client.oracle.judge_open(sids, self.start, self.deadline,
                                     skip=set(client.factory.inflight), looked=looked)
        return sids

    def check(self) -> None:
        violations = self.client.violations_since(self.checked)
        self.checked += len(violations)
        self.client.checked_violations = self.checked
        first: Violation | None = None
        recorded: set[tuple[str, int]] = set()  # (rule, program start) already sliced
        for v in violations:
            if v.level != Level.FAIL:
                sighting = None
                if self.recorder.is_new_warning(v):
                    program, start = self._program_of(v)
                    sighting = (self.client.resolved(program), *self._slice(v, start))
                self.recorder.warning(v, sighting)
                continue
            program, start = self._program_of(v)
            if (v.rule, start) in recorded:
                # the same program broke the rule again (a flood of bad lines): counted, as
                # slicing the transcript once per line made such a check quadratic
                self.recorder.found[v.rule].seen += 1
                continue
            recorded.add((v.rule, start))
            records, offending, numbers = self._slice(v, start)
            own = start == self.start  # this example's program: its schedule is the one
            # (a schedule is of one process: an example that replaced its process has none)
            schedule = self.client.schedule.schedule(self.schedule_start, len(self.actions)) \
                if own and not self.relaunched else None
            history = [self.client.resolved(ex) for ex in self._history()]
            self.recorder.failure(v, self.client.resolved(program), records, offending,
                                  history, numbers, schedule,
                                  fresh=own and len(self.client.example_starts) == 1)
            sliced = self._session_history(v, history)
            if sliced is not None:
                self.recorder.also(v.rule, sliced)
            if first is None and v.rule not in self.recorder.masked and not self.failed:
                first = v
        if first is not None:
            self.failed = True
            raise LifecycleFailure(first)

    def _program_of(self, v: Violation) -> tuple[list[Action], int]:
        """The actions that showed ``v`` and the record their example began at: this
        example's, or, when ``v`` is about a session an earlier example on this process opened
        (its late update, or a session this example took over whose proof cites what an
        earlier example showed), every example's since that one (concrete actions:
        ``Program.standalone`` renumbers them for a fresh process, the taken-over session as
        itself)."""
        client = self.client
        if self.relaunched or v.session is None or (
                v.session in {client.sessions[i].sid for i in self._sessions()}
                and all(i >= self.start for i, _ in v.evidence)):
            return self.actions, self.start
        at = first_of(client.sessions, v.session)
        made = None if at is None else next((n for n, a in enumerate(client.history)
                                             if isinstance(a, NewSession) and a.created == at),
                                            None)
        if made is None:
            return self.actions, self.start
        k = bisect.bisect_right(client.example_starts, made) - 1
        return client.history[client.example_starts[k]:], client.example_records[k]

    def _session_history(self, v: Violation, history: list[list[Action]]
                         ) -> list[Action] | None:
        """The failing session's own actions (and the syncs) over every example this process
        ran, for a fresh process: a failure that needs what earlier examples did on that
        session (a session taken over, its late update) may need no other session's (None:
        the example's own program says it all, or it would not be shorter)."""
        if v.session is None or len(history) < 2:
            return None
        at = first_of(self.client.sessions, v.session)
        actions, fresh = Program(tuple(a for ex in history for a in ex)).renumbered()
        target = fresh.get(at) if at is not None else None
        sliced = Program(tuple(actions)).session_slice(target) if target is not None else None
        if not sliced or len(sliced) >= len(actions) or len(sliced) > MAX_SESSION_HISTORY:
            return None
        return sliced

    def _history(self) -> list[list[Action]]:
        """The concrete actions of every example run on this process so far, this one last."""
        hist, starts = self.client.history, self.client.example_starts
        bounds = [*starts, len(hist)]
        return [hist[a:b] for a, b in itertools.pairwise(bounds) if b > a]

    def _slice(self, v: Violation, start: int
               ) -> tuple[list[dict[str, Any]], int, list[int]]:
        """The records ``v`` keeps (:func:`excerpt`: the handshake, the example that began at
        record ``start``, the proof window and the session's own history), the offending
        record's position among them, and their message numbers."""
        records = self.client.proc.records()
        cited = [v.index, *(i for i, _ in v.evidence)]
        keep = excerpt(records, start, cited, v.session)
        position = {n: pos for pos, n in enumerate(keep)}
        offending = position.get(v.index, len(keep) - 1)
        return [self._numbered(records[i], i, start) for i in keep], offending, keep

    def _numbered(self, record: dict[str, Any], at: int, start: int) -> dict[str, Any]:
        """``record`` (at ``at`` in the process's transcript) with its author as the program
        that begins at record ``start`` numbers it (:func:`in_program`)."""
        client = self.client
        mine = start == self.start  # this example's program: numbered as its actions ran

        def rename(author: Author) -> Author:
            return author if mine and at >= start else in_program(
                author, at, start, client.example_starts, client.example_records)

        if record.get(TAKEN):  # the spares taken before it: by actions numbered so too
            takes = [(sid, rename(Author(Part.ACTION, n))) for sid, n in record[TAKEN]]
            record = {**record, TAKEN: [[sid, a.n] for sid, a in takes if a.numbered]}
        author = author_of(record)
        if author is None or not author.numbered:
            return record
        renamed = rename(author)
        return record if renamed == author else {**record, "by": renamed.to_json()}

    def finish(self) -> None:
        """Drain the example's sessions and judge what is still open (liveness)."""
        try:
            with writing_as(Part.TEARDOWN):
                self._finish()
        except OracleError as exc:
            self.recorder.internal_error = exc
            raise BudgetExhausted from exc

    def _finish(self) -> None:
        self.recorder.examples += 1
        client = self.client
        client.schedule.act(len(self.actions), teardown=True)
        sids = self._rest()
        if client.alive:
            done = [client.sessions[i] for i in self._sessions()]
            with client.lock:  # quiet ones may serve a later example; the rest are let go
                kept = {h.sid for h in done if not client.oracle.busy(h.sid)
                        and not client.oracle.open_permissions(h.sid)
                        and client.factory.recycle(h)}
            if client.close_sessions and client.handshake.closes:
                close_sessions(client, [sid for sid in dict.fromkeys(sids) if sid not in kept])
        known = len(self.recorder.transitions), len(self.recorder.exercised)
        with client.lock:
            counts = client.oracle.transition_counts()
            self.recorder.sample_coverage(
                (k for k, n in client.oracle.exercised().items() if n), counts)
        self.new_transitions = len(self.recorder.transitions) - known[0]
        self.new_rules = len(self.recorder.exercised) - known[1]
        if client.coverage is not None:
            self.new_agent_lines = client.coverage.snapshot()
            client.coverage.sample(self.recorder.elapsed(), self.recorder.examples)
            self.recorder.agent_lines += self.new_agent_lines
        before = self.transitions_before
        self.distinct_transitions = sum(n > before.get(k, 0) for k, n in counts.items())
        if self.recorder.on_progress is not None:
            self.recorder.on_progress(self.recorder)
        self.check()
