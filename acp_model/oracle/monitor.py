"""The oracle: feed it the wire messages of one connection, get the rules they break.

``Monitor.feed`` takes trace records in the order the client sent / received them. It checks the
JSON-RPC envelope, correlates responses with their requests, validates each message against the
schema for its method and direction, runs the stateless checks of ``schema.checks``, classifies
the message into an event and fires it on the connection machine or on the session's machine.
``Monitor.finish`` judges the obligations still open at the end (liveness).

Every rule is encoded once, in ``lifecycle``, ``connection`` or ``schema.checks``; this module
only routes messages and keeps the JSON-RPC bookkeeping (open requests, the read frontier).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from acp_model.model import messages as checks
from acp_model.model.connection import ConnectionLifecycle, ConnectionModel
from acp_model.model.engine import Failure, LibraryEngine, TableEngine, compile_machine
from acp_model.model.session import WORK, Context, Ev, SessionLifecycle, SessionModel
from acp_model.oracle import validate as validation
from acp_model.spec import schema
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.spec.rules import BLOCKING, RULES, RuleStat
from acp_model.trace.format import Record

SESSION_TABLE = compile_machine(SessionLifecycle, SessionModel)
CONNECTION_TABLE = compile_machine(ConnectionLifecycle, ConnectionModel)

# Obligations about a request's answer: the monitor judges all open requests itself.
_REQUEST_RULES = frozenset({"PROMPT-04", "PERM-12", "CANCEL-04", "CANCEL-14"})
MAX_REPORTS_PER_CHECK = 200  # per (rule, check): a flooding agent must not exhaust memory
MAX_DIAGNOSES_PER_DEF = 25

_STATE_EVENTS = {"running": "running_reported", "idle": "idle_reported",
                 "requires_action": "requires_action_reported"}
_USER_KINDS = frozenset({"user_message", "user_message_chunk"})
_TOOL_KINDS = {"tool_call_update": "update", "tool_call_content_chunk": "chunk"}
_LIFECYCLE_REQUESTS = frozenset({"initialize", "session/new", "session/prompt", "session/resume",
                                 "auth/login"})
_OTHER = {"c2a": "a2c", "a2c": "c2a"}
_PARTY = {"c2a": "client", "a2c": "agent"}


@dataclass(slots=True)
class Violation:
    """A broken rule: where, how bad, and what was expected instead."""

    rule: str
    level: str  # "fail" or "warn"
    strength: str
    index: int
    message: str
    kind: str = "safety"  # or "liveness"
    session: str | None = None
    check: str | None = None
    sub: int | None = None  # element of a batch
    related: list[int] = field(default_factory=list)
    deadline: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None and v != []}
        out["party"] = RULES[self.rule].party
        return out


@dataclass(slots=True)
class OpenRequest:
    method: str
    idx: int
    session: str | None
    withdrawn: bool = False
    judged: bool = False  # its liveness verdict is out; a late answer is not re-reported


class Monitor:
    """Per-connection oracle (several sessions)."""

    def __init__(self, readings: Readings = DEFAULT, *, validate: bool = True,
                 engine: str = "table") -> None:
        self.readings = readings
        self.validate = validate
        engine_cls = {"table": TableEngine, "statemachine": LibraryEngine}[engine]
        self.session_engine = engine_cls(SESSION_TABLE, readings)
        self.connection_engine = engine_cls(CONNECTION_TABLE, readings)
        self.ctx = Context(readings=readings)
        self.conn = ConnectionModel()
        self.sessions: dict[str, SessionModel] = {}
        self.open: dict[str, dict[Any, OpenRequest]] = {"c2a": {}, "a2c": {}}
        self.answered: dict[str, dict[Any, str]] = {"c2a": {}, "a2c": {}}
        self.prompt_caps: dict[str, Any] | None = None
        self.violations: list[Violation] = []
        self.extra_exercised: dict[str, int] = {}
        self.count = 0
        self.finished = False
        self._last_c2a_notification: tuple[str, int] | None = None
        self._index = 0
        self._sub: int | None = None
        self.probes: set[int] = set()  # indices of deliberate client-rule breaches (fuzzing)
        self.probe_hits: list[Violation] = []
        self._judged_sessions: set[str] = set()
        self._notification_batch_sent = False
        self._batch_sent = False
        # Unreadable input each side sent (garbage lines, invalid requests): each may earn a
        # -32700 / -32600 answer with id null.
        self._unreadable: dict[str, int] = {"c2a": 0, "a2c": 0}
        self._reported: dict[tuple[str, str | None], int] = {}
        self.suppressed = 0
        self._diagnosed: dict[str, int] = {}

    # ------------------------------------------------------------------ public API --------
    def feed(self, record: Record | dict[str, Any]) -> list[Violation]:
        """Check one trace record; returns the violations it caused."""
        if isinstance(record, dict):
            from acp_model.trace.format import parse_record

            record = parse_record(record)
        before = len(self.violations)
        self._index = idx = self.count
        self.count += 1
        self._sub = None
        if record.probe:
            self.probes.add(idx)
        direction = record.dir
        if record.raw is not None:
            self._unreadable[direction] += 1
            if record.note == "invalid-utf8":
                self._report("RPC-02", idx, f"{_PARTY[direction]} wrote bytes that are not UTF-8")
            else:
                self._report("RPC-04", idx, f"{_PARTY[direction]} wrote a line that is not a "
                             f"JSON-RPC message: {_clip(record.raw)!r}")
            return self.violations[before:]
        msg = record.msg
        if isinstance(msg, list):
            self._bump("RPC-06")
            if not msg and direction == "a2c" and self._notification_batch_sent:
                self._report("RPC-09", idx, "the agent answered a batch of notifications with "
                             "an empty array (such a batch gets no response at all)")
            elif not msg:
                self._unreadable[direction] += 1
                self._report("RPC-07", idx, "an empty batch array is not a valid message")
            if direction == "c2a":
                self._batch_sent = bool(msg)
                self._notification_batch_sent = bool(msg) and all(
                    isinstance(m, dict) and "method" in m and "id" not in m for m in msg)
            for n, element in enumerate(msg):
                self._sub = n
                if isinstance(element, dict) and element.get("method") in _LIFECYCLE_REQUESTS \
                        and "id" in element:
                    self._report("RPC-10", idx, f"{element['method']} was sent inside a batch")
                self._message(direction, element, idx)
        else:
            self._message(direction, msg, idx)
        return self.violations[before:]

    def feed_all(self, records: Iterable[Record | dict[str, Any]]) -> list[Violation]:
        for rec in records:
            self.feed(rec)
        return self.violations

    def finish(self, deadline: float | None = None) -> list[Violation]:
        """Judge obligations still open at the end of the trace (liveness)."""
        if self.finished:
            return []
        self.finished = True
        return self.judge_open(None, 0, deadline)

    def judge_open(self, sessions: Iterable[str] | None, since: int,
                   deadline: float | None = None) -> list[Violation]:
        """Liveness verdicts for what is still open.

        ``sessions=None`` judges every session and every request; otherwise only the named
        sessions and the requests sent at index ``since`` or later (one fuzz example's share).
        A session is judged once.
        """
        before = len(self.violations)
        self._sub = None
        chosen = set(self.sessions) if sessions is None else set(sessions)
        chosen -= self._judged_sessions
        self._judged_sessions |= chosen
        for req_id, req in self.open["c2a"].items():
            if req.judged or req.idx < since or (req.session is not None and sessions is not None
                                                 and req.session not in chosen):
                continue
            req.judged = True
            if req.method == "session/prompt":
                rule = "CANCEL-14" if req.withdrawn else "PROMPT-04"
                self._liveness(rule, req.idx, req.session, deadline,
                               f"session/prompt (id {req_id!r}) was never answered")
            else:
                self._liveness("CANCEL-14" if req.withdrawn else "ACPM-ANSWER", req.idx,
                               req.session, deadline,
                               f"the agent never answered {req.method} (id {req_id!r})")
        for req_id, req in self.open["a2c"].items():
            if req.judged or req.idx < since or (sessions is not None
                                                 and req.session not in chosen):
                continue
            req.judged = True
            sess = self.sessions.get(req.session or "")
            perm = sess.perms.get(req_id) if sess is not None else None
            if req.method != "session/request_permission":
                rule = "ACPM-ANSWER"
            elif req.withdrawn:
                rule = "CANCEL-14"
            elif perm is not None and perm.owed_cancel:
                rule = "CANCEL-04"
            else:
                rule = "PERM-12"
            self._liveness(rule, req.idx, req.session, deadline,
                           f"the client never answered {req.method} (id {req_id!r})")
        for sid in sorted(chosen):
            self._judge_session(sid, self.sessions[sid], deadline)
        return self.violations[before:]

    def _judge_session(self, sid: str, sess: SessionModel, deadline: float | None) -> None:
        for rule_id, idx, what in sess.obligations():
            if rule_id in _REQUEST_RULES:
                continue  # open requests are judged above, for every method alike
            self._liveness(rule_id, idx if idx >= 0 else self.count - 1, sid, deadline, what)

    def note(self, rule_id: str, message: str, *, session: str | None = None,
             kind: str = "safety", deadline: float | None = None) -> None:
        """Record a verdict made outside the wire (the fuzzer owns the process: crashes)."""
        self._sub = None
        self._report(rule_id, max(self.count - 1, 0), message, session=session, kind=kind,
                     deadline=deadline)

    def client_may(self, sid: str, event: str, ev: Ev | None = None) -> bool:
        """Would the model let the client send this now? (the fuzzer asks before acting)"""
        sess = self.sessions.get(sid)
        if sess is None:
            return False
        ok, _ = self.session_engine.allowed(sess, event, ev or Ev(self.count))
        return ok

    # ------------------------------------------------------------------ reporting ---------
    @property
    def failures(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "fail"]

    @property
    def warnings(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "warn"]

    def exercised(self) -> dict[str, int]:
        out: dict[str, int] = dict(self.extra_exercised)
        for eng in (self.session_engine, self.connection_engine):
            for k, v in eng.exercised.items():
                out[k] = out.get(k, 0) + v
        return out

    def transition_counts(self) -> dict[str, int]:
        """How often each session-machine transition fired, keyed ``state:event``."""
        return {f"{state}:{event}": n
                for (state, event), n in sorted(self.session_engine.transitions.items())}

    def rule_stats(self) -> dict[str, RuleStat]:
        stats = {rid: RuleStat() for rid in RULES}
        for rid, n in self.exercised().items():
            stats[rid].exercised += n
        for v in self.violations:
            st = stats[v.rule]
            st.exercised = max(st.exercised, 1)
            if v.level == "fail":
                st.violations += 1
            else:
                st.warnings += 1
            if len(st.examples) < 5:
                st.examples.append(v.index)
        return stats

    # ------------------------------------------------------------------ internals ---------
    def _bump(self, rule_id: str, n: int = 1) -> None:
        self.extra_exercised[rule_id] = self.extra_exercised.get(rule_id, 0) + n

    def _level(self, rule_id: str) -> str:
        strength = RULES[rule_id].effective_strength(self.readings["STRENGTH"])
        if strength in BLOCKING:
            return "fail"
        return "warn" if strength in ("SHOULD", "SHOULD NOT") else "off"

    def _report(self, rule_id: str, idx: int, message: str, *, session: str | None = None,
                level: str | None = None, check: str | None = None, kind: str = "safety",
                related: list[int] | None = None, deadline: float | None = None) -> None:
        self._bump(rule_id)
        lv = level or self._level(rule_id)
        if lv == "off":
            return
        strength = RULES[rule_id].effective_strength(self.readings["STRENGTH"])
        key = (rule_id, check)
        seen = self._reported.get(key, 0)
        self._reported[key] = seen + 1
        if seen >= MAX_REPORTS_PER_CHECK:
            self.suppressed += 1  # a flood of the same finding: counted, not stored
            return
        found = Violation(rule_id, lv, strength, idx, message, kind, session, check, self._sub,
                          related or [], deadline)
        if idx in self.probes and RULES[rule_id].party != "agent" and kind != "liveness":
            self.probe_hits.append(found)  # about a deliberate negative input, not a client bug
            return
        self.violations.append(found)

    def _liveness(self, rule_id: str, idx: int, session: str | None, deadline: float | None,
                  what: str) -> None:
        suffix = f" within the {deadline:g} s deadline" if deadline is not None else \
            " before the end of the trace"
        self._report(rule_id, idx, what + suffix, session=session, kind="liveness",
                     deadline=deadline)

    def _failures(self, failures: list[Failure], idx: int, session: str | None,
                  what: str, model: Any, ev: Ev) -> None:
        for chk, lv in failures:
            detail = _explain(chk.name, model, ev, self.ctx)
            text = f"{what} breaks {chk.rule}. Expected: {chk.doc}" + (
                f" ({detail})" if detail else "")
            self._report(chk.rule, idx, text, session=session, level=lv, check=chk.name)

    def _conn_event(self, event: str, ev: Ev, what: str) -> None:
        failures = self.connection_engine.fire(self.conn, event, ev)
        if failures:
            self._failures(failures, ev.idx, None, what, self.conn, ev)

    def _session_event(self, sid: str, event: str, ev: Ev, what: str) -> None:
        sess = self.sessions[sid]
        failures = self.session_engine.fire(sess, event, ev)
        if failures:
            self._failures(failures, ev.idx, sid, what, sess, ev)

    def _schema(self, def_name: str | None, instance: Any, idx: int, what: str,
                method: str) -> None:
        if def_name is None or not self.validate:
            return
        self._bump("ACPM-SCHEMA")
        if self._diagnosed.get(def_name, 0) >= MAX_DIAGNOSES_PER_DEF:
            # Precise diagnostics cost milliseconds; after a few, the verdict is enough.
            if not validation.fast_validator(def_name)(instance):
                self._report("ACPM-SCHEMA", idx, f"{what} does not match the schema "
                             f"({def_name}; further diagnostics suppressed)")
            return
        problems = validation.validate(def_name, instance)
        if problems:
            self._diagnosed[def_name] = self._diagnosed.get(def_name, 0) + 1
        for problem in problems:
            self._report(_schema_rule(method, problem.path), idx,
                         f"{what} does not match the schema ({problem.def_name}) at "
                         f"{problem.path}: {problem.message}")

    def _findings(self, findings: Iterable[checks.Finding], idx: int, what: str,
                  session: str | None = None, covers: tuple[str, ...] = ()) -> None:
        for rule_id in covers:
            self._bump(rule_id)
        for rule_id, path, text in findings:
            self._report(rule_id, idx, f"{what}: {text} (at {path})", session=session)

    def _message(self, direction: str, msg: Any, idx: int) -> None:
        party = _PARTY[direction]
        if not isinstance(msg, dict):
            self._unreadable[direction] += 1
            self._report("RPC-01", idx, f"{party} sent a {type(msg).__name__}, not a JSON-RPC "
                         "object")
            return
        self._bump("RPC-01")
        if msg.get("jsonrpc") != "2.0":
            self._unreadable[direction] += 1
            self._report("RPC-01", idx, f"{party} message lacks \"jsonrpc\": \"2.0\"")
        method = msg.get("method")
        if method is not None:
            if not isinstance(method, str):
                self._unreadable[direction] += 1
                self._report("RPC-01", idx, f"{party} message has a non-string method")
                return
            if "id" in msg:
                self._request(direction, method, msg, idx)
            else:
                self._notification(direction, method, msg, idx)
        elif "result" in msg or "error" in msg:
            self._response(direction, msg, idx)
        else:
            self._unreadable[direction] += 1
            self._report("RPC-01", idx, f"{party} message is neither a request, a notification "
                         "nor a response")

    def _method_spec(self, direction: str, method: str, idx: int, *, request: bool
                     ) -> schema.MethodSpec | None:
        spec = schema.method_table().get(method)
        party = _PARTY[direction]
        if spec is None:
            if not (method.startswith("_") or method.startswith("$/")):
                self._report("ENUM-02", idx, f"{party} used method {method!r}, which v2 does not "
                             "define and which lacks the _ prefix of extensions")
            return None
        if direction not in spec.directions:
            self._report("ACPM-SCHEMA", idx, f"{method} is not a method the {party} sends")
            return None
        if request and spec.notification:
            rule = "CANCEL-01" if method == "session/cancel" else "RPC-01"
            self._report(rule, idx, f"{method} is a notification but was sent with an id",
                         level="fail")
            return None
        return spec

    # --- requests ---------------------------------------------------------------------------
    def _request(self, direction: str, method: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg["id"]
        if not _valid_id(req_id):
            self._unreadable[direction] += 1
            self._report("RPC-01", idx, f"{_PARTY[direction]} sent {method} with id {req_id!r}; "
                         "an id is a string, an integer or null")
            return
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, dict) else None
        sid = sid if isinstance(sid, str) else None
        opened = self.open[direction]
        if req_id in opened:
            self._report("RPC-01", idx, f"request id {req_id!r} is reused while the earlier "
                         f"{opened[req_id].method} is still open")
        spec = self._method_spec(direction, method, idx, request=True)
        opened[req_id] = OpenRequest(method, idx, sid)
        if spec is None:
            return
        what = f"{method} request #{idx}"
        self._schema(spec.params_def, params, idx, what, method)
        if direction == "c2a":
            self._client_request(method, req_id, params, sid, idx, what)
        elif method == "session/request_permission":
            self._findings(checks.permission_request(params), idx, what, sid,
                           checks.COVERS["permission_request"])
            if sid is None or sid not in self.sessions:
                self._conn_event("agent_names_unknown_session", Ev(idx),
                                 f"{what} names session {sid!r}")
                return
            subject = params.get("subject") if isinstance(params, dict) else None
            tool_id = None
            if isinstance(subject, dict):
                tool = subject.get("toolCall")
                tool_id = tool.get("toolCallId") if isinstance(tool, dict) else \
                    subject.get("toolCallId")
            options = {}
            for opt in (params.get("options") or []) if isinstance(params, dict) else []:
                if isinstance(opt, dict) and isinstance(opt.get("optionId"), str):
                    options[opt["optionId"]] = opt.get("kind")
            self._session_event(sid, "permission_request",
                                Ev(idx, id=req_id, tool_call_id=tool_id, options=options), what)

    def _client_request(self, method: str, req_id: Any, params: Any, sid: str | None, idx: int,
                        what: str) -> None:
        if method == "initialize":
            self._conn_event("initialize", Ev(idx), what)
        elif method == "session/new":
            self._findings(checks.new_session_request(params), idx, what,
                           covers=checks.COVERS["session/new"])
            self._conn_event("session_requested", Ev(idx), what)
        elif method == "session/close" and sid in self.sessions:
            # SESS-10: closing cancels the session's work as if session/cancel had arrived.
            self._session_event(sid, "cancel", Ev(idx), what)
        elif method == "session/prompt":
            self._findings(checks.prompt_request(params, self.prompt_caps), idx, what, sid,
                           checks.COVERS["prompt"])
            if sid is None or sid not in self.sessions:
                self._conn_event("unknown_session_named", Ev(idx),
                                 f"{what} names session {sid!r}")
                return
            self._session_event(sid, "prompt", Ev(idx, id=req_id), what)

    # --- notifications -------------------------------------------------------------------
    def _notification(self, direction: str, method: str, msg: dict[str, Any], idx: int) -> None:
        params = msg.get("params")
        spec = self._method_spec(direction, method, idx, request=False)
        if direction == "c2a":
            self._last_c2a_notification = (method, idx)
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
                self._conn_event("unknown_session_named", Ev(idx), f"{what} names session {sid!r}")
                return
            self._session_event(sid, "cancel", Ev(idx), what)
        elif method == "$/cancel_request":
            # The sender withdraws one of its *own* open requests.
            target = self.open[direction].get(params.get("requestId"))
            if target is None:
                return  # nothing open with that id: harmless (it may have been answered)
            target.withdrawn = True
            if target.session in self.sessions:
                event = ("prompt_cancel_request" if direction == "c2a"
                         else "permission_withdrawn")
                self._session_event(target.session, event, Ev(idx, id=params["requestId"]),
                                    what)

    def _update(self, sid: Any, params: dict[str, Any], idx: int) -> None:
        update = params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        what = f"session/update {kind} #{idx}"
        self._findings(checks.session_update(params), idx, what,
                       sid if isinstance(sid, str) else None, checks.covers_update(params))
        if not isinstance(sid, str) or sid not in self.sessions:
            self._conn_event("agent_names_unknown_session", Ev(idx),
                             f"{what} names session {sid!r}")
            return
        if not isinstance(update, dict):
            return
        if kind == "state_update":
            state = update.get("state")
            event = _STATE_EVENTS.get(state, "custom_reported")  # type: ignore[arg-type]
            reason = update.get("stopReason") if state == "idle" else None
            what = f"state_update {state}" + (f" (stopReason {reason!r})" if state == "idle"
                                               else "") + f" #{idx}"
            self._session_event(sid, event, Ev(idx, reason=reason), what)
        elif kind in _USER_KINDS:
            self._session_event(sid, "user_message", Ev(idx, message_id=update.get("messageId")),
                                what)
        elif kind in _TOOL_KINDS:
            status = update.get("status") if kind == "tool_call_update" else None
            self._session_event(sid, "tool_update", Ev(
                idx, tool_call_id=update.get("toolCallId"), status=status,
                kind=_TOOL_KINDS[kind], has_title=bool(update.get("title"))), what)
        else:
            self._session_event(sid, "output", Ev(idx, kind=kind), what)

    # --- responses -----------------------------------------------------------------------
    def _response(self, direction: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg.get("id")
        party = _PARTY[direction]
        if not _valid_id(req_id):
            self._report("RPC-01", idx, f"{party} answered with id {req_id!r}; an id is a "
                         "string, an integer or null")
            return
        requester = _OTHER[direction]
        has_result, has_error = "result" in msg, "error" in msg
        if has_result and has_error:
            self._report("RPC-01", idx, f"{party} response carries both result and error")
        req = self.open[requester].pop(req_id, None)
        if req is None:
            self._unmatched(direction, msg, idx)
            return
        self.answered[requester][req_id] = req.method
        self._bump({"session/prompt": "PROMPT-04", "session/request_permission": "PERM-12"}
                   .get(req.method, "ACPM-ANSWER"))
        if req.withdrawn:
            self._bump("CANCEL-14")
        if direction == "a2c" and req.idx > self.ctx.frontier:
            # FIFO stdio: answering this request proves the agent read everything before it.
            self.ctx.frontier = req.idx
        what = f"response #{idx} to {req.method} #{req.idx}"
        spec = schema.method_table().get(req.method)
        if has_error:
            self._schema("Error", msg["error"], idx, what, req.method)
        elif spec is not None:
            self._schema(spec.result_def, msg["result"], idx, what, req.method)
        result = msg.get("result")
        error = msg.get("error") if isinstance(msg.get("error"), dict) else None
        code = error.get("code") if error else None
        method = req.method
        if method == "initialize":
            self._initialized(result, has_error, idx, what)
        elif method == "session/new":
            if has_error:
                if code == -32601 and self.ctx.session_advertised:
                    self._report("INIT-10", idx, f"{what}: -32601 although the agent "
                                 "advertised capabilities.session")
                return
            new_sid = result.get("sessionId") if isinstance(result, dict) else None
            self._conn_event("session_created", Ev(idx, id=new_sid), what)
            if isinstance(new_sid, str) and new_sid not in self.sessions:
                self.sessions[new_sid] = SessionModel(new_sid, self.ctx)
        elif method == "session/prompt" and req.session in self.sessions:
            if has_error:
                self._session_event(req.session, "prompt_rejected",
                                    Ev(idx, id=req_id, error_code=code), what)
            else:
                keys = tuple(result) if isinstance(result, dict) else None
                self._session_event(req.session, "prompt_accepted",
                                    Ev(idx, id=req_id, result_keys=keys), what)
        elif method == "session/request_permission" and req.session in self.sessions:
            if not has_error:
                self._findings(checks.permission_result(result), idx, what, req.session,
                               checks.COVERS["permission_result"])
            sess = self.sessions[req.session]
            answer = _classify_answer(sess.perms.get(req_id), result, has_error)
            self._session_event(req.session, "permission_answer",
                                Ev(idx, id=req_id, answer=answer, error_code=code), what)

    def _unmatched(self, direction: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg.get("id")
        party = _PARTY[direction]
        requester = _OTHER[direction]
        earlier = self.answered[requester].get(req_id)
        if earlier == "session/prompt":
            self._report("PROMPT-04", idx, f"session/prompt id {req_id!r} was answered twice")
        elif earlier == "session/request_permission":
            self._report("PERM-12", idx, f"permission request id {req_id!r} was answered twice")
        elif earlier is not None:
            self._report("RPC-01", idx, f"{earlier} id {req_id!r} was answered twice")
        elif req_id is None:
            error = msg.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            if code in (-32700, -32600) and self._unreadable[requester] > 0:
                # The JSON-RPC answer to input that could not be parsed or read.
                self._unreadable[requester] -= 1
                return
            if code in (-32700, -32600) and self._batch_sent:
                what = ("a valid batch of notifications" if self._notification_batch_sent
                        else "a valid batch as a whole")
                self._report("RPC-09", idx, f"{party} answered {what} with error {code} and id "
                             "null: each request in a batch gets its own response, each "
                             "notification none")
                self._batch_sent = self._notification_batch_sent = False
                return
            if code in (-32700, -32600):
                self._report("RPC-09", idx, f"{party} sent error {code} with id null although "
                             "nothing unreadable was sent: it answered a notification")
                return
            last = self._last_c2a_notification
            if direction == "a2c" and last is not None and last[0] == "session/cancel":
                self._report("CANCEL-02", idx, f"the agent answered the session/cancel "
                             f"notification #{last[1]}", related=[last[1]])
            else:
                self._report("RPC-09", idx, f"{party} sent a response with id null, i.e. it "
                             "answered a notification")
        else:
            self._report("RPC-01", idx, f"{party} answered id {req_id!r}, which matches no open "
                         "request")

    def _initialized(self, result: Any, has_error: bool, idx: int, what: str) -> None:
        if has_error or not isinstance(result, dict):
            self._conn_event("initialize_failed", Ev(idx), what)
            return
        self._findings(checks.initialize_result(result), idx, what,
                       covers=checks.COVERS["initialize_result"])
        version = result.get("protocolVersion")
        caps = result.get("capabilities") or {}
        session_caps = caps.get("session") if isinstance(caps, dict) else None
        self.ctx.session_advertised = isinstance(session_caps, dict)
        prompt = session_caps.get("prompt") if isinstance(session_caps, dict) else None
        self.prompt_caps = prompt if isinstance(prompt, dict) else {}
        event = "initialized" if version == 2 else "initialized_other_version"
        self._conn_event(event, Ev(idx, kind=version), what)


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int)
                                                        and not isinstance(value, bool))


def _classify_answer(perm: Any, result: Any, has_error: bool) -> str:
    """Reduce a permission response to what PERM-11 and CANCEL-04 care about."""
    if has_error:
        return "error"
    outcome = result.get("outcome") if isinstance(result, dict) else None
    kind = outcome.get("outcome") if isinstance(outcome, dict) else None
    if kind == "cancelled":
        return "cancelled"
    if kind != "selected":
        return "custom"
    option_kind = (perm.options.get(outcome.get("optionId")) if perm is not None else None)
    if isinstance(option_kind, str):
        if option_kind.startswith("allow_"):
            return "allow"
        if option_kind.startswith("_"):
            return "custom-option"
    return "reject"


_SCHEMA_RULES = (
    ("initialize", "info", "INIT-09"),
    ("initialize", "capabilities", "INIT-07"),
    ("session/update", "messageId", "MSG-01"),
    ("session/update", "planId", "PLAN-02"),
    ("session/update", "used", "USAGE-02"),
    ("session/update", "size", "USAGE-02"),
    ("session/update", "currency", "USAGE-04"),
    ("session/request_permission", "options", "PERM-02"),
    ("session/request_permission", "title", "PERM-02"),
)


def _schema_rule(method: str, path: str) -> str:
    """The most specific catalogued rule for a schema failure (ACPM-SCHEMA otherwise)."""
    for m, key, rule_id in _SCHEMA_RULES:
        if m == method and key in path.split("/"):
            return rule_id
    return "ACPM-SCHEMA"


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _explain(check_name: str, model: Any, ev: Ev, ctx: Context) -> str:
    """Extra context for the checks whose verdict depends on earlier messages."""
    if not isinstance(model, SessionModel):
        return ""
    proof = f"a response proves the agent read the client's messages up to #{ctx.frontier}"
    if check_name == "cancel_honoured":
        read = [c.idx for c in model.cancels if c.status == "W" and c.idx <= ctx.frontier]
        return (f"session/cancel #{read[0]} was sent during this work and {proof}; "
                f"expected stopReason 'cancelled', got {ev.reason!r}") if read else ""
    if check_name == "cancelled_has_cause":
        stale = [c.idx for c in model.cancels if c.status == "I"]
        if model.state in WORK or stale:
            return ("no session/cancel was sent during this work; the last one the agent "
                    "could act on was read before the work began")
        return "no session/cancel was sent since the previous idle"
    if check_name == "tool_respects_answer":
        tool = model.tools.get(ev.tool_call_id or "")
        perm = model.perms.get(tool.perm) if tool else None
        if perm is not None:
            return (f"tool call {ev.tool_call_id!r} went {ev.status!r} although the permission "
                    f"request #{perm.idx} was answered {perm.answer!r} at #{perm.answer_idx}")
    if check_name == "answer_honours_cancel":
        return f"answered {ev.answer!r} after session/cancel; expected the cancelled outcome"
    if check_name == "not_after_cancelled_idle":
        return f"tool call {ev.tool_call_id!r} belonged to the work ended by idle(cancelled)"
    return ""
