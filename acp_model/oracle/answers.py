"""Responses: which request each answers, and what the answer means for the models.

A response is matched to its open request (:class:`~acp_model.oracle.rpc.Rpc`), checked as a
JSON-RPC answer and against the schema of its request's method, judged by the checks that
declare its request's kind (the row's ``answer_reads``, and ``Reads.ANSWER`` for every one:
one :class:`~acp_model.model.answering.Answering` record each, the plan built once per
method), then handed to the handler of that method (``initialize``, ``session/new`` ...),
which fires the session or connection event it stands for. The initialize result's facts
(the agent's capabilities, :class:`~acp_model.model.answering.Told`) are kept here: they come
from a response, and later requests are judged by them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
from acp_model.model.answering import Answering, Showing, Told
from acp_model.model.check import CheckMeta, Dispatch, dispatch, dispatch_everywhere
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


# the checks an answer to one method gets: those reading its row's ``answer_reads``
AnswerEntry = tuple[tuple[Callable[..., str | None], CheckMeta], ...]


@dataclass(frozen=True, slots=True)
class Matched:
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
        self.prompt_caps: dict[str, Any] | None = None
        self.own = offered.OwnSessions()  # the sessions the agent made here (SESS-14)
        # method -> this oracle's handler of its row's answer (None: none), found on first use
        self._handlers: dict[str, Callable[[Matched], None] | None] = {}
        # the checks of an answer given twice (each obligation's own), from their declarations
        self._answered_again = dispatch(rpc.__name__, self.rev).get(Reads.ANSWERED_AGAIN, ())
        # the checks of an answer: every one's, and those of its request's kind (by method)
        self._by_kind: Dispatch = dispatch_everywhere(self.rev)
        self._every_answer = self._by_kind.get(Reads.ANSWER, ())
        # a session result's config options: the checks of a config_option_update's
        # (Reads.CONFIG_OPTIONS_USE: what it shows against what the client advertised)
        self._options_shown = self._by_kind.get(Reads.CONFIG_OPTIONS_USE, ())
        self._answer_entries: dict[str, AnswerEntry] = {}

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
        error = msg.get("error") if isinstance(msg.get("error"), dict) else None
        reply = Matched(req, req_id, msg.get("result"), has_error,
                      error.get("code") if error else None, idx, what, error)
        self._judge(direction, reply)
        if direction == "a2c":
            self.machines.ctx.answered(req.idx, idx)  # FIFO stdio: it read up to req.idx
            self.own.response(run, req.method, req.session, msg.get("error"), req.idx, idx)
            self.machines.closes.response(run, req, req_id, msg.get("error"), idx,
                                          self.machines.sessions)
        spec = schema.method_table(self.rev).get(req.method)
        if has_error:
            self.shapes.schema("Error", msg["error"], idx, what, req.method)
        elif spec is not None:
            self.shapes.schema(spec.result_def, msg["result"], idx, what, req.method)
        if direction == "a2c" and has_error and req.method in self._baseline \
                and reply.code == ErrorCode.METHOD_NOT_FOUND:
            self.machines.conn_event(ConnEvent.SESSION_METHOD_MISSING,
                                     Payload(idx, error_code=reply.code), f"{what}: -32601")
        if direction == "a2c":
            self._what_it_advertised(reply)
        handler = self._handler(req.method)
        if handler is not None:
            handler(reply)

    def _judge(self, direction: str, r: Matched) -> None:
        """The checks of this answer, from their declarations: every answer's, then those
        of its request's kind, on one record (a finding names the request answered)."""
        req = r.req
        entry = self._answer_entries.get(req.method)
        if entry is None:
            entry = self._answer_entry(req.method)
        facts = Answering(direction, req.method, req.idx, req.session, req.shape, req.active,
                          req.state_reported, r.has_error, r.code, r.error, r.result,
                          self.told)
        self.store.run_entry(self._every_answer, r.idx, facts)
        if entry:
            self.store.run_entry(entry, r.idx, facts, session=req.session, related=[req.idx])

    def _answer_entry(self, method: str) -> AnswerEntry:
        """The checks of an answer to ``method``: those reading its row's ``answer_reads``
        (built once per method)."""
        row = wire_table.messages().get(method)
        kind = row.answer_reads if row is not None else None
        entry = self._answer_entries[method] = self._by_kind.get(kind, ()) \
            if kind is not None else ()
        return entry

    def _handler(self, method: Any) -> Callable[[Matched], None] | None:
        """The handler of a response to ``method``: its wire-table row's ``answer``."""
        if not isinstance(method, str):
            return None
        if method not in self._handlers:
            row = wire_table.messages().get(method)
            self._handlers[method] = wire_table.bound(row.answer, self) if row else None
        return self._handlers[method]

    def _what_it_advertised(self, r: Matched) -> None:
        """What the agent's answer tells of its sessions: a session result's config options,
        commands and root set (kept in ``told``, INIT-16's boolean options judged); the end
        of a reopen's replay. (The checks of the answer itself are its request kind's.)"""
        req, sid, told = r.req, r.req.session, self.told
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
        sid = sid if isinstance(sid, str) else None
        self.store.run_entry(self._options_shown, r.idx,
                             Showing(sid, r.result, told, self.shape), session=sid)

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

    # --- one handler per method -------------------------------------------------------------
    def initialized(self, r: Matched) -> None:
        result, idx, what = r.result, r.idx, r.what
        if r.has_error or not isinstance(result, dict):
            self.machines.conn_event(ConnEvent.INITIALIZE_FAILED, Payload(idx), what)
            return
        version = result.get("protocolVersion")
        if self.decision.negotiated is None or version != self.decision.negotiated:
            # (an agent speaking another version than it named: its one failure is below)
            self.shapes.findings(messages.initialize_result(result, self.rev), idx, what)
        caps = result.get(messages.capabilities_key(self.rev)) or {}
        self.told.agent_caps = caps if isinstance(caps, dict) else {}
        self.told.auth_methods = capabilities.auth_methods_of(result)
        # v1: the baseline methods are every agent's (INIT-10); v2: those advertising session
        self.machines.ctx.session_advertised = self.shape.has_session_surface(caps)
        self.prompt_caps = messages.prompt_capabilities(result, self.rev)
        spoken_instead = self.store.run(messages.speaks_negotiated_version, idx, version,
                                        self.protocol, self.decision.negotiated,
                                        self.decision.evidence)
        event = ConnEvent.INITIALIZED if version == self.protocol or spoken_instead \
            else ConnEvent.INITIALIZED_OTHER_VERSION
        self.machines.conn_event(event, Payload(idx, version=version), what)

    def created(self, r: Matched) -> None:
        if r.has_error:
            return
        new_sid = r.result.get("sessionId") if isinstance(r.result, dict) else None
        self.machines.conn_event(ConnEvent.SESSION_CREATED, Payload(r.idx, id=new_sid), r.what)
        self.own.created(new_sid, r.req.idx, r.idx)
        if isinstance(new_sid, str) and new_sid not in self.machines.sessions:
            self.machines.open(new_sid)
        elif isinstance(new_sid, str):  # a session handed out again (SESS-01 judged it): what
            replay.forget_turn_end(self.machines.sessions[new_sid])  # it shows is not late

    def loaded(self, r: Matched) -> None:
        if not r.has_error and r.req.session in self.machines.sessions:
            self.reopens.load_answered(r.req.session, r.idx)
            # a turn that ended while the load was open (after its request forgot the last
            # end): what follows the answer is the load's to judge (V1-LOAD-01), not that
            # turn's late content (V1-TURN-01, CANCEL-09): one replay, one verdict
            replay.forget_turn_end(self.machines.sessions[r.req.session])

    def prompt_answered(self, r: Matched) -> None:
        sid = r.req.session
        if sid is None or sid not in self.machines.sessions:
            return
        if r.has_error or not isinstance(r.result, dict):
            pass  # (an error: the checks of a prompt's answer judge it, INIT-11)
        elif self.dialect.prompts_are_the_conversation:
            self.conversations.turn_ended(sid, r.req.shape, r.req.idx,
                                          r.result.get("stopReason"), r.idx)
        elif r.result.get("messageId") is not None:
            mid = r.result["messageId"]
            self.store.run(prompt_rules.receipt_not_held_back, r.idx, mid, r.req.idx,
                           *self.conversations.receipt(sid, mid), session=sid)
        self.machines.derived(sid, self.translate(Answered(
            sid, r.req_id, r.idx, r.result, r.has_error, r.code, r.what)))

    def elicitation_answered(self, r: Matched) -> None:
        """The client's answer to a session-scoped elicitation ends that wait, whatever its
        action (a request-scoped one names no session: nothing to move)."""
        sid = r.req.session
        if sid is None or sid not in self.machines.sessions:
            return
        action = ElicitationAction.ERROR if r.has_error else ElicitationAction.of(r.result)
        self.machines.session_event(sid, Event.ELICITATION_ANSWER,
                                    Payload(r.idx, id=r.req_id, answer=action, error_code=r.code),
                                    r.what)

    def permission_answered(self, r: Matched) -> None:
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
