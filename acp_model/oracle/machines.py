"""The models of one connection: the connection machine, one session machine per session, the
client's view of each session, and what a session/close leaves behind.

Routing fires events here; a transition a check refuses is reported through the violation
store with its proof. The read-only questions the fuzzer's client asks before it acts
(``state``, ``busy``, ``client_may`` ...) are answered from these models.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from acp_model.model import closing, reducers
from acp_model.model.check import meta_of
from acp_model.model.closing import Closes
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.context import Context
from acp_model.model.engine import LibraryEngine, TableEngine, compile_machine
from acp_model.model.events import Payload
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.model.vocab import ConnEvent, Event, Level
from acp_model.oracle.rpc import Rpc
from acp_model.oracle.store import ViolationStore
from acp_model.spec.readings import Readings
from acp_model.spec.rules import RULES

SESSION_TABLE = compile_machine(SessionLifecycle, SessionModel)
CONNECTION_TABLE = compile_machine(ConnectionLifecycle, ConnectionModel)
ENGINES = {"table": TableEngine, "statemachine": LibraryEngine}

RETIRE_AT = 16  # permission requests a session keeps in its scans before settled ones retire
_CLOSE_ORDER = meta_of(closing.nothing_after_close)  # sdk-2.4.0's order around session/close
_ID_FRESH = meta_of(ConnectionModel.session_id_fresh)  # SESS-01: a session id handed out again


class Machines:
    """The connection's and sessions' models, and the engines that fire their events.

    ``views`` (the client's view of each session) is shared with the violation store, which
    reads it; sessions and views are made together here (``open``).
    """

    def __init__(self, readings: Readings, rpc: Rpc, store: ViolationStore,
                 views: dict[str, reducers.SessionView], *, engine: str = "table") -> None:
        self.session_engine = ENGINES[engine](SESSION_TABLE, readings)
        self.connection_engine = ENGINES[engine](CONNECTION_TABLE, readings)
        self.ctx = Context(readings=readings, keep_proofs=True)
        self.conn = ConnectionModel(ctx=self.ctx)
        self.sessions: dict[str, SessionModel] = {}
        self.views = views
        self.closes = Closes(judges=RULES[_CLOSE_ORDER.rule].applies(readings.revision))
        self.rpc = rpc  # read: a session's prompts still unanswered make it busy
        self.store = store
        self._retire_at: dict[str, int] = {}  # session -> len(perms) retiring settled ones

    def open(self, sid: str) -> None:
        """A session the connection knows from now on (created, or reopened from an earlier
        connection)."""
        self.sessions[sid] = SessionModel(sid, self.ctx)
        self.views[sid] = reducers.SessionView()

    def conn_event(self, event: ConnEvent, ev: Payload, what: str) -> None:
        failures = self.connection_engine.fire(self.conn, event, ev)
        if failures:
            before = len(self.store.violations)
            self.store.failures_of(failures, ev.idx, None, what, self.connection_engine.evidence)
            if isinstance(ev.id, str) and any(v.check == _ID_FRESH.name and v.level == Level.FAIL
                                              for v in self.store.violations[before:]):
                self.store.reissued.setdefault(ev.id, ev.idx)  # SESS-01: the root from here

    def session_event(self, sid: str, event: Event, ev: Payload, what: str) -> None:
        sess = self.sessions[sid]
        failures = self.session_engine.fire(sess, event, ev)
        if failures and ev.idx != self.closes.gone:  # SDK-CLOSE-03's message: one failure
            self.store.failures_of(failures, ev.idx, sid, what, self.session_engine.evidence)
        if len(sess.perm_book.perms) >= self._retire_at.get(sid, RETIRE_AT):
            # amortised: a scan each time the live requests double, so a long session's
            # scans stay proportional to its open requests, not to every request it ever had
            sess.retire()
            self._retire_at[sid] = max(RETIRE_AT, 2 * len(sess.perm_book.perms))

    def derived(self, sid: str, events: Iterable[tuple[Event, Payload, str]]) -> None:
        """Fire the steps the translator derived from a message (``dialects``)."""
        for event, ev, what in events:
            self.session_event(sid, event, ev, what)

    # ------------------------------------------------------------------ questions ---------
    def state(self, sid: str) -> str | None:
        sess = self.sessions.get(sid)
        return sess.state if sess is not None else None

    def busy(self, sid: str) -> bool:
        """Foreground work, or prompts whose work has not ended with an idle yet."""
        sess = self.sessions.get(sid)
        if sess is None:
            return False
        return sess.facts.busy() or bool(self.rpc.pending_prompts(sid))

    def permission_options(self, sid: str, req_id: Any) -> Mapping[str, Any]:
        sess = self.sessions.get(sid)
        perm = sess.perm_book.perm(req_id) if sess is not None else None
        return perm.options if perm is not None else {}

    def required_answers(self, sid: str, req_id: Any) -> frozenset[tuple[str, int | None]] | None:
        """The answers the client may still give to a permission request (None: any)."""
        sess = self.sessions.get(sid)
        return sess.facts.required_answers(req_id) if sess is not None else None

    def client_may(self, sid: str, event: str, ev: Payload) -> bool:
        """Would the model let the client send this now?"""
        sess = self.sessions.get(sid)
        if sess is None:
            return False
        ok, _ = self.session_engine.allowed(sess, event, ev)
        return ok

    def work_began(self, sid: str) -> int:
        """Trace index where the session's current (or last) foreground work began (-1:
        none yet)."""
        sess = self.sessions.get(sid)
        return sess.work.began if sess is not None else -1

    def cancel_may_miss(self, sid: str) -> bool:
        """The session's last cancel was sent after the client reopened the session while its
        work ran (``replay.cancel_after_reopen``): it may not reach that work."""
        sess = self.sessions.get(sid)
        cancels = sess.cancel_book.cancels if sess is not None else []
        return bool(cancels) and cancels[-1].reopened >= 0

    def exercised(self) -> dict[str, int]:
        """How often the machines' checks ran, per rule."""
        out: dict[str, int] = {}
        for eng in (self.session_engine, self.connection_engine):
            for k, v in eng.exercised.items():
                out[k] = out.get(k, 0) + v
        return out

    def transition_counts(self) -> dict[str, int]:
        """How often each session-machine transition fired, keyed ``state:event``."""
        return {f"{state}:{event}": n
                for (state, event), n in sorted(self.session_engine.transitions.items())}
