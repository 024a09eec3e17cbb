"""The JSON-RPC 2.0 layer of one connection: its bookkeeping and the rules decided on it.

Open requests per sender, the ids already answered, unreadable input that may earn an id-null
error, the batch in flight. The checks here decide the framing rules (RPC-01/02/04/07/09/10,
ENUM-02 for methods, CANCEL-02, the "answered twice" part of PROMPT-04 and PERM-12). Each is a
``@check(role=FINDING)`` returning ``None`` when the rule holds and a text saying what happened
otherwise; the monitor runs them in wire order and reports through their metadata.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acp_model.model import wire_table
from acp_model.model.answering import Answering
from acp_model.model.check import allowance, check
from acp_model.model.obligations import PERMISSION_ANSWERED, PROMPT_ANSWERED
from acp_model.model.vocab import UNREADABLE_CODES, Reads, Role
from acp_model.spec.schema import SEED, MethodSpec, null_request_ids
from acp_model.trace.format import Record
from acp_model.trace.methods import Method

PARTY = {"c2a": "client", "a2c": "agent"}
OTHER = {"c2a": "a2c", "a2c": "c2a"}
LIFECYCLE_REQUESTS = wire_table.lifecycle_requests()  # RPC-10


@dataclass(slots=True)
class OpenRequest:
    method: str
    idx: int
    session: str | None
    withdrawn: bool = False
    withdrawn_at: int = -1  # where the requester withdrew it ($/cancel_request)
    judged: bool = False  # its liveness verdict is out; a late answer is not re-reported
    batched: bool = False  # sent inside a batch: the batch rules (SHOULD) say it is answered
    # a request that asks for history replay: messageId -> family of the messages replayed
    replayed: dict[str, str] | None = None
    state_reported: bool = False  # a state_update for its session came while it was open
    # session/load or session/resume of a session this connection already knows: what it
    # replays of a quiet session is history, not new work of that session
    reopens: bool = False
    # what the checks of its answer read of the request as sent: a prompt's shape (INIT-11,
    # SESS-07) or the config option a set_config_option sets (V1-CONFIG-02), a session
    # request's root set (its cwd first: SDK-RESUME-02, SESS-17), whether a closed session
    # was live (SDK-CLOSE-04), a control's target (its noun, id) and how it had ended (SDK-TOOL-03)
    shape: Any = None
    roots: tuple[str, ...] = ()
    active: bool = True


@dataclass
class Rpc:
    """JSON-RPC bookkeeping of one connection, by the direction the request travelled."""

    open: dict[str, dict[Any, OpenRequest]] = field(
        default_factory=lambda: {"c2a": {}, "a2c": {}})
    answered: dict[str, dict[Any, str]] = field(default_factory=lambda: {"c2a": {}, "a2c": {}})
    # Unreadable input each side sent (garbage lines, invalid requests): each may earn a
    # -32700 / -32600 answer with id null.
    unreadable: dict[str, int] = field(default_factory=lambda: {"c2a": 0, "a2c": 0})
    # The client's notifications no id-null answer of the agent was put down to yet (method,
    # index), the newest last: what such an answer may be answering.
    notifications: deque[tuple[str, int]] = field(default_factory=lambda: deque(maxlen=32))
    batch_sent: bool = False
    notification_batch_sent: bool = False
    batch_requests: tuple[Any, ...] = ()  # ids of the requests in the client's last batch
    batch_size: int = 0
    batch_at: int = -1  # where the client's last batch was sent
    # The latest request of each side that got its answer (by where the request stands): a
    # peer that answers nothing sent after a request it owes is stuck on it, and what it
    # leaves unanswered after that is the same cause (wire order of the answers aside).
    last_answered: dict[str, int] = field(default_factory=lambda: {"c2a": -1, "a2c": -1})
    # sessions the client named in a request the agent answered with a result
    accepted_sessions: set[str] = field(default_factory=set)
    # session -> (where, answered where, when) of the latest answered client request naming it
    answered_at: dict[str, tuple[int, int, float]] = field(default_factory=dict)

    def named_by_client(self, sid: Any) -> bool:
        """Did the client name session ``sid`` in a request still open, or in one the agent
        answered with a result (it took the id for a session)?"""
        return sid in self.accepted_sessions or any(
            r.session == sid for r in self.open["c2a"].values())

    def pending_prompts(self, sid: str) -> list[Any]:
        """Ids of the session's prompts the agent has not answered yet."""
        return [rid for rid, req in self.open["c2a"].items()
                if req.method == Method.PROMPT and req.session == sid]

    def open_permissions(self, sid: str) -> list[Any]:
        """Ids of the session's permission requests no answer or verdict has settled."""
        return [rid for rid, req in self.open["a2c"].items()
                if req.method == Method.PERMISSION and req.session == sid
                and not req.judged]

    def withdrawn(self, req_id: Any) -> bool:
        """Did the agent withdraw its request ``req_id`` with ``$/cancel_request``?"""
        req = self.open["a2c"].get(req_id)
        return req is not None and req.withdrawn

    def client_batch(self, msg: list[Any], idx: int = -1) -> None:
        """The client sent the batch ``msg`` at ``idx``: what an id-null answer may answer."""
        self.batch_at = idx
        self.batch_sent = bool(msg)
        self.notification_batch_sent = bool(msg) and all(
            isinstance(m, dict) and "method" in m and "id" not in m for m in msg)
        self.batch_requests = tuple(m["id"] for m in msg if isinstance(m, dict)
                                    and "method" in m and "id" in m)
        self.batch_size = len(msg)

    def mark_batched(self, direction: str) -> None:
        """The requests of the batch just opened were sent inside it."""
        for rid in self.batch_requests:
            req = self.open[direction].get(rid)
            if req is not None:
                req.batched = True

    def close(self, requester: str, req_id: Any, req: OpenRequest, *, accepted: bool = False,
              at: int = -1) -> None:
        """``req`` got its answer at index ``at`` (``accepted``: a result, not an error)."""
        self.answered[requester][req_id] = req.method
        if accepted and requester == "c2a" and req.session is not None:
            self.accepted_sessions.add(req.session)
        if requester == "c2a" and req.session is not None \
                and at >= self.answered_at.get(req.session, (-1, -1, 0.0))[1]:
            self.answered_at[req.session] = (req.idx, at, time.monotonic())
        self.last_answered[requester] = max(self.last_answered[requester], req.idx)

    def queued_behind(self, direction: str, req: OpenRequest, looked: int, deadline: float
                      ) -> bool:
        """A client request sent while an older one naming its session was open, that older
        one answered at or after the client's last look (index ``looked``), or less than a
        ``deadline`` ago: an agent may take a session's requests one at a time (the text does
        not forbid it), so ``req`` had no deadline of its own once it could be taken up, and
        its silence proves nothing."""
        older = self.answered_at.get(req.session or "") if direction == "c2a" else None
        return older is not None and older[0] < req.idx and (
            older[1] >= looked or time.monotonic() - older[2] < deadline)

    def silenced_by(self, requester: str, req: OpenRequest) -> OpenRequest | None:
        """An older request of ``requester`` still unanswered, and none sent after it
        answered: ``req`` went unanswered for the same cause (one verdict, on the first
        request the other side got stuck on)."""
        answered_up_to = self.last_answered[requester]
        for older in self.open[requester].values():
            if answered_up_to < older.idx < req.idx:
                return older
        return None

    def rejected_batch(self, direction: str) -> list[Any]:
        """The requests of a batch the receiver answered as a whole with one id-null error:
        that error is their answer (one cause, one verdict); returns their ids."""
        requester = OTHER[direction]
        closed = []
        for rid in self.batch_requests:
            req = self.open[requester].pop(rid, None)
            if req is not None:
                self.close(requester, rid, req)
                closed.append(rid)
        self.batch_requests = ()
        return closed


def valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int)
                                                        and not isinstance(value, bool))


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


# --- lines -----------------------------------------------------------------------------------

@check("RPC-02", role=Role.FINDING, reads=[Reads.RECORD])
def utf8(record: Record) -> str | None:
    """Every message is UTF-8."""
    if record.note == "invalid-utf8":
        return f"{PARTY[record.dir]} wrote bytes that are not UTF-8"
    return None


@check("RPC-04", role=Role.FINDING, reads=[Reads.RECORD])
def only_messages(record: Record) -> str | None:
    """Nothing but JSON-RPC messages is written to the protocol stream."""
    if record.raw is not None and record.note != "invalid-utf8":
        return (f"{PARTY[record.dir]} wrote a line that is not a JSON-RPC message: "
                f"{_clip(record.raw)!r}")
    return None


# --- batches ---------------------------------------------------------------------------------

@allowance("RPC-06")  # every batch the peers send exercises the permission to batch
@check("RPC-07", role=Role.FINDING, reads=[Reads.BATCH])
def batch_not_empty(rpc: Rpc, direction: str, msg: list[Any]) -> str | None:
    """A batch has at least one element."""
    if not msg and not (direction == "a2c" and rpc.notification_batch_sent):
        return "an empty batch array is not a valid message"
    return None


@check("RPC-09", role=Role.FINDING, reads=[Reads.BATCH])
def no_empty_batch_reply(rpc: Rpc, direction: str, msg: list[Any]) -> str | None:
    """A batch of notifications gets no response at all, not an empty array."""
    if not msg and direction == "a2c" and rpc.notification_batch_sent:
        return (f"the agent answered a batch of notifications (#{rpc.batch_at}) with an empty "
                "array (such a batch gets no response at all)")
    return None


@check("RPC-10", role=Role.FINDING, reads=[Reads.BATCH_ELEMENT])
def lifecycle_not_batched(element: Any) -> str | None:
    """initialize, session/new, session/prompt, session/resume and auth/login are not batched."""
    if isinstance(element, dict) and element.get("method") in LIFECYCLE_REQUESTS \
            and "id" in element:
        return f"{element['method']} was sent inside a batch"
    return None


# --- envelopes -------------------------------------------------------------------------------
# Every message reaches these (``Reads.MESSAGE``), as one entry of the router's plan: each says
# nothing of what another reports (a message that is no object breaks only ``is_object``).

@check("RPC-01", role=Role.FINDING, reads=[Reads.MESSAGE])
def is_object(direction: str, msg: Any) -> str | None:
    """A JSON-RPC message is an object."""
    if not isinstance(msg, dict):
        return f"{PARTY[direction]} sent a {type(msg).__name__}, not a JSON-RPC object"
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.MESSAGE])
def version_field(direction: str, msg: dict[str, Any]) -> str | None:
    """Every message carries "jsonrpc": "2.0"."""
    if isinstance(msg, dict) and msg.get("jsonrpc") != "2.0":
        return f"{PARTY[direction]} message lacks \"jsonrpc\": \"2.0\""
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.MESSAGE])
def method_is_string(direction: str, msg: dict[str, Any]) -> str | None:
    """A method name is a string."""
    method = msg.get("method") if isinstance(msg, dict) else None
    if method is not None and not isinstance(method, str):
        return f"{PARTY[direction]} message has a non-string method"
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.MESSAGE])
def has_a_shape(direction: str, msg: dict[str, Any]) -> str | None:
    """A message is a request, a notification or a response."""
    if isinstance(msg, dict) and "method" not in msg and "result" not in msg and "error" not in msg:
        return (f"{PARTY[direction]} message is neither a request, a notification nor a "
                "response")
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.REQUEST_ID])
def request_id_valid(direction: str, method: str, req_id: Any, rev: str = SEED) -> str | None:
    """A request id is a string or an integer (or null, where the revision's RequestId admits
    it: the seed's does, sdk-2.4.0's does not)."""
    if req_id is None and not null_request_ids(rev):
        return (f"{PARTY[direction]} sent {method} with id null; in this revision a request id "
                "is a string or an integer ($defs.RequestId: 'Unlike base JSON-RPC, it MUST NOT "
                "be null')")
    if not valid_id(req_id):
        return (f"{PARTY[direction]} sent {method} with id {req_id!r}; an id is a string, an "
                "integer or null")
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.REQUEST_ID])
def request_id_fresh(rpc: Rpc, direction: str, req_id: Any) -> str | None:
    """A request id is not reused while the earlier request is still open."""
    opened = rpc.open[direction].get(req_id)
    if opened is not None:
        return f"request id {req_id!r} is reused while the earlier {opened.method} is still open"
    return None


@check("ENUM-02", role=Role.FINDING, reads=[Reads.REQUEST, Reads.NOTIFICATION])
def method_defined(direction: str, method: str, spec: MethodSpec | None) -> str | None:
    """Methods are the v2 ones or extensions (``_`` or ``$/`` prefixed)."""
    if spec is None and not (method.startswith("_") or method.startswith("$/")):
        return (f"{PARTY[direction]} used method {method!r}, which v2 does not define and which "
                "lacks the _ prefix of extensions")
    return None


@check("ACPM-SCHEMA", role=Role.FINDING, reads=[Reads.REQUEST, Reads.NOTIFICATION])
def method_direction(direction: str, method: str, spec: MethodSpec | None) -> str | None:
    """Each side sends only the methods the schema gives it (``x-side``)."""
    if spec is not None and direction not in spec.directions:
        return f"{method} is not a method the {PARTY[direction]} sends"
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.REQUEST])
def notification_without_id(direction: str, method: str, spec: MethodSpec) -> str | None:
    """A notification method is sent without an id."""
    if spec.notification:
        return f"{method} is a notification but was sent with an id"
    return None


# --- responses -------------------------------------------------------------------------------

@check("RPC-01", role=Role.FINDING, reads=[Reads.RESPONSE])
def response_id_valid(direction: str, req_id: Any) -> str | None:
    """A response id is a string, an integer or null."""
    if not valid_id(req_id):
        return (f"{PARTY[direction]} answered with id {req_id!r}; an id is a string, an "
                "integer or null")
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.RESPONSE])
def result_xor_error(direction: str, msg: dict[str, Any]) -> str | None:
    """A response carries exactly one of result or error."""
    if "result" in msg and "error" in msg:
        return f"{PARTY[direction]} response carries both result and error"
    return None


# An answer given twice breaks the obligation the first one discharged: the one the method's
# wire-table row names (``Message.owed``), else RPC-01's "exactly one response".

def _answered_before(rpc: Rpc, direction: str, req_id: Any) -> tuple[str | None, Any]:
    """The method of the request ``req_id`` already answered by this side, and its row's
    obligation."""
    earlier = rpc.answered[OTHER[direction]].get(req_id)
    return earlier, wire_table.owed(earlier)


@check("PROMPT-04", role=Role.FINDING, reads=[Reads.ANSWERED_AGAIN])
def prompt_answered_once(rpc: Rpc, direction: str, req_id: Any) -> str | None:
    """Each session/prompt gets exactly one response."""
    earlier, owed = _answered_before(rpc, direction, req_id)
    if owed is PROMPT_ANSWERED:
        return f"{earlier} id {req_id!r} was answered twice"
    return None


@check("PERM-12", role=Role.FINDING, reads=[Reads.ANSWERED_AGAIN])
def permission_answered_once(rpc: Rpc, direction: str, req_id: Any) -> str | None:
    """Each permission request gets exactly one response."""
    if _answered_before(rpc, direction, req_id)[1] is PERMISSION_ANSWERED:
        return f"permission request id {req_id!r} was answered twice"
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.ANSWERED_AGAIN])
def answered_once(rpc: Rpc, direction: str, req_id: Any) -> str | None:
    """Every other request (no obligation of its own) gets exactly one response."""
    earlier, owed = _answered_before(rpc, direction, req_id)
    if earlier is not None and owed is None:
        return f"{earlier} id {req_id!r} was answered twice"
    return None


@check("RPC-01", role=Role.FINDING, reads=[Reads.RESPONSE])
def answers_open_request(rpc: Rpc, direction: str, req_id: Any) -> str | None:
    """A response answers an open request."""
    if req_id is not None and req_id not in rpc.answered[OTHER[direction]]:
        return (f"{PARTY[direction]} answered id {req_id!r}, which matches no open "
                "request")
    return None


def _error_code(msg: dict[str, Any]) -> Any:
    error = msg.get("error")
    return error.get("code") if isinstance(error, dict) else None


def advertises(method: str, capabilities: Any) -> bool:
    """Does a peer's capabilities ``_meta`` (extensibility.mdx §Advertising Custom
    Capabilities) name the namespace of the custom method ``method``?"""
    meta = capabilities.get("_meta") if isinstance(capabilities, dict) else None
    if not isinstance(meta, dict) or not meta:
        return False
    namespace = method.lstrip("_").split("/", 1)[0]
    return bool(namespace) and namespace in json.dumps(meta)


@check("ENUM-12", role=Role.FINDING, reads=[Reads.ANSWER])
def custom_request_unrecognised(a: Answering) -> str | None:
    """A custom request the agent gave no sign of knowing is answered -32601, not with a
    result."""
    method = a.method
    if a.direction == "a2c" and method.startswith("_") and not a.has_error \
            and not advertises(method, a.told.agent_caps):
        return (f"the agent answered the custom request {method} with a result, but its "
                "capabilities' _meta advertise no such extension: an unrecognised custom "
                "method should get the standard -32601 \"Method not found\" error")
    return None


def answered_notification(rpc: Rpc, msg: dict[str, Any]) -> tuple[str, int] | None:
    """Which of the client's notifications an id-null answer of the agent answers, where that
    is provable: the one its error ``data`` names (codex-acp names the method it did not
    find), or the newest one when all it may answer are of one method. It may answer those
    sent after the newest request the agent answered (one sent before that was read, and
    left unanswered, by then). None: ambiguous (it is still an answered notification,
    RPC-09, but not provably a cancel's)."""
    sent = [n for n in rpc.notifications if n[1] > rpc.last_answered["c2a"]]
    if not sent:
        return None
    error = msg.get("error")
    data = error.get("data") if isinstance(error, dict) else None
    named = data.get("method") if isinstance(data, dict) else data
    if isinstance(named, str):
        return next((n for n in reversed(sent) if n[0] == named), None)
    return sent[-1] if len({m for m, _ in sent}) == 1 else None


def _cancel_answered(rpc: Rpc, direction: str, msg: dict[str, Any]) -> tuple[str, int] | None:
    """The session/cancel notification an id-null answer of the agent provably answers."""
    if direction != "a2c" or not _null_answer(rpc, direction, msg) \
            or _error_code(msg) in UNREADABLE_CODES:
        return None
    which = answered_notification(rpc, msg)
    return which if which is not None and which[0] == Method.CANCEL else None


@check("CANCEL-02", role=Role.FINDING, reads=[Reads.RESPONSE])
def cancel_not_answered(rpc: Rpc, direction: str, msg: dict[str, Any]) -> str | None:
    """The agent never answers the session/cancel notification."""
    cancel = _cancel_answered(rpc, direction, msg)
    if cancel is not None:
        return f"the agent answered the session/cancel notification #{cancel[1]}"
    return None


def _null_answer(rpc: Rpc, direction: str, msg: dict[str, Any]) -> bool:
    """An id-null response that no request explains (id null was never opened)."""
    return msg.get("id") is None and None not in rpc.answered[OTHER[direction]]


def _id_said(msg: dict[str, Any]) -> str:
    """How a response without a request id says so: ``id: null``, or no ``id`` member at all
    (which JSON-RPC 2.0 §5 requires of every response)."""
    return "id null" if "id" in msg else "no id member (a response must have one)"


@check("RPC-09", role=Role.FINDING, reads=[Reads.RESPONSE])
def notifications_unanswered(rpc: Rpc, direction: str, msg: dict[str, Any]) -> str | None:
    """Notifications are never answered, not even within a batch; an id-null error only
    answers unreadable input (or a batch that held a request)."""
    if not _null_answer(rpc, direction, msg):
        return None
    party, requester = PARTY[direction], OTHER[direction]
    code = _error_code(msg)
    if code in UNREADABLE_CODES:
        if rpc.unreadable[requester] > 0:
            return None  # the answer to unreadable input
        if rpc.batch_sent:
            if not rpc.notification_batch_sent:
                return None  # a rejected batch holding a request is ACPM-BATCH
            return (f"{party} answered a valid batch of {rpc.batch_size} notification(s) and "
                    f"no request (#{rpc.batch_at}) with error {code} and {_id_said(msg)}: it "
                    "replied to "
                    "notifications, which no receiver does, not even within a batch (an "
                    "all-notification batch gets no response at all)")
        return (f"{party} sent error {code} with {_id_said(msg)} although nothing unreadable "
                "was sent: it answered a notification")
    if _cancel_answered(rpc, direction, msg) is not None:
        return None  # CANCEL-02 says it
    which = answered_notification(rpc, msg) if direction == "a2c" else None
    named = f" ({which[0]} #{which[1]})" if which is not None else ""
    return (f"{party} sent a response with {_id_said(msg)}, i.e. it answered a "
            f"notification{named}")


@check("ACPM-BATCH", role=Role.FINDING, reads=[Reads.RESPONSE])
def batch_answered_per_request(rpc: Rpc, direction: str, msg: dict[str, Any]) -> str | None:
    """A valid batch is answered with an array of responses, one per request (none for
    notifications), not with one error for the whole batch."""
    if not _null_answer(rpc, direction, msg) or not rpc.batch_sent \
            or rpc.notification_batch_sent:  # a batch of notifications only: RPC-09
        return None
    code = _error_code(msg)
    if code not in UNREADABLE_CODES or rpc.unreadable[OTHER[direction]] > 0:
        return None
    requests = len(rpc.batch_requests)
    return (f"{PARTY[direction]} answered a valid batch of {requests} request(s) and "
            f"{rpc.batch_size - requests} notification(s) (#{rpc.batch_at}) with one error "
            f"{code} and "
            f"{_id_said(msg)}: a batch gets an array with a response for each request and "
            "none for notifications (transports.mdx: ACP follows the JSON-RPC 2.0 batch "
            "rules)")


def batch_left_unanswered(req: OpenRequest, req_id: Any) -> str:
    """What an unanswered request sent inside a batch breaks: the batch rules, whose "a
    Response object SHOULD exist for each Request object" is more specific than the MUST of
    a lone request (JSON-RPC 2.0 §6), so it is ACPM-BATCH at SHOULD strength, once per
    batch (an agent that ignores batches leaves all their requests unanswered: one cause)."""
    return ("a batch gets an array with a response for each request (transports.mdx: ACP "
            f"follows the JSON-RPC 2.0 batch rules), but the agent never answered {req.method} "
            f"(id {req_id!r}) of the batch #{req.idx}")


def settle_null_answer(rpc: Rpc, direction: str, msg: dict[str, Any]) -> None:
    """Bookkeeping after an id-null response was judged."""
    which = answered_notification(rpc, msg) if direction == "a2c" else None
    if which is not None and _error_code(msg) not in UNREADABLE_CODES:
        rpc.notifications.remove(which)  # answered once: a later answer is another's
    if _error_code(msg) not in UNREADABLE_CODES:
        return
    requester = OTHER[direction]
    if rpc.unreadable[requester] > 0:
        rpc.unreadable[requester] -= 1
    elif rpc.batch_sent:
        rpc.batch_sent = rpc.notification_batch_sent = False
