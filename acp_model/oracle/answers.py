"""Responses: which request each answers, and what the answer means for the models.

A response is matched to its open request (:class:`~acp_model.oracle.rpc.Rpc`), checked as a
JSON-RPC answer and against the schema of its request's method, then handed to the handler of
that method (``initialize``, ``session/new`` ...), which fires the session or connection
event it stands for. The initialize result's facts (the agent's capabilities) are kept here:
they come from a response, and later requests are judged by them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from acp_model.model import (
    capabilities,
    messages,
    offered,
    permissions,
    prompt_rules,
    replay,
    wire_shapes,
    wire_table,
)
from acp_model.model.check import dispatch
from acp_model.model.events import Payload
from acp_model.model.evidence import note_repeat
from acp_model.model.obligations import WITHDRAWN_ANSWERED
from acp_model.model.vocab import (
    Answer,
    ConnEvent,
    ElicitationAction,
    ErrorCode,
    Event,
    Reads,
    ToolStatus,
)
from acp_model.oracle import rpc, said
from acp_model.oracle.conversation import Conversations
from acp_model.oracle.dialects import Answered, Translator
from acp_model.oracle.liveness import REQUEST_ANSWERED
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.rpc import OTHER, OpenRequest, Rpc
from acp_model.oracle.said import Said
from acp_model.oracle.shapes import ShapeJudge
from acp_model.oracle.store import ViolationStore
from acp_model.spec import revisions, schema
from acp_model.trace.methods import Method

# the session methods every agent advertising ``session`` has: -32601 is a missing method
# (and those the revision adds: wire_shapes.Shape.baseline_adds)
_BASELINE_SESSION_METHODS = frozenset(m.method for m in wire_table.MESSAGES
                                      if ConnEvent.SESSION_METHOD_MISSING in m.answered)
# results that carry a session's config options and commands (messages.session_result)
_SESSION_RESULTS = frozenset(m.method for m in wire_table.MESSAGES
                             if m.result_reads in (Reads.SESSION_RESULT, Reads.CONFIG_RESULT))


@dataclass(slots=True)
class Told:
    """What the initialize exchange and the session set-ups told: the client's capabilities,
    the agent's, its authentication methods; per session, the cwd it was created with and
    whether config options were advertised for it (model.capabilities judges by these)."""

    client_caps: dict[str, Any] = field(default_factory=dict)
    agent_caps: Any = None  # None: no initialize result yet
    auth_methods: list[Any] | None = None
    roots: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cwd, then the others
    configured: set[str] = field(default_factory=set)
    # (session, tool call) -> where an allow approved it and no status was reported since
    allowed: dict[tuple[str, str], int] = field(default_factory=dict)

    def client_initialized(self, params: Any, shape: wire_shapes.Shape) -> None:
        self.client_caps = dict(capabilities.client_capabilities(params, shape))


@dataclass(frozen=True, slots=True)
class Reply:
    """A response matched to its request, as its method's handler reads it."""

    req: OpenRequest
    req_id: Any
    result: Any
    has_error: bool
    code: Any  # the error's code (None: a result, or an error that is no object)
    idx: int
    what: Said  # "response #9 to session/prompt #4", formatted when a violation reads it
    error: Any = None  # the error object (None: a result)


class Answers:
    """Routes responses; owns what the initialize result told (capabilities)."""

    def __init__(self, rev: str, decision: revisions.Decision, rpc_: Rpc, store: ViolationStore,
                 machines: Machines, shapes: ShapeJudge, translator: Translator,
                 reopens: Reopens, conversations: Conversations) -> None:
        self.decision = decision
        self.rev = rev
        self.protocol = revisions.get(self.rev).protocol
        self.shape = wire_shapes.shape(rev)  # what its initialize exchange spells and grants
        self._baseline = _BASELINE_SESSION_METHODS | self.shape.baseline_adds
        self.rpc, self.store, self.machines, self.shapes = rpc_, store, machines, shapes
        self.translate, self.reopens, self.conversations = translator, reopens, conversations
        self.dialect = translator.dialect
        self.told = Told()
        self.agent_capabilities: Any = None  # the initialize result's (ENUM-12 reads _meta)
        self.prompt_caps: dict[str, Any] | None = None
        # each initialize request: does it validate, what it leaves to the schema's defaults
        self.initializes: dict[Any, tuple[bool, tuple[str, ...]]] = {}
        self.own = offered.OwnSessions()  # the sessions the agent made here (SESS-14)
        # method -> this oracle's handler of its row's answer (None: none), found on first use
        self._handlers: dict[str, Callable[[Reply], None] | None] = {}
        # the checks of an answer given twice (each obligation's own), from their declarations
        self._answered_again = dispatch(rpc.__name__, self.rev).get(Reads.ANSWERED_AGAIN, ())

    def response(self, direction: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg.get("id")
        run = self.store.run
        if run(rpc.response_id_valid, idx, direction, req_id):
            return
        requester = OTHER[direction]
        has_error = "error" in msg
        run(rpc.result_xor_error, idx, direction, msg)
        req = self.rpc.open[requester].pop(req_id, None)
        if req is None:
            self._unmatched(direction, msg, idx)
            return
        self.rpc.close(requester, req_id, req, accepted="result" in msg, at=idx)
        self.store.bump((wire_table.owed(req.method) or REQUEST_ANSWERED).rule)
        if req.withdrawn:
            self.store.bump(WITHDRAWN_ANSWERED.rule)
        what = Said((said.RESPONSE, idx, req.method, req.idx))
        run(rpc.custom_request_unrecognised, idx, direction, req.method, has_error,
            self.agent_capabilities)
        if direction == "a2c":
            self.machines.ctx.answered(req.idx, idx)  # FIFO stdio: it read up to req.idx
            self.own.response(run, req.method, req.session, msg.get("error"), req.idx, idx)
            run(replay.resume_reports_state, idx, req.method, has_error, req.state_reported,
                session=req.session)
            self.machines.closes.response(run, req, req_id, msg.get("error"), idx,
                                          self.machines.sessions)
        spec = schema.method_table(self.rev).get(req.method)
        if has_error:
            self.shapes.schema("Error", msg["error"], idx, what, req.method)
        elif spec is not None:
            self.shapes.schema(spec.result_def, msg["result"], idx, what, req.method)
        error = msg.get("error") if isinstance(msg.get("error"), dict) else None
        reply = Reply(req, req_id, msg.get("result"), has_error,
                      error.get("code") if error else None, idx, what, error)
        if direction == "a2c" and has_error and req.method in self._baseline \
                and reply.code == ErrorCode.METHOD_NOT_FOUND:
            self.machines.conn_event(ConnEvent.SESSION_METHOD_MISSING,
                                     Payload(idx, error_code=reply.code), f"{what}: -32601")
        if direction == "a2c":
            self._what_it_advertised(reply)
        handler = self._handler(req.method)
        if handler is not None:
            handler(reply)

    def _handler(self, method: Any) -> Callable[[Reply], None] | None:
        """The handler of a response to ``method``: its wire-table row's ``answer``."""
        if not isinstance(method, str):
            return None
        if method not in self._handlers:
            row = wire_table.messages().get(method)
            self._handlers[method] = wire_table.bound(row.answer, self) if row else None
        return self._handlers[method]

    def _what_it_advertised(self, r: Reply) -> None:
        """The agent's answer to a method it advertised, or every agent must have; a session
        result's config options and commands; the end of a reopen's replay."""
        run, req, sid, told = self.store.run, r.req, r.req.session, self.told
        if req.method in ("auth/login", "auth/logout"):
            run(capabilities.auth_methods_implemented, r.idx, req.method, r.code,
                told.auth_methods or [])
        elif req.method == "session/set_config_option":
            run(capabilities.config_method_implemented, r.idx, req.method, r.code,
                sid in told.configured, session=sid)
            if not r.has_error and self.shape.config_result_lists_all:
                run(capabilities.config_result_complete, r.idx, req.shape, r.result,
                    session=sid)
        elif req.method == Method.CLOSE:
            run(capabilities.inactive_close_succeeds, r.idx, req.method, r.code, req.active,
                session=sid)
        if req.method in (Method.LOAD, Method.RESUME) and sid is not None:
            self.conversations.reopen_answered(sid, r.idx, not r.has_error)
            if req.method == Method.RESUME and not r.has_error and req.replayed is not None \
                    and sid in self.machines.sessions:
                self.reopens.load_answered(sid, r.idx)  # its replay came before (SESS-07)
        if r.has_error or req.method not in _SESSION_RESULTS or not isinstance(r.result, dict):
            return
        self.shapes.findings(messages.session_result(r.result, self.rev, req.method), r.idx,
                             r.what, sid)
        options = capabilities.config_options_of(r.result)
        sid = r.result.get("sessionId", sid) if req.method == Method.NEW_SESSION else sid
        if isinstance(sid, str) and options:
            told.configured.add(sid)
        if isinstance(sid, str) and req.roots:
            told.roots[sid] = req.roots
        if self.shape.gates_boolean_options:
            run(capabilities.boolean_options_advertised, r.idx, options, told.client_caps,
                session=sid if isinstance(sid, str) else None)

    def _unmatched(self, direction: str, msg: dict[str, Any], idx: int) -> None:
        req_id = msg.get("id")
        requester = OTHER[direction]
        run = self.store.run
        if req_id in self.rpc.answered[requester]:
            self.store.run_entry(self._answered_again, idx, self.rpc, direction, req_id)
            if self.rpc.answered[requester][req_id] == Method.PERMISSION:
                note_repeat(self.machines.sessions.values(), req_id, msg, idx)  # PERM-11's proof
            return
        if req_id is None:
            last = rpc.answered_notification(self.rpc, msg)
            run(rpc.cancel_not_answered, idx, self.rpc, direction, msg,
                related=[last[1]] if last is not None else None)
            run(rpc.notifications_unanswered, idx, self.rpc, direction, msg)
            if run(rpc.batch_answered_per_request, idx, self.rpc, direction, msg):
                self.rpc.rejected_batch(direction)
            rpc.settle_null_answer(self.rpc, direction, msg)
            return
        run(rpc.answers_open_request, idx, self.rpc, direction, req_id)

    def initialize_sent(self, req_id: Any, valid: bool, defaulted: tuple[str, ...]) -> None:
        """The client sent initialize ``req_id``: whether it validates, what it leaves to the
        schema's defaults (INIT-18 reads them at its answer)."""
        self.initializes[req_id] = (valid, defaulted)

    # --- one handler per method -------------------------------------------------------------
    def initialized(self, r: Reply) -> None:
        result, idx, what = r.result, r.idx, r.what
        if r.has_error and r.req_id in self.initializes:
            valid, defaulted = self.initializes.pop(r.req_id)
            self.store.run(offered.valid_client_let_in, idx, valid, defaulted, r.code,
                           r.req.idx, self.rev)
        if r.has_error or not isinstance(result, dict):
            self.machines.conn_event(ConnEvent.INITIALIZE_FAILED, Payload(idx), what)
            return
        version = result.get("protocolVersion")
        if self.decision.negotiated is None or version != self.decision.negotiated:
            # (an agent speaking another version than it named: its one failure is below)
            self.shapes.findings(messages.initialize_result(result, self.rev), idx, what)
        caps = result.get(messages.capabilities_key(self.rev)) or {}
        self.agent_capabilities = caps
        self.told.agent_caps = caps if isinstance(caps, dict) else {}
        self.told.auth_methods = capabilities.auth_methods_of(result)
        self.store.run(capabilities.terminal_auth_advertised, idx, self.told.auth_methods,
                       self.told.client_caps)
        # v1: the baseline methods are every agent's (INIT-10); v2: those advertising session
        self.machines.ctx.session_advertised = self.shape.has_session_surface(caps)
        self.prompt_caps = messages.prompt_capabilities(result, self.rev)
        spoken_instead = self.store.run(messages.speaks_negotiated_version, idx, version,
                                        self.protocol, self.decision.negotiated,
                                        self.decision.evidence)
        event = ConnEvent.INITIALIZED if version == self.protocol or spoken_instead \
            else ConnEvent.INITIALIZED_OTHER_VERSION
        self.machines.conn_event(event, Payload(idx, version=version), what)

    def created(self, r: Reply) -> None:
        if r.has_error:
            return
        new_sid = r.result.get("sessionId") if isinstance(r.result, dict) else None
        self.machines.conn_event(ConnEvent.SESSION_CREATED, Payload(r.idx, id=new_sid), r.what)
        self.own.created(new_sid, r.req.idx, r.idx)
        if isinstance(new_sid, str) and new_sid not in self.machines.sessions:
            self.machines.open(new_sid)
        elif isinstance(new_sid, str):  # a session handed out again (SESS-01 judged it): what
            replay.forget_turn_end(self.machines.sessions[new_sid])  # it shows is not late

    def loaded(self, r: Reply) -> None:
        if not r.has_error and r.req.session in self.machines.sessions:
            self.reopens.load_answered(r.req.session, r.idx)
            # a turn that ended while the load was open (after its request forgot the last
            # end): what follows the answer is the load's to judge (V1-LOAD-01), not that
            # turn's late content (V1-TURN-01, CANCEL-09): one replay, one verdict
            replay.forget_turn_end(self.machines.sessions[r.req.session])

    def prompt_answered(self, r: Reply) -> None:
        sid = r.req.session
        if sid is None or sid not in self.machines.sessions:
            return
        if r.has_error:
            self.store.run(capabilities.baseline_content_refused, r.idx, r.req.shape,
                           r.error, session=sid)
            self.store.run(capabilities.baseline_content_invalid, r.idx, r.req.shape, r.error,
                           session=sid)
        elif self.dialect.prompts_are_the_conversation and isinstance(r.result, dict):
            self.conversations.turn_ended(sid, r.req.shape, r.req.idx,
                                          r.result.get("stopReason"), r.idx)
        elif isinstance(r.result, dict) and r.result.get("messageId") is not None:
            mid = r.result["messageId"]
            self.store.run(prompt_rules.receipt_not_held_back, r.idx, mid, r.req.idx,
                           *self.conversations.receipt(sid, mid), session=sid)
        self.machines.derived(sid, self.translate(Answered(
            sid, r.req_id, r.idx, r.result, r.has_error, r.code, r.what)))

    def elicitation_answered(self, r: Reply) -> None:
        """The client's answer to a session-scoped elicitation ends that wait, whatever its
        action (a request-scoped one names no session: nothing to move)."""
        sid = r.req.session
        if sid is None or sid not in self.machines.sessions:
            return
        action = ElicitationAction.ERROR if r.has_error else ElicitationAction.of(r.result)
        self.machines.session_event(sid, Event.ELICITATION_ANSWER,
                                    Payload(r.idx, id=r.req_id, answer=action, error_code=r.code),
                                    r.what)

    def cancel_control_answered(self, r: Reply) -> None:
        """A tool_call/cancel (terminal/cancel) of what had already ended is refused."""
        if r.req.shape is not None:
            what, target, ended = r.req.shape
            self.store.run(capabilities.ended_cancel_refused, r.idx, r.req.method, what,
                           target, ended, r.has_error, session=r.req.session, related=[r.req.idx])

    def permission_answered(self, r: Reply) -> None:
        sid = r.req.session
        if sid is None or sid not in self.machines.sessions:
            return
        if not r.has_error:
            self.shapes.findings(messages.permission_result(r.result, self.rev), r.idx, r.what,
                                 sid)
        perm = self.machines.sessions[sid].perm_book.perm(r.req_id)
        answer = permissions.classify(perm.options if perm is not None else None, r.result,
                                      r.has_error)
        self.machines.session_event(sid, Event.PERMISSION_ANSWER,
                                    Payload(r.idx, id=r.req_id, answer=answer, error_code=r.code),
                                    r.what)
        tool = self.machines.views[sid].tools.get(perm.tool_call_id) \
            if perm is not None and perm.tool_call_id is not None else None
        if answer == Answer.ALLOW and perm is not None and perm.tool_call_id is not None \
                and (tool is None or tool.status != ToolStatus.IN_PROGRESS) \
                and not self.machines.sessions[sid].cancel_book.client_cancelled():
            # TOOL-12 watches it (a tool already shown running owes no second report; an
            # allow the client sent after cancelling the work grants nothing to run)
            self.told.allowed[(sid, perm.tool_call_id)] = r.idx
