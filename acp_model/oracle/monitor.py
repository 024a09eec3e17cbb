"""The oracle: feed it the wire messages of one connection, get the rules they break.

``Monitor.feed`` takes trace records in the order the client sent / received them. It runs the
JSON-RPC checks (:mod:`acp_model.oracle.rpc`), validates each message against the schema for its
method and direction (:mod:`acp_model.oracle.validate`), runs the single-message checks
(:mod:`acp_model.model.messages`), keeps the client's view of every session through the reducers
(:mod:`acp_model.model.reducers`), classifies the message into an event
(:mod:`acp_model.oracle.wire`) and fires it on the connection machine or on the session's
machine. ``Monitor.finish`` judges the obligations still open at the end (liveness).

The monitor decides no rule itself: every violation it records comes from a check's metadata
(``_report`` takes a :class:`~acp_model.model.check.CheckMeta`, never a bare rule ID). What it
owns is routing, the violation store (bounded: a flooding agent must not exhaust memory), and a
small query API for clients that act on what the model says (the fuzzer): ``state``, ``busy``,
``open_permissions``, ``pending_prompts``, ``required_answers``, ``client_may``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from acp_model.model import check as checks
from acp_model.model import messages, permissions, reducers, replay
from acp_model.model.check import CheckMeta, allows_of, declare, meta_of
from acp_model.model.closing import Closes
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.context import Context
from acp_model.model.engine import Failure, LibraryEngine, TableEngine, compile_machine
from acp_model.model.events import Ev, content_key, text_key
from acp_model.model.evidence import note_repeat
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.messages import Findings
from acp_model.model.obligations import PERMISSION_ANSWERED, PROMPT_ANSWERED, WITHDRAWN_ANSWERED
from acp_model.model.session import SessionModel
from acp_model.model.vocab import ConnEvent, ErrorCode, Event, Level, Role
from acp_model.oracle import rpc, wire
from acp_model.oracle import validate as validation
from acp_model.oracle.fit import RevisionFit, shape_path
from acp_model.oracle.liveness import REQUEST_ANSWERED, LivenessMixin
from acp_model.oracle.queries import QueriesMixin
from acp_model.oracle.rpc import OTHER, OpenRequest, Rpc
from acp_model.oracle.turns_v1 import TURN_KINDS, V1Turns
from acp_model.oracle.violation import Violation, ViolationKind
from acp_model.spec import revisions, schema
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.rules import RULES
from acp_model.trace.format import Record, parse_record

__all__ = ["MAX_REPORTS_PER_CHECK", "Monitor", "OpenRequest", "Violation"]

SESSION_TABLE = compile_machine(SessionLifecycle, SessionModel)
CONNECTION_TABLE = compile_machine(ConnectionLifecycle, ConnectionModel)

MAX_REPORTS_PER_CHECK = 200  # per (rule, check): a flooding agent must not exhaust memory
MAX_DIAGNOSES_PER_DEF = 2000  # a diagnosis costs ~0.1 ms; past this, a flood is only counted
RETIRE_AT = 16  # permission requests a session keeps in its scans before settled ones retire

_BASELINE_SESSION_METHODS = frozenset({"session/new", "session/prompt"})


# the obligation an answer to a request discharges (the rest: ACPM-ANSWER's)
ANSWER_OBLIGATION = {"session/prompt": PROMPT_ANSWERED,
                     "session/request_permission": PERMISSION_ANSWERED}
_OTHER_REVISION = meta_of(messages.variants_of_another_revision)  # counted in the fit
CLOSE_CANCELS = declare("SESS-10", "close_is_cancel", "session/close is routed to the session "
                        "machine as a session/cancel: the CANCEL rules judge what follows.",
                        module=__name__, role=Role.ROUTE)


def problem_shape(problems: list[validation.SchemaProblem]) -> str:
    """The fields a message fails at, as one shape (item indices left out)."""
    return ", ".join(sorted({shape_path(p.path) for p in problems}))


def _unknown_session(conn_event: Callable[[ConnEvent, Ev, str], Any], rpc: Rpc, idx: int,
                     sid: Any, what: str) -> None:
    """The agent named a session no response has named: SESS-12, unless a session/new is
    still unanswered. The agent may announce the new session before its response names it
    (an update or a request first: no text orders the two), so the default accepts it. So is
    a session the client named itself in a request still open or answered with a result (a
    probe's invented id): the agent took it for a session, and no text makes it answer an
    unknown session with an error ("MAY return an error", session-setup.mdx)."""
    if not rpc.named_by_client(sid) and not any(
            r.method == "session/new" for r in rpc.open["c2a"].values()):
        conn_event(ConnEvent.AGENT_NAMES_UNKNOWN_SESSION, Ev(idx), f"{what} names session {sid!r}")


class Monitor(LivenessMixin, QueriesMixin):
    """Per-connection oracle (several sessions)."""

    def __init__(self, readings: Readings = DEFAULT, *, validate: bool = True,
                 engine: str = "table", decision: revisions.Decision | None = None) -> None:
        self.readings = readings
        self.rev = readings.revision
        self.decision = decision or revisions.Decision(  # which judges, and why (reports say)
            self.rev, self.rev, f"spec revision {self.rev} chosen")
        self.validate = validate
        self.protocol = revisions.get(self.rev).protocol
        self.turns: V1Turns | None = V1Turns() if self.protocol == 1 else None  # v1's events
        self.loaded: dict[str, int] = {}  # session -> its load response (no prompt since)
        self.reopened_busy: dict[str, int] = {}  # session -> a reopen sent while it worked
        engine_cls = {"table": TableEngine, "statemachine": LibraryEngine}[engine]
        self.session_engine = engine_cls(SESSION_TABLE, readings)
        self.connection_engine = engine_cls(CONNECTION_TABLE, readings)
        self.ctx = Context(readings=readings, keep_proofs=True)
        self.conn = ConnectionModel(ctx=self.ctx)
        self.sessions: dict[str, SessionModel] = {}
        self.views: dict[str, reducers.SessionView] = {}
        self._retire_at: dict[str, int] = {}  # session -> len(perms) retiring settled ones
        self.rpc = Rpc()
        self.closes = Closes(judges=RULES["SDK-CLOSE-03"].applies(self.rev))  # sdk-2.4.0's order
        self.prompt_caps: dict[str, Any] | None = None
        self.fit = RevisionFit(self.rev)  # shapes of another revision (the report header)
        self.agent_capabilities: Any = None  # the initialize result's (ENUM-12 reads _meta)
        self.violations: list[Violation] = []
        self.extra_exercised: dict[str, int] = {}
        self.count = 0
        self.finished = False
        self._sub: int | None = None
        self.probes: set[int] = set()  # indices of deliberate client-rule breaches (fuzzing)
        self.probe_hits: list[Violation] = []
        self._judged_sessions: set[str] = set()
        self._reported: dict[tuple[str, str | None], int] = {}
        self.suppressed = 0
        self._diagnosed: dict[str, int] = {}

    # ------------------------------------------------------------------ feeding -----------
    def feed(self, record: Record | dict[str, Any]) -> list[Violation]:
        """Check one trace record; returns the violations it caused."""
        if isinstance(record, dict):
            record = parse_record(record)
        before = len(self.violations)
        idx = self.count
        self.count += 1
        self._sub = None
        if record.probe:
            self.probes.add(idx)
        direction = record.dir
        if record.raw is not None:
            self.rpc.unreadable[direction] += 1
            self._run(rpc.utf8, idx, record)
            self._run(rpc.only_messages, idx, record)
            return self.violations[before:]
        msg = record.msg
        if isinstance(msg, list):
            for allowed in allows_of(rpc.batch_not_empty):
                self._bump(allowed)
            if not msg:
                self._run(rpc.no_empty_batch_reply, idx, self.rpc, direction, msg)
                if self._run(rpc.batch_not_empty, idx, self.rpc, direction, msg):
                    self.rpc.unreadable[direction] += 1
            if direction == "c2a":
                self.rpc.client_batch(msg)
            for n, element in enumerate(msg):
                self._sub = n
                self._run(rpc.lifecycle_not_batched, idx, element)
                self._message(direction, element, idx)
            if direction == "c2a":
                self.rpc.mark_batched(direction)
        else:
            self._message(direction, msg, idx)
        return self.violations[before:]

    def finish(self, deadline: float | None = None) -> list[Violation]:
        """Judge obligations still open at the end of the trace (liveness)."""
        if self.finished:
            return []
        self.finished = True
        return self.judge_open(None, 0, deadline)

    def note(self, meta: CheckMeta, message: str, *, session: str | None = None,
             kind: ViolationKind = "safety", deadline: float | None = None,
             level: Level | None = None) -> None:
        """Record a verdict made outside the wire (the fuzzer owns the process: crashes)."""
        self._sub = None
        self._report(meta, max(self.count - 1, 0), message, session=session, kind=kind,
                     deadline=deadline, level=level)

    # ------------------------------------------------------------------ internals ---------
    def _bump(self, rule_id: str, n: int = 1) -> None:
        self.extra_exercised[rule_id] = self.extra_exercised.get(rule_id, 0) + n

    def _run(self, fn: Callable[..., str | None], idx: int, *args: Any,
             session: str | None = None, related: list[int] | None = None) -> bool:
        """Run one finding check; report what it found. True when it found something."""
        meta = meta_of(fn)
        text = fn(*args)
        if text is None:  # _bump inlined: this runs about five times per message
            counts = self.extra_exercised
            counts[meta.rule] = counts.get(meta.rule, 0) + 1
            return False
        self._report(meta, idx, text, session=session, related=related)
        return True

    def _report(self, meta: CheckMeta, idx: int, message: str, *, session: str | None = None,
                level: Level | None = None, kind: ViolationKind = "safety",
                related: list[int] | None = None, deadline: float | None = None,
                evidence: list[tuple[int, str]] | None = None) -> None:
        rule_id = meta.rule_for(self.readings)
        self._bump(rule_id)
        lv = level or meta.level(self.readings)
        if lv == Level.OFF or checks.is_disabled(meta, rule_id):
            return
        strength = RULES[rule_id].strength_under(self.readings)
        key = (rule_id, meta.name)
        seen = self._reported.get(key, 0)
        self._reported[key] = seen + 1
        if seen >= MAX_REPORTS_PER_CHECK:
            self.suppressed += 1  # a flood of the same finding: counted, not stored
            return
        view = self.views.get(session) if session is not None else None
        found = Violation(rule_id, Level(lv), strength, idx, message, kind, session, meta.name,
                          self._sub, related or [], deadline, evidence or [],
                          reducers.view_summary(view) if view is not None else None)
        if idx in self.probes and RULES[rule_id].party != "agent" and kind != "liveness":
            self.probe_hits.append(found)  # about a deliberate negative input, not a client bug
            return
        self.violations.append(found)

    def _liveness(self, meta: CheckMeta, idx: int, session: str | None, deadline: float | None,
                  what: str) -> None:
        suffix = f" within the {deadline:g} s deadline" if deadline is not None else \
            " before the end of the trace"
        self._report(meta, idx, what + suffix, session=session, kind="liveness", deadline=deadline)

    def _failures(self, failures: list[Failure], idx: int, session: str | None,
                  what: str, evidence: dict[str, Any]) -> None:
        for chk, lv in failures:
            meta = chk.meta
            detail, items = "", []
            if meta.evidence is not None:
                proof = evidence.get(meta.name)
                if proof is not None:
                    detail, items = proof
                elif lv == Level.FAIL:
                    # A failure states its proof; without one it is not a failure.
                    lv, detail = Level.WARN, ("no response proves what the agent had read: "
                                              "reported as a warning")
            text = f"{what} breaks {meta.rule_for(self.readings)}. Expected: {meta.doc}" + (
                f" ({detail})" if detail else "")
            self._report(meta, idx, text, session=session, level=lv, evidence=items)

    def _conn_event(self, event: ConnEvent, ev: Ev, what: str) -> None:
        failures = self.connection_engine.fire(self.conn, event, ev)
        if failures:
            self._failures(failures, ev.idx, None, what, self.connection_engine.evidence)

    def _session_event(self, sid: str, event: Event, ev: Ev, what: str) -> None:
        sess = self.sessions[sid]
        failures = self.session_engine.fire(sess, event, ev)
        if failures and ev.idx != self.closes.gone:  # SDK-CLOSE-03's message: one failure
            self._failures(failures, ev.idx, sid, what, self.session_engine.evidence)
        if len(sess.perms) >= self._retire_at.get(sid, RETIRE_AT):
            # amortised: a scan each time the live requests double, so a long session's
            # scans stay proportional to its open requests, not to every request it ever had
            sess.retire()
            self._retire_at[sid] = max(RETIRE_AT, 2 * len(sess.perms))

    def _schema(self, def_name: str | None, instance: Any, idx: int, what: str,
                method: str) -> None:
        if def_name is None or not self.validate:
            return
        counts = self.extra_exercised
        for meta in validation.schema_rules_exercised(method, def_name, instance, self.rev):
            counts[meta.rule] = counts.get(meta.rule, 0) + 1
        if self._diagnosed.get(def_name, 0) >= MAX_DIAGNOSES_PER_DEF:
            # A flood of invalid messages of one definition: the rule each breaks is only
            # known from a diagnosis, and reporting it under another (ACPM-SCHEMA) would make
            # one cause two failures. The first thousands were reported; the rest are counted.
            if not validation.fast_validator(def_name, self.rev)(instance):
                self.suppressed += 1
            return
        problems = validation.validate(def_name, instance, self.rev)
        if problems:
            self._diagnosed[def_name] = self._diagnosed.get(def_name, 0) + 1
            follows = validation.accepted_by(def_name, instance, self.rev)
            if follows:
                # a shape of another revision: reported once per shape, counted after that
                shape = f"{def_name} at {problem_shape(problems)}"
                if not self.fit.note(shape, follows, idx):
                    return
                problems = [dataclasses.replace(
                    p, message=f"{p.message} [the shape of {' and '.join(follows)}: "
                               "later messages of this shape are counted in the revision fit, "
                               "not reported again]") for p in problems]
        for problem in problems:
            verb = "does not match" if problem.tolerated is None else \
                "has a part the deserializer tolerates in"
            self._report(validation.problem_rule(method, problem, self.rev), idx,
                         f"{what} {verb} the schema ({problem.def_name}) at "
                         f"{problem.path}: {problem.message}")

    def _findings(self, findings: Findings, idx: int, what: str,
                  session: str | None = None) -> None:
        counts = self.extra_exercised
        for meta in findings.ran:
            counts[meta.rule] = counts.get(meta.rule, 0) + 1
        for meta, path, text in findings.found:
            if meta == _OTHER_REVISION and not self.fit.note(
                    text.split(" is not a", 1)[0],
                    tuple(r for r in revisions.NAMES if r in text and r != self.rev), idx):
                continue  # a value of another revision: once per value, counted after that
            self._report(meta, idx, f"{what}: {text} (at {path})", session=session)

    def _message(self, direction: str, msg: Any, idx: int) -> None:
        if self._run(rpc.is_object, idx, direction, msg):
            self.rpc.unreadable[direction] += 1
            return
        self.closes.message(self._run, direction, msg, idx)
        if self._run(rpc.version_field, idx, direction, msg):
            self.rpc.unreadable[direction] += 1
        if self._run(rpc.method_is_string, idx, direction, msg):
            self.rpc.unreadable[direction] += 1
            return
        method = msg.get("method")
        if method is not None:
            if "id" in msg:
                self._request(direction, method, msg, idx)
            else:
                self._notification(direction, method, msg, idx)
        elif "result" in msg or "error" in msg:
            self._response(direction, msg, idx)
        else:
            self._run(rpc.has_a_shape, idx, direction, msg)
            self.rpc.unreadable[direction] += 1

    def _method_spec(self, direction: str, method: str, idx: int, *, request: bool
                     ) -> schema.MethodSpec | None:
        spec = schema.method_table(self.rev).get(method)
        if self._run(rpc.method_defined, idx, direction, method, spec) or spec is None:
            return None
        if self._run(rpc.method_direction, idx, direction, method, spec):
            return None
        if request and self._run(rpc.notification_without_id, idx, spec, method):
            return None
        return spec

    # --- requests ---------------------------------------------------------------------------
    def _request(self, direction: str, method: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg["id"]
        if self._run(rpc.request_id_valid, idx, direction, method, req_id, self.rev):
            self.rpc.unreadable[direction] += 1
            return
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, dict) else None
        sid = sid if isinstance(sid, str) else None
        self._run(rpc.request_id_fresh, idx, self.rpc, direction, req_id)
        spec = self._method_spec(direction, method, idx, request=True)
        self.rpc.open[direction][req_id] = OpenRequest(
            method, idx, sid, replayed={} if direction == "c2a" and replay.asks_for_replay(
                method, params) else None,
            reopens=direction == "c2a" and method in replay.REOPENING and sid in self.sessions)
        if spec is None:
            return
        what = f"{method} request #{idx}"
        self._schema(spec.params_def, params, idx, what, method)
        if direction == "c2a":
            self._client_request(method, req_id, params, sid, idx, what)
        elif method == "session/request_permission":
            self._findings(messages.permission_request(params, self.rev), idx, what, sid)
            if sid is None or sid not in self.sessions:
                _unknown_session(self._conn_event, self.rpc, idx, sid, what)
                return
            ev = wire.permission_request(idx, req_id, params)
            self.views[sid] = reducers.apply_permission_subject(self.views[sid], params)
            if self.turns is not None:
                self._derived(sid, self.turns.start(sid, idx, what))
            self._session_event(sid, Event.PERMISSION_REQUEST, ev, what)

    def _client_request(self, method: str, req_id: Any, params: Any, sid: str | None, idx: int,
                        what: str) -> None:
        if method == "initialize":
            self._conn_event(ConnEvent.INITIALIZE, Ev(idx), what)
        elif method == "session/new":
            self._findings(messages.new_session_request(params, self.rev), idx, what)
            self._conn_event(ConnEvent.SESSION_REQUESTED, Ev(idx), what)
        elif method == "session/close" and sid in self.sessions:
            self._close(sid, idx, what)
        elif method == "session/prompt":
            self._findings(messages.prompt_request(params, self.prompt_caps, self.rev), idx,
                           what, sid)
            if sid is None or sid not in self.sessions:
                self._conn_event(ConnEvent.UNKNOWN_SESSION_NAMED, Ev(idx),
                                 f"{what} names session {sid!r}")
                return
            blocks = params.get("prompt") if isinstance(params, dict) else None
            self._session_event(sid, Event.PROMPT,
                                Ev(idx, id=req_id, content_key=content_key(blocks),
                                   text_key=text_key(blocks)), what)
            if self.turns is not None:
                self.turns.prompt(sid, req_id, idx, blocks)
            self.loaded.pop(sid, None)
        elif method in replay.REOPENING and sid in self.sessions:
            self.loaded.pop(sid, None)  # a new load: its replay comes before its own answer
            replay.reopen_sent(self.sessions[sid], sid, idx, self.busy(sid), self.reopened_busy)
        elif method in replay.REOPENING and sid is not None:
            # a session of an earlier connection: known from its request on (replay included)
            self.sessions[sid] = SessionModel(sid, self.ctx)
            self.views[sid] = reducers.SessionView()

    def _close(self, sid: str, idx: int, what: str) -> None:
        self._bump(CLOSE_CANCELS.rule)
        self.closes.requested(sid, idx, self.pending_prompts(sid))
        self._cancel(sid, idx, what)

    def _cancel(self, sid: str, idx: int, what: str) -> None:
        if self.turns is not None:
            self.turns.cancel(sid)
        self._session_event(sid, Event.CANCEL, Ev(idx), what)
        replay.cancel_after_reopen(self.sessions.get(sid), self.reopened_busy.get(sid))

    def _derived(self, sid: str, events: list[tuple[Event, Ev, str]]) -> None:
        """Fire the model's events a v1 message stands for (``turns_v1``)."""
        for event, ev, what in events:
            self._session_event(sid, event, ev, what)

    # --- notifications -------------------------------------------------------------------
    def _notification(self, direction: str, method: str, msg: dict[str, Any], idx: int) -> None:
        params = msg.get("params")
        spec = self._method_spec(direction, method, idx, request=False)
        if direction == "c2a":
            self.rpc.notifications.append((method, idx))
        if spec is None:
            return
        what = f"{method} #{idx}"
        self._schema(spec.params_def, params, idx, what, method)
        if not isinstance(params, dict):
            return
        sid = params.get("sessionId")
        if method == "session/update":
            self._update(sid, params, idx)
        elif method == "session/cancel":
            if sid not in self.sessions:
                self._conn_event(ConnEvent.UNKNOWN_SESSION_NAMED, Ev(idx),
                                 f"{what} names session {sid!r}")
                return
            self._cancel(sid, idx, what)
        elif method == "$/cancel_request":
            # The sender withdraws one of its *own* open requests.
            target = self.rpc.open[direction].get(params.get("requestId"))
            if target is None:
                return  # nothing open with that id: harmless (it may have been answered)
            target.withdrawn = True
            if self.turns is not None and direction == "c2a" and target.session is not None:
                self.turns.withdraw(target.session, params.get("requestId"))
            if target.session in self.sessions:
                event = (Event.PROMPT_CANCEL_REQUEST if direction == "c2a"
                         else Event.PERMISSION_WITHDRAWN)
                self._session_event(target.session, event, Ev(idx, id=params["requestId"]), what)

    def _update(self, sid: Any, params: dict[str, Any], idx: int) -> None:
        update = params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        what = f"session/update {kind} #{idx}"
        self._findings(messages.session_update(params, self.rev), idx, what,
                       sid if isinstance(sid, str) else None)
        if not isinstance(sid, str) or sid not in self.sessions:
            _unknown_session(self._conn_event, self.rpc, idx, sid, what)
            return
        if not isinstance(update, dict):
            return
        for open_req in self.rpc.open["c2a"].values() if kind == "state_update" else ():
            if open_req.method == "session/resume" and open_req.session == sid:
                open_req.state_reported = True
        sent = update  # as the agent sent it (v1's tool_call is read as an upsert below)
        replaying = replay.replaying(self.rpc.open["c2a"].values(), sid)
        reused = replaying is not None and self._run(
            replay.replayed_ids_unique, idx, replaying.replayed, update, session=sid)
        history = replay.replayed_history(self.rpc.open["c2a"].values(), sid, kind, self.busy(sid))
        if self.turns is not None:
            resume = replay.resume_awaited(self.rpc.open["c2a"].values(), sid, self.busy(sid))
            self._run(replay.resume_replays_nothing, idx, kind, resume, session=sid)
            self._run(replay.load_replays_before_answering, idx, kind,  # (busy: the turn's)
                      None if self.busy(sid) else self.loaded.get(sid), session=sid)
            if kind == "tool_call":  # v1's first report of a tool call: an upsert like v2's
                update = {**update, "sessionUpdate": "tool_call_update"}
            if kind in TURN_KINDS and not history:
                self._derived(sid, self.turns.start(sid, idx, what))
        before = self.views[sid]
        event, ev, what = wire.session_update(idx, update, before, protocol=self.protocol)
        self.views[sid] = reducers.reduce_session(before, update)
        self._findings(reducers.judge(before, sent, self.rev, family=not reused), idx, what,
                       sid)
        if not history:  # replayed history: the client's view takes it in, the machine not
            self._session_event(sid, event, ev, what)

    # --- responses -----------------------------------------------------------------------
    def _response(self, direction: str, msg: dict[str, Any], idx: int) -> None:  # noqa: C901, PLR0915
        req_id = msg.get("id")
        if self._run(rpc.response_id_valid, idx, direction, req_id):
            return
        requester = OTHER[direction]
        has_error = "error" in msg
        self._run(rpc.result_xor_error, idx, direction, msg)
        req = self.rpc.open[requester].pop(req_id, None)
        if req is None:
            self._unmatched(direction, msg, idx)
            return
        self.rpc.close(requester, req_id, req, accepted="result" in msg, at=idx)
        self._bump(ANSWER_OBLIGATION.get(req.method, REQUEST_ANSWERED).rule)
        if req.withdrawn:
            self._bump(WITHDRAWN_ANSWERED.rule)
        what = f"response #{idx} to {req.method} #{req.idx}"
        self._run(rpc.custom_request_unrecognised, idx, direction, req.method, has_error,
                  self.agent_capabilities)
        if direction == "a2c":
            self.ctx.answered(req.idx, idx)  # FIFO stdio: it read everything before req.idx
            self._run(replay.resume_reports_state, idx, req.method, has_error,
                      req.state_reported, session=req.session)
            self.closes.response(self._run, req, req_id, msg.get("error"), idx, self.sessions)
        spec = schema.method_table(self.rev).get(req.method)
        if has_error:
            self._schema("Error", msg["error"], idx, what, req.method)
        elif spec is not None:
            self._schema(spec.result_def, msg["result"], idx, what, req.method)
        result = msg.get("result")
        error = msg.get("error") if isinstance(msg.get("error"), dict) else None
        code = error.get("code") if error else None
        method = req.method
        if direction == "a2c" and has_error and method in _BASELINE_SESSION_METHODS \
                and code == ErrorCode.METHOD_NOT_FOUND:
            self._conn_event(ConnEvent.SESSION_METHOD_MISSING, Ev(idx, error_code=code),
                             f"{what}: -32601")
        if method == "initialize":
            self._initialized(result, has_error, idx, what)
        elif method == "session/new":
            if has_error:
                return
            new_sid = result.get("sessionId") if isinstance(result, dict) else None
            self._conn_event(ConnEvent.SESSION_CREATED, Ev(idx, id=new_sid), what)
            if isinstance(new_sid, str) and new_sid not in self.sessions:
                self.sessions[new_sid] = SessionModel(new_sid, self.ctx)
                self.views[new_sid] = reducers.SessionView()
        elif method == "session/load" and not has_error and req.session in self.sessions:
            self.loaded[req.session] = idx
        elif method == "session/prompt" and req.session in self.sessions \
                and self.turns is not None:
            self._derived(req.session, self.turns.response(req.session, req_id, idx, result,
                                                           code if has_error else None, what))
        elif method == "session/prompt" and req.session in self.sessions:
            if has_error:
                self._session_event(req.session, Event.PROMPT_REJECTED,
                                    Ev(idx, id=req_id, error_code=code), what)
            else:
                keys = tuple(result) if isinstance(result, dict) else None
                receipt = result.get("messageId") if isinstance(result, dict) else None
                self._session_event(req.session, Event.PROMPT_ACCEPTED,
                                    Ev(idx, id=req_id, result_keys=keys,
                                       message_id=receipt if isinstance(receipt, str) else None),
                                    what)
        elif method == "session/request_permission" and req.session in self.sessions:
            if not has_error:
                self._findings(messages.permission_result(result, self.rev), idx, what, req.session)
            sess = self.sessions[req.session]
            perm = sess.perm(req_id)
            answer = permissions.classify(perm.options if perm is not None else None, result,
                                          has_error)
            self._session_event(req.session, Event.PERMISSION_ANSWER,
                                Ev(idx, id=req_id, answer=answer, error_code=code), what)

    def _unmatched(self, direction: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg.get("id")
        requester = OTHER[direction]
        if req_id in self.rpc.answered[requester]:
            for fn in (rpc.prompt_answered_once, rpc.permission_answered_once, rpc.answered_once):
                self._run(fn, idx, self.rpc, direction, req_id)
            if self.rpc.answered[requester][req_id] == "session/request_permission":
                note_repeat(self.sessions.values(), req_id, msg, idx)  # PERM-11's proof
            return
        if req_id is None:
            last = rpc.answered_notification(self.rpc, msg)
            self._run(rpc.cancel_not_answered, idx, self.rpc, direction, msg,
                      related=[last[1]] if last is not None else None)
            self._run(rpc.notifications_unanswered, idx, self.rpc, direction, msg)
            if self._run(rpc.batch_answered_per_request, idx, self.rpc, direction, msg):
                self.rpc.rejected_batch(direction)
            rpc.settle_null_answer(self.rpc, direction, msg)
            return
        self._run(rpc.answers_open_request, idx, self.rpc, direction, req_id)

    def _initialized(self, result: Any, has_error: bool, idx: int, what: str) -> None:
        if has_error or not isinstance(result, dict):
            self._conn_event(ConnEvent.INITIALIZE_FAILED, Ev(idx), what)
            return
        version = result.get("protocolVersion")
        if self.decision.negotiated is None or version != self.decision.negotiated:
            # (an agent speaking another version than it named: its one failure is below)
            self._findings(messages.initialize_result(result, self.rev), idx, what)
        caps = result.get(messages.capabilities_key(self.rev)) or {}
        self.agent_capabilities = caps
        # v1: the baseline methods are every agent's (INIT-10); v2: those advertising session
        self.ctx.session_advertised = self.protocol == 1 or (
            isinstance(caps, dict) and isinstance(caps.get("session"), dict))
        self.prompt_caps = messages.prompt_capabilities(result, self.rev)
        spoken_instead = self._run(messages.speaks_negotiated_version, idx, version,
                                   self.protocol, self.decision.negotiated, self.decision.evidence)
        event = ConnEvent.INITIALIZED if version == self.protocol or spoken_instead \
            else ConnEvent.INITIALIZED_OTHER_VERSION
        self._conn_event(event, Ev(idx, version=version), what)

