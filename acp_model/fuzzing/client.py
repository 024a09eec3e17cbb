"""A conforming ACP client that drives one agent process and feeds the oracle as it goes.

Every message in both directions reaches the :class:`~acp_model.oracle.monitor.Monitor` through the
transport's record listener, in transcript order. The client obeys the Client rules itself and
asks the model, not a copy of the rules, whenever a choice depends on them: e.g. whether a
permission answer other than ``cancelled`` is still allowed after a cancel (CANCEL-04).

Client actions are the typed vocabulary of :mod:`acp_model.fuzzing.actions`; this class holds
the connection they act on and the steps several of them share (cancel, answer, sync, settle).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp_model import __version__
from acp_model.fuzzing.actions import Action, NewSession, from_json
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.ops import Mistake, SessionHandle, sync_message
from acp_model.fuzzing.program import session_at
from acp_model.fuzzing.reach import cancel_meets
from acp_model.fuzzing.sessions import SessionFactory
from acp_model.fuzzing.stalls import Stalls
from acp_model.fuzzing.stop import Stop
from acp_model.fuzzing.transport import AgentExited, AgentProcess, Record, RpcError, is_response_to
from acp_model.llm.server import ScriptedModel
from acp_model.model import messages
from acp_model.model.check import declare
from acp_model.model.permissions import option_for
from acp_model.model.vocab import Answer, ErrorCode, Level, Role
from acp_model.oracle.monitor import Monitor, Violation
from acp_model.process import signal_group
from acp_model.report.reach import Reach
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.revisions import Decision
from acp_model.trace import dialect

CLIENT_INFO = {"name": "acp-model", "title": "acp-model fuzzer", "version": __version__}
SILENCE = 0.125  # of the deadline: a session the agent wrote nothing for this long is stalled
MAX_RECANCELS = 32  # new works one drain cancels, each with its own deadline: a queue of held
# prompts (one example sends at most `steps` of them) is cancelled one by one, not judged at once


def _process(rule_id: str, name: str, doc: str) -> Any:
    return declare(rule_id, name, doc, module=__name__, role=Role.PROCESS)


# What the fuzzer judges from the agent process itself (a recorded trace cannot show it).
STAYS_ALIVE = _process("ACPM-ALIVE", "agent_stays_alive", "The agent process keeps running and "
                       "keeps stdout open until the client closes stdin.")
OUTPUT_BOUNDED = _process("ACPM-OUTPUT", "output_bounded", "The agent's output stays within "
                          "the transcript cap.")
INITIALIZE_ANSWERED = _process("ACPM-ANSWER", "initialize_answered", "The agent answers "
                               "initialize within the start-up deadline.")
VERSION_ECHOED = _process("INIT-04", "version_echoed", "An agent that implements protocol "
                          "version 2 answers a v2 client with version 2.")
CANCELLED = {"outcome": {"outcome": "cancelled"}}
CANCELLED_ERROR = {"code": ErrorCode.REQUEST_CANCELLED, "message": "Request cancelled"}


class OracleError(RuntimeError):
    """The oracle itself failed while judging a message (an internal error, exit 3)."""


class AgentUnusable(Exception):
    """The agent cannot be fuzzed (it cannot be started, or it refused to initialize)."""


class FuzzClient:
    """One connection: process, monitor, sessions, and the client's own obligations."""

    def __init__(self, argv: Sequence[str], *, readings: Readings = DEFAULT,
                 deadline: float = 5.0, validate: bool = True, cwd: str | None = None,
                 env: dict[str, str] | None = None, tick: float = 0.002,
                 startup_deadline: float = 30.0, stop: Stop | None = None,
                 decision: Decision | None = None, model: ScriptedModel | None = None,
                 session_config: Sequence[tuple[str, dict[str, Any]]] = (),
                 auth_method: str | None = None, sessions_ahead: int = 0,
                 close_sessions: bool = False, reuse_sessions: int = 0,
                 patience: float = 1.0) -> None:
        self.argv = list(argv)
        self.model = model  # the scripted model behind the agent, if any
        self.session_config = tuple(session_config)
        self.auth_method = auth_method
        self.close_sessions = close_sessions
        self.patience = patience
        self.factory = SessionFactory(self, sessions_ahead, reuse_sessions)
        self.stop = stop or Stop()
        self.deadline = deadline
        self.startup_deadline = max(startup_deadline, deadline)
        self.tick = tick
        self.monitor = Monitor(readings, validate=validate, decision=decision)
        self.lock = threading.RLock()
        self._changed = threading.Condition(self.lock)  # notified after each record is judged
        self.sessions: list[SessionHandle] = []
        self._prompt_caps: dict[str, Any] = {}
        self.reloads: frozenset[str] = frozenset()  # session/load, /resume: advertised
        self.crash_reported = False
        self.flooded = False
        # a request batch went unanswered (ACPM-BATCH): no more batch probes (same wait, again)
        self.batches_unanswered = False
        self._answered: set[Any] = set()  # permission requests this client already answered
        self._answered_in: dict[str, list[Any]] = {}  # sid -> those ids, in order
        self._session_writes: dict[str, int] = {}  # sid -> agent messages naming it
        self.history: list[Action] = []  # every action performed on this process, concrete
        self.reach: Counter[Reach] = Counter()  # how far it got (a pool shares the run's)
        self.last_turn: str | None = None  # the scripted turn the latest action started
        self.checked_violations = 0  # monitor.violations before this index are handled
        self.example_starts: list[int] = []  # where each example begins in ``history``
        self.example_records: list[int] = []  # ... and in the records
        self._ids = itertools.count(1_000_000)
        self.cwd = cwd or os.getcwd()
        try:
            self.proc = AgentProcess(self.argv, cwd=cwd, env=env, stop=self.stop.event)
        except (FileNotFoundError, PermissionError, NotADirectoryError, OSError) as exc:
            raise AgentUnusable(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from None
        self.proc.on_record(self._on_record)  # (a Ctrl-C before this returns: see _LIVE)

    @classmethod
    def from_config(cls, cfg: FuzzConfig, stop: Stop | None = None) -> FuzzClient:
        """The client every front-end uses (CLI, pytest plugin, campaigns, replays): one place
        that turns a configuration into a connection."""
        return cls(cfg.argv, readings=cfg.readings, deadline=cfg.deadline,
                   validate=cfg.validate, cwd=cfg.cwd, env=cfg.env,
                   startup_deadline=cfg.startup_deadline, stop=stop, decision=cfg.decision,
                   model=cfg.model, session_config=cfg.session_config,
                   auth_method=cfg.auth_method, sessions_ahead=cfg.sessions_ahead,
                   close_sessions=cfg.close_sessions, reuse_sessions=cfg.reuse_sessions,
                   patience=cfg.patience)

    # ------------------------------------------------------------------ wiring ------------
    def _on_record(self, record: Record) -> None:
        """Runs on the transport's delivery thread, in transcript order."""
        if self.proc.truncated:
            self._flooded()
            return
        msg = record.get("msg")
        with self.lock:
            self.monitor.feed(record)
            if record.get("dir") == "a2c":
                self._count_session_write(msg)
            self._changed.notify_all()
        if record.get("dir") == "a2c" and isinstance(msg, dict) and "method" in msg \
                and "id" in msg:
            self._agent_request(msg)

    def _count_session_write(self, msg: Any) -> None:
        for one in msg if isinstance(msg, list) else [msg]:
            params = one.get("params") if isinstance(one, dict) else None
            sid = params.get("sessionId") if isinstance(params, dict) else None
            if isinstance(sid, str):
                self._session_writes[sid] = self._session_writes.get(sid, 0) + 1

    def _flooded(self) -> None:
        """The transcript cap was hit: judge that once and cut the agent off."""
        if self.flooded:
            return
        self.flooded = True
        self.crash_reported = True  # the kill below is ours, not a crash
        with self.lock:
            self.monitor.note(OUTPUT_BOUNDED, f"the agent wrote more than "
                              f"{self.proc.max_transcript_bytes >> 20} MiB; the connection "
                              "was abandoned (the transcript keeps what came before)")
            self._changed.notify_all()
        signal_group(self.proc.pgid, signal.SIGKILL)  # never join threads from this thread

    def _agent_request(self, msg: dict[str, Any]) -> None:
        """Client duties towards agent requests that no fuzz action decides."""
        method = msg.get("method")
        if method != "session/request_permission":
            # The fuzzer advertises no client capability: anything else is not implemented.
            self._respond(msg["id"], error={"code": ErrorCode.METHOD_NOT_FOUND,
                                            "message": "Method not found"})
            return
        self.reach[Reach.PERMISSION_REQUESTS] += 1
        params = msg.get("params") or {}
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(sid, str):
            self._answer_as_required(sid, msg["id"])

    def _answer_as_required(self, sid: str, req_id: Any) -> bool:
        """Answer a permission request now if the model constrains the answer (a cancel is
        outstanding: CANCEL-04); True when it did."""
        with self.lock:
            required = self.monitor.required_answers(sid, req_id)
        if required is None:
            return False
        if (Answer.CANCELLED, None) in required:
            self._answer(sid, req_id, CANCELLED)
        else:
            self._answer(sid, req_id, error=CANCELLED_ERROR)
        return True

    def _respond(self, req_id: Any, result: Any = None, error: Any = None) -> None:
        with contextlib.suppress(AgentExited, TimeoutError):
            self.proc.respond(req_id, result=result, error=error)

    def _answer(self, sid: str, req_id: Any, result: Any = None, error: Any = None) -> None:
        """Answer a permission request exactly once (PERM-12), whichever thread gets there."""
        with self.lock:
            if req_id in self._answered:
                return
            self._answered.add(req_id)
            self._answered_in.setdefault(sid, []).append(req_id)
        self._respond(req_id, result, error)

    # ------------------------------------------------------------------ queries -----------
    def state(self, s: int) -> str | None:
        """The state the agent last reported for session ``s`` (pytest plugin tests read it)."""
        with self.lock:
            return self.monitor.state(self.sessions[s].sid)

    def open_permissions(self, s: int) -> list[Any]:
        """Ids of permission requests of session ``s`` still waiting for this client."""
        with self.lock:
            return [rid for rid in self.monitor.open_permissions(self.sessions[s].sid)
                    if rid not in self._answered]

    def pending_prompts(self, s: int) -> list[Any]:
        with self.lock:
            return self.monitor.pending_prompts(self.sessions[s].sid)

    def busy(self, s: int) -> bool:
        """Foreground work, or prompts whose work has not ended with an idle yet."""
        with self.lock:
            return self.monitor.busy(self.sessions[s].sid)

    @property
    def alive(self) -> bool:
        return self.proc.alive

    # ------------------------------------------------------------------ waiting -----------
    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds, waking on every new record (no polling)."""
        end = time.monotonic() + timeout
        with self._changed:
            while True:
                if predicate():
                    return True
                remaining = end - time.monotonic()
                if remaining <= 0 or not self.proc.alive:
                    return predicate()
                self.stop.check()
                # Re-check now and then: the process can die without sending a record.
                self._changed.wait(min(remaining, 0.1))

    def caught_up(self, timeout: float = 1.0) -> bool:
        """Wait until the monitor has judged every record the transport holds (``call`` and
        ``wait_for`` return once a record is in the transcript, before it is judged)."""
        done = self.proc.wait_delivered(self.proc.queued, timeout)
        self.check_oracle()
        return done

    def check_oracle(self) -> None:
        """An exception in the oracle (or in this client's replies) is a bug of ours: it ends
        the run as an internal error, never as a pass."""
        if self.proc.listener_errors:
            error = self.proc.listener_errors[0]
            raise OracleError(f"the oracle raised {type(error).__name__}: {error}") from error

    def settled(self, s: int) -> bool:
        """Quiet, or blocked on the client (nothing more happens until it answers) or on a
        stalled scripted model (nothing until a cancel)."""
        return (not self.busy(s) or bool(self.open_permissions(s))
                or (self.model is not None and self.model.stalling(self.sessions[s].sid)))

    # ------------------------------------------------------------------ set-up ------------
    def initialize(self) -> dict[str, Any]:
        protocol = revisions.get(self.monitor.rev).protocol  # the version the client offers
        params = dialect.initialize_params(protocol, CLIENT_INFO)
        try:
            result = self.proc.call("initialize", params, timeout=self.startup_deadline)
        except TimeoutError:
            with self.lock:
                self.monitor.note(INITIALIZE_ANSWERED, f"no answer to initialize within the "
                                  f"{self.startup_deadline:g} s start-up deadline",
                                  kind="liveness", deadline=self.startup_deadline)
            raise AgentUnusable("the agent did not answer initialize") from None
        except AgentExited:
            self.check_alive()
            raise AgentUnusable(f"the agent exited during initialize "
                                f"(code {self.proc.returncode})") from None
        except RpcError as exc:  # an error response
            raise AgentUnusable(f"initialize failed: {exc}") from None
        if not isinstance(result, dict) or result.get("protocolVersion") != protocol:
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            with self.lock:
                self.monitor.note(VERSION_ECHOED, f"the agent answered protocolVersion {version!r} "
                                  f"to a client requesting {protocol}: it lacks it or breaks "
                                  "INIT-04")
            raise AgentUnusable(f"the agent negotiated protocol version {version!r}, "
                                f"not {protocol}")
        self._prompt_caps = messages.prompt_capabilities(result, self.monitor.rev)
        self.reloads = messages.reload_methods(result, self.monitor.rev)
        self._log_in(result.get("authMethods"), protocol)
        self.caught_up()
        return result

    def _log_in(self, methods: Any, protocol: int) -> None:
        """Log in with the configured method when the agent lists it (v2 ``auth/login``, v1
        ``authenticate``; judged like every other request; an error answer leaves the agent
        as it is)."""
        listed = {m.get("methodId", m.get("id")) for m in methods if isinstance(m, dict)} \
            if isinstance(methods, list) else set()
        if self.auth_method is None or self.auth_method not in listed:
            return
        method = "authenticate" if protocol == 1 else "auth/login"
        with contextlib.suppress(RpcError, TimeoutError):
            self.proc.call(method, {"methodId": self.auth_method},
                           timeout=self.startup_deadline)

    def prompt_capabilities(self) -> dict[str, Any]:
        """What the agent's prompts may hold, as v2 markers (``messages.prompt_capabilities``)."""
        return self._prompt_caps

    # ------------------------------------------------------------------ actions -----------
    def perform(self, action: Action | Mapping[str, Any]) -> None:
        """Execute one client action (``fuzzing.actions``; a mapping is read as its JSON)."""
        action = from_json(action)
        self.stop.check()
        at = len(self.history)
        self.history.append(action)
        before = len(self.sessions)
        self.last_turn = None
        try:
            action.perform(self)
        except (AgentExited, TimeoutError):
            self.check_alive()
        finally:
            if self.last_turn is not None:
                self.history[at] = self.history[at].with_turn(self.last_turn)
        self.caught_up()  # the next action sees what the oracle made of everything so far
        if len(self.sessions) > before and isinstance(action, NewSession):
            self.history[at] = action.performed(self.sessions, before)

    def turn_started(self, tag: str) -> None:
        """A prompt of the action being performed started the scripted turn ``tag``."""
        self.last_turn = tag

    def resolved(self, actions: Sequence[Action]) -> list[Action]:
        """``actions`` with the tool calls the scripted model sent in their turns."""
        model = self.model
        return [a.resolved(model) for a in actions] if model is not None else list(actions)

    def window(self, seconds: float) -> float:
        """How long a short wait of the client lasts with this agent: ``seconds`` for a fast
        agent, longer for a slow one (``patience``), never past the deadline."""
        return min(self.deadline, seconds * self.patience)

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
        if then_prompt is None:
            self.proc.notify("session/cancel", cancel)
        else:
            sess.prompts.append(self.proc.notify_then_request(
                "session/cancel", cancel, "session/prompt", then_prompt))
        self.caught_up()  # the model has judged the cancel: it says what is owed now
        pending = self.open_permissions(idx)
        # A sync sent before the answers: an agent may end the work as soon as it reads them,
        # and only a response written before that proves the cancel was read in time.
        proof = self._send_sync() if sync or pending else None
        answered = [rid for rid in pending if self._answer_as_required(sess.sid, rid)]
        if proof is not None:
            self._await_sync(proof)
        if answered:
            # After an answer that follows the cancel, the agent's next move would only make a
            # deviation probable; a response to this makes it provable.
            self.sync()

    def answer_permission(self, idx: int, wanted: Answer, *, newest: bool = False,
                          late: bool = False, sync: bool = False) -> None:
        """Answer one open permission request of session ``idx`` with ``wanted``, or with
        what the model says the client rules still allow."""
        if late:  # a quiet session asks for nothing: waiting for a request would only idle
            self._wait(lambda: bool(self.open_permissions(idx)) or not self.busy(idx),
                       self.window(0.05))
        else:
            self._wait(lambda: bool(self.open_permissions(idx)) or self.settled(idx),
                       self.window(0.2))
        perms = self.open_permissions(idx)
        if not perms:
            return
        rid = perms[-1] if newest else perms[0]
        sid = self.sessions[idx].sid
        asked = wanted
        code = ErrorCode.REQUEST_CANCELLED if wanted == Answer.ERROR else None
        with self.lock:
            options = self.monitor.permission_options(sid, rid)
            required = self.monitor.required_answers(sid, rid)
            withdrawn = self.monitor.withdrawn(rid)
        if required is not None and (wanted, code) not in required:
            wanted = Answer.CANCELLED  # the model says only the cancelled outcome is allowed
        if withdrawn and wanted != Answer.CANCELLED:
            wanted = Answer.ERROR  # a withdrawn request: -32800, as cancellation.mdx shows
        if wanted == Answer.CUSTOM and revisions.get(self.monitor.rev).protocol == 1:
            wanted = Answer.REJECT  # v1's outcomes are a closed union: no custom ones
        option = option_for(options, wanted) if wanted in (Answer.ALLOW, Answer.REJECT) else None
        if wanted == Answer.ERROR:
            self._answer(sid, rid, error=CANCELLED_ERROR)
        elif option is not None:
            self._answer(sid, rid, {"outcome": {"outcome": "selected", "optionId": option}})
        elif wanted == Answer.CUSTOM:
            self._answer(sid, rid, {"outcome": {"outcome": "_acp_model_undecided"}})
        else:
            self._answer(sid, rid, CANCELLED)
        if sync or asked != Answer.ALLOW:
            # Makes what the agent does with a refusal provable (PERM-11): a sync costs one
            # round trip and turns "maybe it had not read the answer yet" into a verdict.
            self.sync()

    def sloppy_answer(self, idx: int, mistake: Mistake) -> None:
        """A permission answer a careful client would not send, sent on purpose and marked as
        a probe (the client's own rule breach is not judged; what the agent does next is):
        ``duplicate``, a second allow for the session's last answered request; ``withdrawn``,
        allow for a request the agent withdrew; ``after_cancel``, a cancel and then allow (not
        cancelled) for the requests it leaves pending; ``late``, the same once its work ended."""
        sid = self.sessions[idx].sid
        if mistake != Mistake.DUPLICATE:  # a request to answer wrongly, while the work goes on
            self.settle(idx, self.window(1.0))
        with self.lock:
            if mistake == Mistake.DUPLICATE:
                targets = self._answered_in.get(sid, [])[-1:]
            elif mistake == Mistake.WITHDRAWN:
                targets = [r for r in self.open_permissions(idx) if self.monitor.withdrawn(r)]
            else:
                targets = self.open_permissions(idx)
        if not targets:
            return
        if mistake in (Mistake.AFTER_CANCEL, Mistake.LATE):  # late: once the work has ended
            self.proc.notify("session/cancel", {"sessionId": sid})
            self._wait(lambda: not self.busy(idx), self.deadline if mistake == Mistake.LATE else 0)
        for rid in targets:
            with self.lock:
                option = option_for(self.monitor.permission_options(sid, rid), Answer.ALLOW)
                if option is None:
                    continue
                if rid not in self._answered:  # its one answer, however wrong
                    self._answered.add(rid)
                    self._answered_in.setdefault(sid, []).append(rid)
            self.proc.send({"jsonrpc": "2.0", "id": rid, "result": {
                "outcome": {"outcome": "selected", "optionId": option}}}, probe=True)
        self.sync()  # what the agent makes of it is provable from here on

    def settle(self, idx: int, limit: float) -> bool:
        """Wait up to ``limit`` seconds for session ``idx`` to settle, but only while the agent
        keeps writing for it: silence for an eighth of the deadline ends the wait (the agent
        is stuck, or thinking; the drain judges a stuck agent, and waiting on it in every
        action would only slow the search down)."""
        sid = self.sessions[idx].sid
        end = time.monotonic() + limit
        while (left := end - time.monotonic()) > 0:
            writes = self._session_writes.get(sid, 0)
            if self._wait(lambda: self.settled(idx), min(self.deadline * SILENCE, left)):
                return True
            if self._session_writes.get(sid, 0) == writes:
                return False
        return self.settled(idx)

    def sync(self) -> None:
        """A request the agent must answer: its response proves what the agent has read."""
        self._await_sync(self._send_sync())

    def next_id(self) -> int:
        """A fresh id for a request of the client's own (never one the agent could echo)."""
        return next(self._ids)

    def _send_sync(self) -> tuple[int, int]:
        rid = self.next_id()
        mark = self.proc.mark()  # the answer comes after the request: scan only from here
        self.proc.send(sync_message(rid))
        return rid, mark

    def _await_sync(self, sent: tuple[int, int]) -> None:  # (request id, transcript mark)
        self.proc.wait_for_index(lambda m: is_response_to(m, sent[0]), self.deadline,
                                 start=sent[1])

    # ------------------------------------------------------------------ end of example ----
    def drain(self, indices: Sequence[int]) -> int | None:
        """Bring the given sessions to rest: cancel work, answer permissions, wait for idle.
        Returns the index of its last look (None: none): what is owed after it had no deadline."""
        try:
            return self._drain(indices)
        except (AgentExited, TimeoutError):
            self.check_alive()
            return None

    def _drain(self, indices: Sequence[int]) -> int | None:  # noqa: C901
        cancelled_at: dict[int, int] = {}  # session -> transcript index of our last cancel
        for idx in indices:
            if self.busy(idx):
                cancelled_at[idx] = self._next_index()
                self.cancel(idx)
        if not self.proc.alive:
            return None
        self.sync()
        self.caught_up()  # what the agent wrote before the sync's answer is in the model

        def new_work(i: int) -> bool:
            # A prompt held behind the cancelled work may start its own work afterwards (A-10
            # leaves that open): new work gets its own cancel and deadline. So does work a
            # session quiet at the first look begins later (a rejected prompt's, say).
            if not self.busy(i) or self.open_permissions(i):
                return False
            if i not in cancelled_at:
                return True
            with self.lock:
                return self.monitor.work_began(self.sessions[i].sid) > cancelled_at[i]

        end = time.monotonic() + self.deadline
        recancels = 0
        stalls = Stalls(self, indices)
        while self.proc.alive:
            self._wait(lambda: all(not self.busy(i) or self.open_permissions(i) or new_work(i)
                                   for i in indices), max(0.0, end - time.monotonic()))
            asked = [(self.sessions[i].sid, rid) for i in indices
                     for rid in self.open_permissions(i)]
            for sid, rid in asked:  # asked for the cancelled work: as the model requires
                if not self._answer_as_required(sid, rid):
                    self._answer(sid, rid, CANCELLED)
            started = [i for i in indices if new_work(i)] if recancels < MAX_RECANCELS else []
            for i in started:
                recancels += 1
                cancelled_at[i] = self._next_index()
                self.cancel(i)
            if started:
                end = time.monotonic() + self.deadline
                continue
            if asked and time.monotonic() < end:
                continue
            if (fresh := stalls.fresh_deadline(end)) is not None:
                end = fresh  # the agent may have waited on our stalled model: not dead yet
                continue
            self.sync()  # updates the agent wrote before reading this belong to this example,
            self.caught_up()  # and work they report begun gets its cancel as well
            with self.lock:  # the look and its index, with nothing judged in between
                if recancels >= MAX_RECANCELS or not any(new_work(i) for i in indices):
                    return self.monitor.count
        return None

    def _next_index(self) -> int:
        """The transcript index the next record gets, once the monitor has judged all so far."""
        self.caught_up()
        with self.lock:
            return self.monitor.count

    def check_alive(self) -> None:
        """Report a crash or an early close of stdout once (ACPM-ALIVE)."""
        if self.proc.stdin_lost and not self.crash_reported:  # an exiting agent's stdin closes
            self.proc.wait_eof(self.deadline)  # before its stdout: not "alive, never answered"
        if self.proc.alive or self.crash_reported:
            return
        self.crash_reported = True
        # The crash is judged after all the agent wrote before it, the pipe's last lines too (an
        # agent that ended its turn and exited was judged as owing that turn's user message).
        self.proc.wait_eof(self.deadline)
        self.caught_up()
        # An agent that exits closes its stdout first: wait (up to a deadline) for the exit
        # status, or a clean exit would be judged as a crash (stdout closed while running).
        code = self.proc.returncode
        code = self.proc.wait_exit(self.deadline) if code is None else code
        tail = self.proc.stderr_text()[-400:].strip()
        what = (f"the agent exited with code {code}" if code is not None
                else "the agent closed its stdout")
        with self.lock:
            owed = self.monitor.owed()
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
            self.monitor.note(STAYS_ALIVE, what + detail + (f"; stderr ends with: {tail}"
                                                            if tail else ""),
                              level=None if known else Level.WARN)

    def violations_since(self, count: int) -> list[Violation]:
        self.caught_up()
        with self.lock:
            return self.monitor.violations[count:]

    def close(self) -> None:
        self.factory.stop()
        self.proc.close(grace=1.0)

