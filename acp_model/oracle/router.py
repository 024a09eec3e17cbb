"""Routing: which check, model and handler each wire message reaches.

A record is read as JSON-RPC (:mod:`acp_model.oracle.rpc`), a batch element by element; a
request or a notification is checked against the schema of its method and direction
(:class:`~acp_model.oracle.shapes.ShapeJudge`), classified into an event
(:mod:`acp_model.oracle.wire`) and fired on the connection machine or its session's machine
(:class:`~acp_model.oracle.machines.Machines`); responses go to
:class:`~acp_model.oracle.answers.Answers`. Which handler a method reaches is its row's route
in :data:`~acp_model.model.wire_table.MESSAGES`: a method of
:class:`~acp_model.model.wire_table.MessageHandlers`, which the router implements. What a
message means besides its own event is the revision's translator's
(:mod:`acp_model.oracle.dialects`: v1 derives its turns there). A ``session/update`` goes to
:class:`~acp_model.oracle.updates.UpdateRoute`, through its kind's plan built once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp_model.model import capabilities, messages, offered, replay, wire_table
from acp_model.model.check import CheckMeta, Dispatch, allows_of, declare, dispatch, meta_of
from acp_model.model.events import Payload, content_key, text_key
from acp_model.model.vocab import ConnEvent, Event, Reads, Role
from acp_model.oracle import rpc, said
from acp_model.oracle.advertised import AdvertisedUse
from acp_model.oracle.answers import Answers
from acp_model.oracle.conversation import Conversations
from acp_model.oracle.dialects import Cancelled, Prompted, Translator, Withdrawn
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.rpc import OpenRequest, Rpc
from acp_model.oracle.said import Said
from acp_model.oracle.shapes import ShapeJudge
from acp_model.oracle.store import StepTally, ViolationStore
from acp_model.oracle.updates import UpdateRoute
from acp_model.oracle.user_asks import UserAsks
from acp_model.spec import schema
from acp_model.trace.format import Record
from acp_model.trace.methods import Method

CLOSE_CANCELS = declare("SESS-10", "close_is_cancel", "session/close is routed to the session "
                        "machine as a session/cancel: the CANCEL rules judge what follows.",
                        module=__name__, role=Role.ROUTE)

# What a message's JSON-RPC checks read, in the order the router reaches them: the record as
# read, a batch, a batch's element, and every message (its envelope). Each is one entry of the
# checks declaring that kind (``reads``), run on the same arguments and counted once.
_ENVELOPE_KINDS = (Reads.RECORD, Reads.BATCH, Reads.BATCH_ELEMENT, Reads.MESSAGE)
_ENVELOPE_MODULES = (rpc.__name__, messages.__name__)
_BATCH_NOT_EMPTY = meta_of(rpc.batch_not_empty)
_IS_OBJECT = meta_of(rpc.is_object)
_METHOD_IS_STRING = meta_of(rpc.method_is_string)
# a message whose envelope breaks one of these is unreadable (the connection's count)
_UNREADABLE = frozenset({_IS_OBJECT, meta_of(rpc.version_field), _METHOD_IS_STRING})


def envelope_entries(rev: str) -> Dispatch:
    """The JSON-RPC checks of each envelope kind under ``rev``, from their declarations."""
    tables = [dispatch(module, rev) for module in _ENVELOPE_MODULES]
    return {kind: tuple(pair for table in tables for pair in table.get(kind, ()))
            for kind in _ENVELOPE_KINDS}


# (the definition, each check's verdict, the checks when all held)
_MethodPlan = tuple["schema.MethodSpec | None", tuple[tuple[CheckMeta, "str | None"], ...],
                    tuple[CheckMeta, ...]]


def _plan_method(rev: str, direction: str, method: str, request: bool) -> _MethodPlan:
    """What every message of ``method`` sent by ``direction`` gets under ``rev``: the verdicts
    of the checks that read the method alone (those of :mod:`~acp_model.oracle.rpc` reading
    its kind, a request or a notification: defined? sent by that side? a request, not a
    notification?), each until the first that fails, and its definition when all held. Those
    after the first read the method's definition: an undefined method gets the first alone."""
    spec = schema.method_table(rev).get(method)
    entry = dispatch(rpc.__name__, rev).get(Reads.REQUEST if request else Reads.NOTIFICATION, ())
    verdicts: list[tuple[CheckMeta, str | None]] = []
    for fn, meta in entry:
        if verdicts and spec is None:
            break  # an undefined method has nothing more to check
        text = fn(direction, method, spec)
        verdicts.append((meta, text))
        if text is not None:
            return None, tuple(verdicts), ()
    return spec, tuple(verdicts), tuple(meta for meta, _ in verdicts)


@dataclass(frozen=True, slots=True)
class Plan:
    """What every message of one method sent by one side gets under the connection's
    revision, built on its first message: the verdicts of the checks that read the method
    alone, its definition, and the handler its wire-table row routes it to. ``tally`` counts
    the messages whose envelope held: each ran the envelope's checks and, when they all held,
    the method's (the exercised counts derived from it when a report asks)."""

    request: bool
    spec: schema.MethodSpec | None  # None: the message stops after the verdicts
    verdicts: tuple[tuple[CheckMeta, str | None], ...]
    held: tuple[CheckMeta, ...]  # the checks, when every one held (counted once)
    handler: Callable[..., None] | None
    tally: StepTally


class Router:
    """Routes requests and notifications, and fires the events the translator derives."""

    def __init__(self, rev: str, rpc_: Rpc, store: ViolationStore, machines: Machines,
                 shapes: ShapeJudge, answers: Answers, translator: Translator,
                 reopens: Reopens, conversations: Conversations) -> None:
        self.rev = rev
        self.rpc, self.store, self.machines, self.shapes = rpc_, store, machines, shapes
        self.answers, self.reopens = answers, reopens
        # the revision's translator (hand it what a message was, fire its steps) and readings
        self.translate, self.dialect = translator, translator.dialect
        self.conversations = conversations
        # what each request and update uses of what the initialize exchange advertised
        self.uses = AdvertisedUse(store, machines, answers)
        # the agent's requests that wait for the user (permission, elicitation)
        self.asks = UserAsks(rev, machines, shapes, translator, self._unknown_session)
        self.updates = UpdateRoute(rev, rpc_, store, machines, shapes, translator, reopens,
                                   conversations, self.uses, self._unknown_session)
        # (direction, method, request?) -> its plan, built on first use
        self._plans: dict[tuple[str, str, bool], Plan] = {}
        self._entries = envelope_entries(rev)
        # the messages of no method whose envelope held (a method's: its plan's tally)
        # every message's envelope checks (read once: an enum member read off its class costs
        # about 150 ns in CPython 3.11)
        self._message_entry = self._entries[Reads.MESSAGE]
        self._envelope = store.tally((self._message_entry,))
        self._record = Record("c2a")  # the record being routed (its model-side facts)

    def record(self, record: Record, idx: int) -> None:
        """Route one trace record: unreadable bytes, a batch, or one message."""
        direction, store = record.dir, self.store
        self._record = record
        for sid in record.model_asked:  # the agent asked the model again: no turn was done
            sess = self.machines.sessions.get(sid)
            if sess is not None:
                sess.cancel_book.model_asked()
        if record.raw is not None:
            self.rpc.unreadable[direction] += 1
            store.run_entry(self._entries[Reads.RECORD], idx, record)
            return
        msg = record.msg
        if not isinstance(msg, list):
            self._message(direction, msg, idx)
            return
        for allowed in allows_of(rpc.batch_not_empty):
            store.bump(allowed)
        if _BATCH_NOT_EMPTY in store.run_entry(self._entries[Reads.BATCH], idx, self.rpc,
                                               direction, msg):
            self.rpc.unreadable[direction] += 1
        if direction == "c2a":
            self.rpc.client_batch(msg, idx)
        for n, element in enumerate(msg):
            store.sub = n
            store.run_entry(self._entries[Reads.BATCH_ELEMENT], idx, element)
            self._message(direction, element, idx)
        if direction == "c2a":
            self.rpc.mark_batched(direction)

    def _message(self, direction: str, msg: Any, idx: int) -> None:
        broke = self.store.run_entry(self._message_entry, idx, direction, msg, tallied=True)
        if broke:  # a message whose envelope fails a check is unreadable, once per check
            self.rpc.unreadable[direction] += sum(meta in _UNREADABLE for meta in broke)
            if _IS_OBJECT in broke or _METHOD_IS_STRING in broke:
                return
        method = msg.get("method")
        if method is not None:
            if self.machines.closes.closed:  # (its watcher reads nothing while none is)
                self.machines.closes.message(self.store.run, direction, msg, idx)
            plan = self._plans.get((direction, method, "id" in msg))
            if plan is None:
                plan = self._plan(direction, method, "id" in msg)
            if not broke:  # the envelope's checks and the method's that held, counted
                plan.tally.n += 1
            elif plan.held:
                self.store.ran(plan.held)
            if plan.request:
                self._request(plan, direction, method, msg, idx)
            else:
                self._notification(plan, direction, method, msg, idx)
        elif "result" in msg or "error" in msg:
            if not broke:
                self._envelope.n += 1
            self.answers.response(direction, msg, idx)
        else:  # neither a request, a notification nor a response (rpc.has_a_shape)
            if not broke:
                self._envelope.n += 1
            self.rpc.unreadable[direction] += 1

    def _plan(self, direction: str, method: str, request: bool) -> Plan:
        """Build (once) the plan of ``method`` sent by ``direction`` under this revision."""
        spec, verdicts, held = _plan_method(self.rev, direction, method, request)
        # the row's handler, for a message of the kind the row routes (a request's handler
        # never gets a notification of the same method, nor the other way round)
        row = wire_table.messages().get(method)
        handler = wire_table.bound(row.route, self) \
            if spec is not None and row is not None and row.request == request else None
        groups = (self._entries[Reads.MESSAGE], *((held,) if held else ()))
        plan = self._plans[(direction, method, request)] = Plan(
            request, spec, verdicts, held, handler, self.store.tally(groups))
        return plan

    def _method_verdicts(self, plan: Plan, idx: int) -> schema.MethodSpec | None:
        """The method's definition (None: the message stops here), after the verdicts of the
        checks that read the method alone, decided once per direction and method."""
        if plan.held:  # every check held: counted with the message (_message)
            return plan.spec
        for meta, text in plan.verdicts:
            if text is None:
                self.store.bump(meta.rule)
            else:
                self.store.report(meta, idx, text)
        return plan.spec

    def _unknown_session(self, idx: int, sid: Any, what: str) -> None:
        """The agent named a session no response has named: SESS-12. While a session/new is
        still unanswered it may be announcing the new session before its response names it
        (no text of v1 or the seed orders the two, sdk-2.4.0 allows it), but a client cannot
        tell yet that it is its new session: a warning there. A session the client named
        itself in a request still open or answered with a result (a probe's invented id) is
        accepted: the agent took it for a session, and no text makes it answer an unknown
        session with an error ("MAY return an error", session-setup.mdx)."""
        if self.rpc.named_by_client(sid):
            return
        if any(r.method == Method.NEW_SESSION for r in self.rpc.open["c2a"].values()):
            self.store.run(offered.session_named_once_created, idx, what, sid)
            return
        self.machines.conn_event(ConnEvent.AGENT_NAMES_UNKNOWN_SESSION, Payload(idx),
                                 f"{what} names session {sid!r}")

    # --- requests ---------------------------------------------------------------------------
    def _request(self, plan: Plan, direction: str, method: str, msg: dict[str, Any], idx: int
                 ) -> None:
        req_id = msg["id"]
        if self.store.run(rpc.request_id_valid, idx, direction, method, req_id, self.rev):
            self.rpc.unreadable[direction] += 1
            return
        params = msg.get("params")
        sid = params.get("sessionId") if isinstance(params, dict) else None
        sid = sid if isinstance(sid, str) else None
        self.store.run(rpc.request_id_fresh, idx, self.rpc, direction, req_id)
        spec = self._method_verdicts(plan, idx)
        self.rpc.open[direction][req_id] = OpenRequest(
            method, idx, sid, replayed={} if direction == "c2a" and replay.asks_for_replay(
                method, params) else None,
            reopens=direction == "c2a" and method in replay.REOPENING
            and sid in self.machines.sessions)
        if direction == "c2a":
            self.answers.own.request(method, sid, idx)
        if spec is None:
            return
        what = Said((said.REQUEST, method, idx))
        self.shapes.schema(spec.params_def, params, idx, what, method)
        if method == Method.INITIALIZE:  # what INIT-18 reads of it at its answer
            self.rpc.open[direction][req_id].shape = offered.Validated(
                self.shapes.valid(spec.params_def, params),
                schema.omitted_defaults(spec.params_def, params, self.rev), self.rev)
        self.uses.request(direction, method, params, sid, idx, self.rpc.open[direction][req_id])
        # the schema checked the direction: a route is the table's (wire_table.MESSAGES)
        if plan.handler is not None:
            plan.handler(req_id, params, sid, idx, what)

    def initialize(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                   ) -> None:
        self.answers.told.client_caps = dict(capabilities.client_capabilities(
            params, self.answers.shape))
        self.shapes.findings(messages.initialize_request(params, self.rev), idx, what)
        self.machines.conn_event(ConnEvent.INITIALIZE, Payload(idx), what)

    def new_session(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                    ) -> None:
        self.rpc.open["c2a"][req_id].roots = capabilities.root_set(params)
        self.shapes.findings(messages.new_session_request(params, self.rev), idx, what)
        self.machines.conn_event(ConnEvent.SESSION_REQUESTED, Payload(idx), what)

    def reopen(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        self.rpc.open["c2a"][req_id].roots = capabilities.root_set(params)
        if sid in self.machines.sessions:
            # a new load: its replay comes before its own answer
            self.reopens.sent(self.machines.sessions[sid], sid, idx, self.machines.busy(sid))
            method = self.rpc.open["c2a"][req_id].method
            self.conversations.reopen_sent(sid, method, idx,
                                           replay.asks_for_whole_history(method, params))
        elif sid is not None:
            # a session of an earlier connection: known from its request on (replay included)
            self.machines.open(sid)

    def prompt(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        self.shapes.findings(messages.prompt_request(params, self.answers.prompt_caps, self.rev),
                             idx, what, sid)
        if sid is None or sid not in self.machines.sessions:
            self.machines.conn_event(ConnEvent.UNKNOWN_SESSION_NAMED, Payload(idx),
                                     f"{what} names session {sid!r}")
            return
        blocks = params.get("prompt") if isinstance(params, dict) else None
        self.conversations.close(sid)  # the client moved on from any replay
        self.rpc.open["c2a"][req_id].shape = capabilities.PromptShape.of(
            blocks, self.shapes.valid("PromptRequest", params),
            quiet=self.rpc.pending_prompts(sid) == [req_id]
            and not self.machines.sessions[sid].facts.busy()
            and self.machines.closes.live(sid))
        self.machines.session_event(sid, Event.PROMPT,
                                    Payload(idx, id=req_id, content_key=content_key(blocks),
                                       text_key=text_key(blocks)), what)
        self.machines.derived(sid, self.translate(Prompted(sid, req_id, idx, blocks)))
        self.reopens.prompted(sid, idx, blocks)

    def permission(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                   ) -> None:
        self.asks.permission(req_id, params, sid, idx, what)

    def elicitation(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str
                    ) -> None:
        self.asks.elicitation(req_id, params, sid, idx, what)

    def close(self, req_id: Any, params: Any, sid: str | None, idx: int, what: str) -> None:
        self.rpc.open["c2a"][req_id].active = sid in self.machines.sessions \
            and sid not in self.machines.closes.closed
        if sid is None or sid not in self.machines.sessions:
            return
        self.store.bump(CLOSE_CANCELS.rule)
        self.machines.closes.requested(sid, idx, self.rpc.pending_prompts(sid))
        self._cancel(sid, idx, what)

    def _cancel(self, sid: str, idx: int, what: str) -> None:
        self.machines.derived(sid, self.translate(Cancelled(sid)))
        self.machines.session_event(sid, Event.CANCEL, Payload(idx), what)
        sess = self.machines.sessions.get(sid)
        if self._record.turn_done is not None and sess is not None:
            sess.cancel_book.turn_done(idx, self._record.turn_done)
        self.reopens.cancelled(sess, sid)

    # --- notifications -------------------------------------------------------------------
    def _notification(self, plan: Plan, direction: str, method: str, msg: dict[str, Any],
                      idx: int) -> None:
        params = msg.get("params")
        # _method_verdicts' common case (counted in _message), without a call per notification
        spec = plan.spec if plan.held else self._method_verdicts(plan, idx)
        if direction == "c2a":
            self.rpc.notifications.append((method, idx))
        if spec is None:
            return
        what = Said((said.MESSAGE, method, idx))
        if self.shapes.validate:  # (a call per notification only when it validates)
            self.shapes.schema(spec.params_def, params, idx, what, method)
        if isinstance(params, dict) and plan.handler is not None:
            plan.handler(direction, params, params.get("sessionId"), idx, what)

    def cancel(self, direction: str, params: Any, sid: Any, idx: int, what: str) -> None:
        if sid not in self.machines.sessions:
            self.machines.conn_event(ConnEvent.UNKNOWN_SESSION_NAMED, Payload(idx),
                                     f"{what} names session {sid!r}")
            return
        self._cancel(sid, idx, what)

    def cancel_request(self, direction: str, params: Any, sid: Any, idx: int, what: str
                       ) -> None:
        """The sender withdraws one of its *own* open requests."""
        target = self.rpc.open[direction].get(params.get("requestId"))
        if target is None:
            return  # nothing open with that id: harmless (it may have been answered)
        target.withdrawn = True
        target.withdrawn_at = idx
        if direction == "c2a" and target.session is not None:
            self.machines.derived(target.session, self.translate(
                Withdrawn(target.session, params.get("requestId"))))
        if target.session in self.machines.sessions:
            event = (Event.PROMPT_CANCEL_REQUEST if direction == "c2a"
                     else Event.PERMISSION_WITHDRAWN)
            self.machines.session_event(target.session, event,
                                        Payload(idx, id=params["requestId"]), what)

    @property
    def update(self) -> Callable[[str, Any, Any, int, str], None]:
        """session/update's handler (``MessageHandlers.update``): the update route's own, bound
        once into the method's plan, so an update passes no frame of the router's."""
        return self.updates.route
