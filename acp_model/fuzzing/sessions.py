"""Creating sessions for the fuzzer, ahead of need when the agent is slow to create them.

A real agent spends about a second in ``session/new`` (claude-agent-acp starts a Claude Code
process per session), and an example opens one to three: without help, a run spends nearly all
its time waiting for sessions. With ``ahead > 0`` a worker thread keeps that many fresh,
configured sessions ready, so an example takes one at once while the next is being made. A
spare session is an ordinary session the agent created (its ``session/new`` and configuration
are in the transcript like any other, stamped as a spare's: ``trace/authors.py``); examples
only take sessions nobody used.

Replays keep making spares, as the run did: the schedule a replay is held to was recorded with
the factory's writes in it (events no action issued, which the hold matches as they come), and
a spare's ``session/new`` in flight while a prompt runs is part of some races (mistral-vibe's
CANCEL-07 in the kept run, ``docs/matrix-run``: the agent answered a spare's ``session/new``
between the cancel and the end of the turn). A replay's fresh process makes its first spare
as soon as it is initialized (``fuzzing/replay.py``): a warm one while it waits for its
replay, so a slow agent's first ``session/new`` is not the trial's time. An action waits for
the spare being made as long as its making may take, never a fixed few seconds: one that gave
up wrote a ``session/new`` of its own where its recording had none.

A counterexample says what each spare is instead, and which action took it: taking a spare
writes nothing, so the take is put on the next record of the transcript (``"taken"``,
``trace/format.py``).
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from acp_model.fuzzing.authorship import current, writing_as
from acp_model.fuzzing.ops import SessionHandle
from acp_model.fuzzing.stop import Interrupted
from acp_model.fuzzing.transport import AgentExited, RpcError, is_response_to
from acp_model.model.check import declare
from acp_model.model.vocab import Role
from acp_model.trace.authors import Part
from acp_model.trace.format import TAKEN

if TYPE_CHECKING:
    from acp_model.fuzzing.ops import CallOps, Connection
    from acp_model.fuzzing.transcript import Transcript

# What the fuzzer judges itself: a session/new still in flight when an example ends is not the
# example's to judge, so the factory that waits for it judges it, by the start-up deadline.
SESSION_NEW_ANSWERED = declare(
    "ACPM-ANSWER", "session_new_answered", "The agent answers session/new within the "
    "start-up deadline.", module=__name__, role=Role.PROCESS)


def first_of(sessions: Sequence[SessionHandle], sid: str) -> int | None:
    """Where the connection's session ``sid`` first appears among its handles (a session an
    example took over appears again later, under the same id)."""
    return next((i for i, h in enumerate(sessions) if h.sid == sid), None)


def count_session_writes(writes: Counter[str], msg: Any) -> None:
    """Count an agent message (or batch) in ``writes`` under each session it names: a session
    the agent keeps writing for is not stuck."""
    for one in msg if isinstance(msg, list) else [msg]:
        params = one.get("params") if isinstance(one, dict) else None
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(sid, str):
            writes[sid] += 1


class Takes:
    """The spares the client's actions took since the transcript's last record: put on the
    next record as it is appended (``"taken"``), as the model window puts ``model_asked``."""

    def __init__(self, log: Transcript) -> None:
        self._log = log
        self._pending: list[tuple[str, int]] = []
        log.stamps.append(self.stamp)

    def took(self, sid: str, action: int) -> None:
        with self._log.cond:
            self._pending.append((sid, action))

    def stamp(self, record: dict[str, Any]) -> None:
        """(the transcript's lock held)"""
        if self._pending:
            record[TAKEN] = [list(t) for t in self._pending]
            self._pending.clear()


class SessionFactory:
    """``session/new`` plus the profile's configuration requests, now or ahead of need."""

    def __init__(self, client: Connection, ahead: int = 0, reuse: int = 0) -> None:
        self.client = client
        self.ahead = ahead
        self.reuse = reuse  # quiet sessions kept for later examples, at most
        self.spares: list[SessionHandle] = []
        self.recycled: list[SessionHandle] = []
        self.making = 0  # sessions being made by the worker
        self.inflight: set[Any] = set()  # session/new requests still awaited
        self._cond = threading.Condition()
        self._stopped = False
        self._worker: threading.Thread | None = None
        # Once a session/new went unanswered for the whole start-up deadline (judged), the
        # process has shown it does not answer them: later ones wait the normal deadline, or a
        # replay on a hung agent waits half a minute per session it asks for.
        self.unanswered = False
        self._takes: Takes | None = None  # made with the first spare an action takes

    def create(self) -> SessionHandle | None:
        """A new configured session (None: the agent gave none, which is judged)."""
        c = self.client
        start = c.calls.mark()  # not the shared cursor: the worker and an example both create
        claimed: list[int] = []

        def claim(rid: int) -> None:
            # ``inflight`` before it is written and until the monitor has its answer: an
            # example that ends meanwhile leaves it to this wait and its judge below
            with self._cond:
                self.inflight.add(rid)
            claimed.append(rid)

        try:
            rid = c.calls.request("session/new", {"cwd": c.cwd, "mcpServers": []}, claim=claim)
            record = c.calls.wait_for(lambda m: is_response_to(m, rid), start=start,
                                     timeout=(c.deadline if self.unanswered
                                              else c.startup_deadline))
            if record is not None:
                c.wait_delivered(c.deadline)
        finally:
            with self._cond:
                self.inflight.difference_update(claimed)
        if record is None and (self._stopped or not c.calls.alive):
            return None  # the client is closing (or the agent died: judged as a crash)
        if record is None:
            self.unanswered = True
            with c.lock:
                c.oracle.judge_waited(
                    rid, SESSION_NEW_ANSWERED, f"the agent never answered session/new (id "
                    f"{rid}) within the {c.startup_deadline:g} s start-up deadline",
                    c.startup_deadline)
            return None
        msg = record.get("msg") if isinstance(record, dict) else None
        result = msg.get("result") if isinstance(msg, dict) else None
        sid = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(sid, str):
            return None
        for method, params in c.session_config:
            # the configuration a real agent needs (its mode, say): judged as sent
            with contextlib.suppress(RpcError, TimeoutError):
                c.calls.call(method, {"sessionId": sid, **params}, timeout=c.deadline)
        return SessionHandle(sid)

    def recycle(self, handle: SessionHandle) -> bool:
        """Keep a quiet session for a later example (False: the pool is full)."""
        if len(self.recycled) >= self.reuse:
            return False
        self.recycled.append(SessionHandle(handle.sid, reused=True))
        return True

    def take(self) -> SessionHandle | None:
        """A session for an example: a quiet one a former example left (with ``reuse``), a
        spare if one is ready (or about to be), else a new one."""
        if self.recycled:
            handle = self.recycled.pop(0)
            with self.client.lock:
                self.client.oracle.reopen(handle.sid)
            return handle
        if self.ahead <= 0:
            return self.create()
        self.start()
        with self._cond:
            # the spare being made is awaited until it is ready or its making ended: never
            # a fixed few seconds (kilo's first session/new took 5.8 s, s13: an action that
            # gave up at 5 s wrote a session/new of its own where its recording's spare had
            # been, and its held replay diverged); the timeout only bounds a worker gone wrong
            self._cond.wait_for(lambda: self.spares or not self.making or self._stopped,
                                timeout=self.making_bound())
            handle = self.spares.pop(0) if self.spares else None
            self._cond.notify_all()  # the worker makes the next one
        if handle is not None:
            self._taken(handle)
        return handle if handle is not None else self.create()

    def making_bound(self) -> float:
        """The longest the making of one session may take: its session/new's deadline (the
        start-up one, until one went unanswered) and each configuration request's."""
        c = self.client
        first = c.deadline if self.unanswered else c.startup_deadline
        return first + c.deadline * len(c.session_config)

    def _taken(self, handle: SessionHandle) -> None:
        """An action took the spare ``handle``: the transcript says which (its next record)."""
        author = current()
        if author is None or not author.numbered or author.n is None:
            return
        if self._takes is None:
            self._takes = Takes(self.client.calls.log)
        self._takes.took(handle.sid, author.n)

    def start(self) -> None:
        """Make spares from now on (once: later calls do nothing); without ``ahead``, none."""
        with self._cond:
            if self._worker is not None or self.ahead <= 0:
                return
            # the worker's first session is counted before the thread runs: a take right
            # after the start waits for it (it used to find nothing being made and make its
            # own, so a replay's action wrote the session/new its recording's spare had, and
            # the held schedule waited out the spare's answer: mistral-vibe's CANCEL-07, s12)
            self.making += 1
            self._worker = threading.Thread(target=self._run, name="session-factory",
                                            daemon=True)
        self._worker.start()

    def _run(self) -> None:
        with writing_as(Part.SPARE):  # what the worker writes is a spare's, made ahead
            self._make_spares()

    def _make_spares(self) -> None:
        def wanted() -> bool:
            return self._stopped or len(self.spares) + self.making < self.ahead

        counted = True  # ``start`` counted the first session in ``making``
        while True:
            with self._cond:
                if not counted:
                    self._cond.wait_for(wanted)
                    self.making += 1
                counted = False
                if self._stopped:
                    self.making -= 1
                    self._cond.notify_all()
                    return
            handle = None
            try:
                handle = self.create()
            except (AgentExited, Interrupted, OSError):
                self._stopped = True
            finally:
                with self._cond:
                    self.making -= 1
                    if handle is not None:
                        self.spares.append(handle)
                    self._cond.notify_all()
            if handle is None and not self._stopped:
                self._stopped = True  # the agent gives no sessions: stop asking
                return

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()


def close_sessions(client: CallOps, sids: list[str]) -> None:
    """``session/close`` each session (a real agent frees what a session holds: a process, a
    model connection); errors and silence are the agent's to be judged, not waited out."""
    for sid in sids:
        with contextlib.suppress(RpcError, TimeoutError, AgentExited):
            client.calls.call("session/close", {"sessionId": sid}, timeout=client.deadline)
