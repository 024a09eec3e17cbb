"""A conforming ACP client that drives one agent process and feeds the oracle as it goes.

Every message in both directions reaches the :class:`~acp_model.oracle.monitor.Monitor` through the
transport's record listener, in transcript order. The client obeys the Client rules itself and
asks the model, not a copy of the rules, whenever a choice depends on them: e.g. whether a
permission answer other than ``cancelled`` is still allowed after a cancel (CANCEL-04).

Client actions are the typed vocabulary of :mod:`acp_model.fuzzing.actions`; this class holds
the connection they act on and the steps several of them share (cancel, sync, settle). Its parts
own their state: the answers to the agent's requests (``fuzzing.answers``), the client's own
request ids (``ops.RequestIds``), the end of an example (``fuzzing.drain``) and the verdicts on
the process itself (:class:`ProcessWatch`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from acp_model.fuzzing.actions import Action, NewSession, from_json
from acp_model.fuzzing.answers import PermissionAnswers
from acp_model.fuzzing.authorship import writing_as
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.crossings import ScheduleLog
from acp_model.fuzzing.drain import Drain
from acp_model.fuzzing.editors import BARE
from acp_model.fuzzing.elicitations import HeldElicitations
from acp_model.fuzzing.handshake import AgentUnusable, Handshake
from acp_model.fuzzing.model_window import ModelWindow, ScriptedTurns
from acp_model.fuzzing.ops import RequestIds, SessionHandle
from acp_model.fuzzing.program import session_at
from acp_model.fuzzing.queries import OracleQueries
from acp_model.fuzzing.reach import cancel_meets
from acp_model.fuzzing.sessions import SessionFactory, count_session_writes
from acp_model.fuzzing.stalls import Stalls
from acp_model.fuzzing.stop import Stop
from acp_model.fuzzing.transport import AgentExited, AgentProcess, Record
from acp_model.model.check import declare
from acp_model.model.vocab import Level, Role
from acp_model.oracle.monitor import Monitor, Violation
from acp_model.oracle.monitor_queries import MonitorQueries
from acp_model.process import signal_group
from acp_model.report.reach import Reach
from acp_model.trace.authors import Part

SILENCE = 0.125  # of the deadline: a session the agent wrote nothing for this long is stalled
TICK = 0.002  # seconds: the moment a tick wait lasts


def _process(rule_id: str, name: str, doc: str) -> Any:
    return declare(rule_id, name, doc, module=__name__, role=Role.PROCESS)


# What the fuzzer judges from the agent process itself (a recorded trace cannot show it).
STAYS_ALIVE = _process("ACPM-ALIVE", "agent_stays_alive", "The agent process keeps running and "
                       "keeps stdout open until the client closes stdin.")
OUTPUT_BOUNDED = _process("ACPM-OUTPUT", "output_bounded", "The agent's output stays within "
                          "the transcript cap.")


class OracleError(RuntimeError):
    """The oracle itself failed while judging a message (an internal error, exit 3)."""



class FuzzClient:
    """One connection: process, monitor, sessions, and the client's own obligations."""

    def __init__(self, cfg: FuzzConfig, stop: Stop | None = None) -> None:
        """The client every front-end uses (CLI, pytest plugin, campaigns, replays): a
        configuration becomes a connection; ``stop`` ends its waits."""
        deadline = cfg.deadline
        self.argv = list(cfg.argv)
        # the editor this client plays (``fuzzing/editors.py``): its capabilities and habits
        self.profile = cfg.client or BARE
        self.model = cfg.model  # the scripted model behind the agent, if any
        self.coverage = cfg.collector  # the agent's own coverage (``--coverage``), if measured
        self.session_config = tuple(cfg.session_config)
        self.auth_method = cfg.auth_method
        self.close_sessions = cfg.close_sessions
        self.patience = cfg.patience
        self.factory = SessionFactory(self, cfg.sessions_ahead, cfg.reuse_sessions)
        self.stop = stop or Stop()
        self.deadline = deadline
        self.startup_deadline = max(cfg.startup_deadline, deadline)
        self.tick = TICK
        self.monitor = Monitor(cfg.readings, validate=cfg.validate, decision=cfg.decision)
        # what the fuzzer asks the monitor: the client and its parts touch it only to feed it
        self.oracle: OracleQueries = MonitorQueries(self.monitor)
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  # notified after each record is judged
        self.sessions: list[SessionHandle] = []
        self.watch = ProcessWatch(self)
        # a request batch went unanswered (ACPM-BATCH): no more batch probes (same wait, again)
        self.batches_unanswered = False
        self.answers = PermissionAnswers(replies=self, look=self, waits=self)
        self.elicitations = HeldElicitations(self)  # those a drawn action holds open
        self._session_writes: Counter[str] = Counter()  # sid -> agent messages naming it
        self.history: list[Action] = []  # every action performed on this process, concrete
        self.reach: Counter[Reach] = Counter()  # how far it got (a pool shares the run's)
        self.checked_violations = 0  # monitor.violations before this index are handled
        self.example_starts: list[int] = []  # where each example begins in ``history``
        self.example_records: list[int] = []  # ... and in the records
        self.cwd = cfg.workspace or cfg.cwd or os.getcwd()  # the sessions' project folder
        self.handshake = Handshake(self.profile, self.cwd, Counter(), cfg.readings.revision)
        try:
            self.proc = AgentProcess(self.argv, cwd=cfg.cwd, env=cfg.env, stop=self.stop.event)
        except (FileNotFoundError, PermissionError, NotADirectoryError, OSError) as exc:
            raise AgentUnusable(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        self.calls = self.proc.calls  # what actions and the client's parts talk through
        self.ids = RequestIds(self.calls, deadline)
        self.schedule = ScheduleLog.of(self.proc, self.stop.event)  # ``fuzzing.schedule``
        # the scripted turns actions start, with their listeners (the schedule; the model's
        # side of each cancel, ``fuzzing/model_window.py``)
        self.turns = ScriptedTurns(self.model, self.schedule, ModelWindow.of(self.proc.log))
        self.proc.on_record(self._on_record)  # (a Ctrl-C before this returns: see _LIVE)

    def rebind(self, stop: Stop) -> None:  # answer to ``stop`` (a warm process, replayed)
        self.stop, self.proc.stop_requested, self.schedule.stop = stop, stop.event, stop.event

    # ------------------------------------------------------------------ wiring ------------
    def _on_record(self, record: Record) -> None:
        """Runs on the transport's delivery thread, in transcript order."""
        if self.proc.log.truncated:
            self.watch.flood()
            return
        msg = record.get("msg")
        with self.lock:
            self.monitor.feed(record)
            if record.get("dir") == "a2c":
                count_session_writes(self._session_writes, msg)
            self.changed.notify_all()
        services = self.handshake.services
        if record.get("dir") == "a2c" and isinstance(msg, dict) and "method" in msg \
                and "id" in msg and (services is None or not (
                    (services.handles(str(msg["method"])) and self.elicitations.take(msg))
                    or services.take(msg))):
            with writing_as(Part.REPLY):  # what the client's rules answer at once
                self.answers.agent_request(msg)  # (a method served: a worker answers it)

    # ------------------------------------------------------------------ queries -----------
    def state(self, s: int) -> str | None:
        """The state the agent last reported for session ``s`` (pytest plugin tests read it)."""
        with self.lock:
            return self.oracle.state(self.sessions[s].sid)

    def open_permissions(self, s: int) -> list[Any]:
        """Ids of permission requests of session ``s`` still waiting for this client."""
        with self.lock:
            return self.answers.waiting(self.oracle.open_permissions(self.sessions[s].sid))

    def pending_prompts(self, s: int) -> list[Any]:
        with self.lock:
            return self.oracle.pending_prompts(self.sessions[s].sid)

    def busy(self, s: int) -> bool:
        """Foreground work, or prompts whose work has not ended with an idle yet."""
        with self.lock:
            return self.oracle.busy(self.sessions[s].sid)

    @property
    def alive(self) -> bool:
        return self.proc.alive

    # ------------------------------------------------------------------ waiting -----------
    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds: a look of the schedule (``ScheduleLog.looked``)."""
        return self.schedule.looked(partial(self._wait_until, predicate), timeout, self.caught_up)

    def _wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds, waking on every new record (no polling)."""
        end = time.monotonic() + timeout
        with self.changed:
            while True:
                if predicate():
                    return True
                remaining = end - time.monotonic()
                if remaining <= 0 or not self.proc.alive:
                    return predicate()
                self.stop.check()
                # Re-check now and then: the process can die without sending a record.
                self.changed.wait(min(remaining, 0.1))

    def caught_up(self, timeout: float = 1.0) -> bool:
        """Wait until the monitor has judged every record the transport holds (``call`` and
        ``wait_for`` return once a record is in the transcript, before it is judged)."""
        done = self.wait_delivered(timeout)
        self.check_oracle()
        return done

    def wait_delivered(self, timeout: float) -> bool:
        """Wait until the monitor has been fed every record the transport holds (an error
        it raised is :meth:`check_oracle`'s)."""
        return self.proc.wait_delivered(timeout=timeout)

    def check_oracle(self) -> None:
        """An exception in the oracle (or in this client's replies) is a bug of ours: it ends
        the run as an internal error, never as a pass."""
        if self.proc.listener_errors:
            error = self.proc.listener_errors[0]
            raise OracleError(f"the oracle raised {type(error).__name__}: {error}") from error

    def settled(self, s: int) -> bool:
        """Quiet, or blocked on the client (nothing more happens until it answers), on a
        stalled scripted model or on a long command the agent reports running (nothing until
        it ends or a cancel). A long command the model gave the turn is not enough: until the
        agent reports it running it still writes (the tool call, its permission request), and a
        wait that ended then would let a cancel race those (issue 52's replays)."""
        sid = self.sessions[s].sid
        if not self.busy(s) or self.open_permissions(s) or self.elicitations.waiting(sid):
            return True
        if self.model is None:
            return False
        if self.model.stalling(sid):
            return True
        if not self.model.commanding(sid):
            return False
        with self.lock:
            return self.oracle.tool_in_progress(sid)

    # ------------------------------------------------------------------ set-up ------------
    def initialize(self) -> dict[str, Any]:
        try:
            result = self.handshake.run(self.proc, self.oracle, self.lock,
                                        self.startup_deadline, self.auth_method)
        except AgentExited:
            self.check_alive()
            raise AgentUnusable(f"the agent exited during initialize "
                                f"(code {self.proc.returncode})") from None
        self.caught_up()
        return result

    # ------------------------------------------------------------------ actions -----------
    def perform(self, action: Action | Mapping[str, Any]) -> None:
        """Execute one client action (``fuzzing.actions``; a mapping is read as its JSON)."""
        action = from_json(action)
        self.stop.check()
        self.wait_until(lambda: True, 0.0)  # a look: the action decides on the view it starts
        at = len(self.history)
        self.history.append(action)
        before = len(self.sessions)
        self.turns.last = None
        try:
            action.perform(self)
        except (AgentExited, TimeoutError):
            self.check_alive()
        finally:
            if self.turns.last is not None:
                self.history[at] = self.history[at].with_turn(self.turns.last)
        self.caught_up()  # the next action sees what the oracle made of everything so far
        if len(self.sessions) > before and isinstance(action, NewSession):
            self.history[at] = action.performed(self.sessions, before)

    def resolved(self, actions: Sequence[Action]) -> list[Action]:
        """``actions`` with the tool calls the scripted model sent in their turns."""
        model = self.model
        return [a.resolved(model) for a in actions] if model is not None else list(actions)

    def window(self, seconds: float) -> float:
        """How long a short wait of the client lasts with this agent: ``seconds`` for a fast
        agent, longer for a slow one (``patience``), never past the deadline."""
        return min(self.deadline, seconds * self.patience)

    def answering(self, timeout: float = 0.0) -> list[Any]:
        """The agent's requests this client's services took and have not yet answered, once
        none is left or ``timeout`` seconds have passed."""
        services = self.handshake.services
        return [] if services is None else services.answering(timeout)

    def session_index(self, s: int) -> int | None:
        """The client's session for a program's index ``s`` (None: no session yet)."""
        return session_at(s, len(self.sessions))

    def new_session(self) -> None:
        """A fresh session (``fuzzing.sessions``: made now, or ahead of need)."""
        handle = self.factory.take()
        if handle is not None:
            self.sessions.append(handle)

    def cancel(self, idx: int, sync: bool = False, *, then_prompt: dict[str, Any] | None = None
               ) -> None:
        """``session/cancel`` for session ``idx``, then the answers the client rules require
        (CANCEL-04) for its open permission requests. ``then_prompt``: the params of a
        session/prompt written together with the cancel (an editor's "interrupt and send")."""
        sess = self.sessions[idx]
        self.reach.update(cancel_meets(self, idx))
        cancel = {"sessionId": sess.sid}
        proof = None
        if then_prompt is not None:
            sess.prompts.append(self.calls.notify_then_request(
                "session/cancel", cancel, "session/prompt", then_prompt))
        elif sync or self.open_permissions(idx):
            # the sync the proof needs rides in the cancel's write: the agent reads the two
            # together, and no gap of the client's opens between them for the agent's
            # reaction to the cancel to outrun the sync's answer (a replay's timing differs)
            proof = self.ids.send_sync(after={"jsonrpc": "2.0", "method": "session/cancel",
                                              "params": cancel})
        else:
            self.calls.notify("session/cancel", cancel)
        self.caught_up()  # the model has judged the cancel: it says what is owed now
        self.wait_until(lambda: True, 0.0)  # a look: what to answer reads the view now
        pending = self.open_permissions(idx)
        # A sync sent before the answers: an agent may end the work as soon as it reads them,
        # and only a response written before that proves the cancel was read in time.
        if proof is None and pending:
            proof = self.ids.send_sync()
        answered = [rid for rid in pending if self.answers.as_required(sess.sid, rid)]
        if proof is not None:
            self.ids.await_sync(proof)
        if answered:
            # After an answer that follows the cancel, the agent's next move would only make a
            # deviation probable; a response to this makes it provable.
            self.sync()
        self.elicitations.after_cancel(idx)  # those held: answered once the work has ended

    def settle(self, idx: int, limit: float) -> bool:
        """Wait up to ``limit`` seconds for session ``idx`` to settle, but only while the agent
        keeps writing for it: silence for an eighth of the deadline ends the wait (the agent
        is stuck, or thinking; the drain judges a stuck agent, and waiting on it in every
        action would only slow the search down)."""
        sid = self.sessions[idx].sid
        end = time.monotonic() + limit
        while (left := end - time.monotonic()) > 0:
            writes = self._session_writes[sid]
            if self.wait_until(lambda: self.settled(idx), min(self.deadline * SILENCE, left)):
                return True
            if self._session_writes[sid] == writes:
                return False
        return self.settled(idx)

    def sync(self) -> None:
        """A request the agent must answer: its response proves what the agent has read."""
        self.ids.await_sync(self.ids.send_sync())

    def next_id(self) -> int:
        """A fresh id for a request of the client's own (never one the agent could echo)."""
        return self.ids.next()

    # ------------------------------------------------------------------ end of example ----
    def drain(self, indices: Sequence[int]) -> int | None:
        """Bring the given sessions to rest: cancel work, answer permissions, wait for idle
        (``fuzzing.drain``). Returns the index of its last look (None: none): what is owed
        after it had no deadline."""
        try:
            return Drain(indices, look=self, waits=self, ends=self,
                         stalls=Stalls(self, indices)).run()
        except (AgentExited, TimeoutError):
            self.check_alive()
            return None

    def check_alive(self) -> None:
        """Report a crash or an early close of stdout once (ACPM-ALIVE)."""
        self.watch.check_alive()

    def violations_since(self, count: int) -> list[Violation]:
        self.caught_up()
        with self.lock:
            return self.oracle.violations(count)

    def close(self) -> None:
        self.factory.stop()
        self.handshake.close()
        self.schedule.close()  # a replay's held reads and writes wait no more
        self.proc.close(grace=1.0)


class WatchOps(Protocol):
    """What the process watch uses of its client: the process, the judge it tells (the lock
    and the condition the client's waits wake on held) and the deadline of a dying agent."""

    proc: AgentProcess
    oracle: OracleQueries
    lock: threading.RLock
    changed: threading.Condition
    deadline: float

    def caught_up(self, timeout: float = 1.0) -> bool: ...


class ProcessWatch:
    """What the fuzzer judges from the agent process itself, once each: output past the
    transcript cap (ACPM-OUTPUT) and an exit, or a closed stdout, before the client closed
    stdin (ACPM-ALIVE)."""

    def __init__(self, client: WatchOps) -> None:
        self.client = client
        self.reported = False  # the process's end was judged, or caused by us
        self.flooded = False

    def flood(self) -> None:
        """The transcript cap was hit: judge that once and cut the agent off."""
        if self.flooded:
            return
        self.flooded = True
        self.reported = True  # the kill below is ours, not a crash
        c = self.client
        with c.lock:
            c.oracle.note(OUTPUT_BOUNDED, f"the agent wrote more than "
                          f"{c.proc.max_transcript_bytes >> 20} MiB; the connection was "
                          "abandoned (the transcript keeps what came before)")
            c.changed.notify_all()
        signal_group(c.proc.pgid, signal.SIGKILL)  # never join threads from this thread

    def check_alive(self) -> None:
        """Report a crash or an early close of stdout once (ACPM-ALIVE)."""
        c = self.client
        if c.proc.stdin.lost and not self.reported:  # an exiting agent's stdin closes
            c.proc.log.wait_eof(c.deadline)  # before its stdout: not "alive, never answered"
        if c.proc.alive or self.reported:
            return
        self.reported = True
        # The crash is judged after all the agent wrote before it, the pipe's last lines too (an
        # agent that ended its turn and exited was judged as owing that turn's user message).
        c.proc.log.wait_eof(c.deadline)
        c.caught_up()
        # An agent that exits closes its stdout first: wait (up to a deadline) for the exit
        # status, or a clean exit would be judged as a crash (stdout closed while running).
        code = c.proc.returncode
        code = c.proc.wait_exit(c.deadline) if code is None else code
        tail = c.proc.stderr_text()[-400:].strip()
        what = (f"the agent exited with code {code}" if code is not None
                else "the agent closed its stdout")
        with c.lock:
            owed = c.oracle.owed()
            # The text forbids leaving what is owed undelivered, not exiting as such; and what
            # an agent that ends cleanly (exit code 0) cannot be shown to have read may have
            # been sent as it exited. A crash (another code, a signal, stdout closed while it
            # runs) ends nothing deliberately: everything owed counts.
            clean = code == 0
            known = [text for text, provable in owed if provable or not clean]
            unread = [text for text, provable in owed if clean and not provable]
            if known:
                detail = f" while it still owed {'; '.join(known[:3])}"
            elif unread:
                detail = (f" with {'; '.join(unread[:3])} still owed, but not provably read "
                          "(a warning: the request may have been sent as it exited)")
            else:
                detail = " owing nothing (a warning: the client did not close stdin)"
            c.oracle.note(STAYS_ALIVE, what + detail + (f"; stderr ends with: {tail}"
                                                        if tail else ""),
                          level=None if known else Level.WARN)
