"""Build wire traces by hand: tests, notebooks and explorer witnesses write them the same way.

Each method appends one trace record (a real JSON-RPC message in the trace format) and returns
the builder, so a scenario reads like the sequence diagram it describes::

    t = TraceBuilder().handshake().new_session("s1")
    t.prompt("s1", 3).accepted(3).user_message("s1").running("s1").idle("s1", "end_turn")

The builder speaks v2's vocabulary. v1's own messages are ``t.v1.*``
(``t.v1.handshake().v1.new_session("s1")``), bare JSON-RPC framing for what neither vocabulary
names (batches, malformed lines, unknown methods) is ``t.rpc.*``; both return the builder, so a
chain goes on. The records with their id counters are ``t.log`` (``t.records`` is its list).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_model.trace.dialect import initialize_params
from acp_model.trace.format import Record, write_trace

CLIENT = {"name": "acp-model", "version": "0"}  # the client of the traces it builds
DEFAULT_CAPS = {"session": {"prompt": {"image": {}, "audio": {}, "embeddedContext": {}}}}


class RecordLog:
    """The records of one trace and the counters that number its requests and messages, so
    ids stay unique however the builder's writers interleave."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self._next_id = 100
        self._next_msg = 0

    def append(self, record: Record) -> None:
        self.records.append(record)

    def fresh_id(self) -> int:
        """A request id no earlier generated one used (they count up from 101)."""
        self._next_id += 1
        return self._next_id

    def message_id(self, prefix: str) -> str:
        self._next_msg += 1
        return f"{prefix}_{self._next_msg}"

    def __len__(self) -> int:
        return len(self.records)

    @property
    def last(self) -> int:
        """Index of the most recent record (what violations point at)."""
        return len(self.records) - 1

    def write(self, path: str | Path) -> Path:
        write_trace(path, self.records)
        return Path(path)


class JsonRpc:
    """Bare JSON-RPC 2.0 framing, reached as ``t.rpc``: for messages the vocabulary has no
    method for. Each call appends one record and returns the builder."""

    def __init__(self, builder: TraceBuilder) -> None:
        self._builder = builder
        self._log = builder.log

    def c2a(self, msg: Any) -> TraceBuilder:
        self._log.append(Record("c2a", msg=msg))
        return self._builder

    def a2c(self, msg: Any) -> TraceBuilder:
        self._log.append(Record("a2c", msg=msg))
        return self._builder

    def raw(self, direction: str, text: str, note: str | None = None, *, probe: bool = False
            ) -> TraceBuilder:
        """A line as written, parseable or not."""
        self._log.append(Record(direction, raw=text, note=note, probe=probe))
        return self._builder

    def request(self, direction: str, method: str, params: Any, req_id: Any = None) -> TraceBuilder:
        rid = self._log.fresh_id() if req_id is None else req_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        return self.c2a(msg) if direction == "c2a" else self.a2c(msg)

    def notify(self, direction: str, method: str, params: Any) -> TraceBuilder:
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        return self.c2a(msg) if direction == "c2a" else self.a2c(msg)

    def result(self, direction: str, req_id: Any, result: Any) -> TraceBuilder:
        msg = {"jsonrpc": "2.0", "id": req_id, "result": result}
        return self.c2a(msg) if direction == "c2a" else self.a2c(msg)

    def error(self, direction: str, req_id: Any, code: int, message: str = "error"
              ) -> TraceBuilder:
        msg = {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}
        return self.c2a(msg) if direction == "c2a" else self.a2c(msg)


class V1Writer:
    """v1's own messages, reached as ``t.v1``: v1 has no acknowledgement or state updates (its
    turn is the prompt and its response), and its handshake, session and updates have their own
    shapes. Each call returns the builder: ``t.v1.handshake().v1.new_session("s1")``."""

    def __init__(self, builder: TraceBuilder) -> None:
        self._builder = builder
        self._rpc = builder.rpc

    def handshake(self, prompt_caps: Any = None, *, agent_caps: Any = None,
                  client_caps: Any = None) -> TraceBuilder:
        """v1's initialize exchange (protocolVersion 1, ``agentCapabilities``); ``agent_caps``
        adds to the agent's capabilities (``{"loadSession": True}``), ``client_caps`` are the
        client's."""
        params = initialize_params(1, CLIENT)
        if client_caps is not None:
            params["clientCapabilities"] = client_caps
        self._rpc.request("c2a", "initialize", params, 0)
        return self._rpc.result("a2c", 0, {
            "protocolVersion": 1, "authMethods": [],
            "agentCapabilities": {"loadSession": False, "promptCapabilities": prompt_caps or {},
                                  **(agent_caps or {})},
            "agentInfo": {"name": "agent", "version": "1"}})

    def new_session(self, sid: str, req_id: Any = None, cwd: str = "/tmp/project"
                    ) -> TraceBuilder:
        rid = self._builder.log.fresh_id() if req_id is None else req_id
        self._rpc.request("c2a", "session/new", {"cwd": cwd, "mcpServers": []}, rid)
        return self._rpc.result("a2c", rid, {"sessionId": sid})

    def chunk(self, sid: str, text: str = "ok", kind: str = "agent_message_chunk"
              ) -> TraceBuilder:
        return self._builder.update(sid, {"sessionUpdate": kind,
                                          "content": {"type": "text", "text": text}})

    def tool_call(self, sid: str, tool_call_id: str, title: str = "Edit",
                  status: str = "pending") -> TraceBuilder:
        return self._builder.update(sid, {"sessionUpdate": "tool_call",
                                          "toolCallId": tool_call_id, "title": title,
                                          "status": status})

    def permission(self, sid: str, req_id: Any, tool_call_id: str) -> TraceBuilder:
        return self._rpc.request("a2c", "session/request_permission", {
            "sessionId": sid, "toolCall": {"toolCallId": tool_call_id},
            "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]},
            req_id)

    def ended(self, req_id: Any, reason: str = "end_turn") -> TraceBuilder:
        """The prompt's response, which ends v1's turn with a stop reason."""
        return self._rpc.result("a2c", req_id, {"stopReason": reason})


def through_v1(method: Callable[..., TraceBuilder]) -> Callable[..., TraceBuilder]:
    """A :class:`V1Writer` method called the way every other writer is, ``write(builder, ...)``
    (the wire table's rows hold writers of both vocabularies)."""

    @functools.wraps(method)
    def write(builder: TraceBuilder, *args: Any, **kw: Any) -> TraceBuilder:
        return method(builder.v1, *args, **kw)

    return write


class TraceBuilder:
    """v2's messages by name; ids and message ids are generated unless given."""

    def __init__(self) -> None:
        self.log = RecordLog()
        self.records = self.log.records  # the same list: what the builder wrote so far
        self.rpc = JsonRpc(self)
        self.v1 = V1Writer(self)

    # --- connection ----------------------------------------------------------------------
    def initialize(self, req_id: Any = 0, client_caps: Any = None) -> TraceBuilder:
        """The client's v2 initialize; ``client_caps``: its capabilities (none: empty)."""
        return self.rpc.request("c2a", "initialize",
                                initialize_params(2, CLIENT, client_caps), req_id)

    def initialized(self, req_id: Any = 0, *, version: int = 2,
                    capabilities: Any = DEFAULT_CAPS) -> TraceBuilder:
        result: dict[str, Any] = {"protocolVersion": version,
                                  "info": {"name": "agent", "version": "1"}}
        if capabilities is not None:
            result["capabilities"] = capabilities
        return self.rpc.result("a2c", req_id, result)

    def handshake(self, client_caps: Any = None, **kw: Any) -> TraceBuilder:
        return self.initialize(client_caps=client_caps).initialized(**kw)

    def new_session(self, sid: str, req_id: Any = None, cwd: str = "/tmp/project"
                    ) -> TraceBuilder:
        rid = self.log.fresh_id() if req_id is None else req_id
        self.rpc.request("c2a", "session/new", {"cwd": cwd}, rid)
        return self.rpc.result("a2c", rid, {"sessionId": sid})

    def sync(self, req_id: Any = None) -> TraceBuilder:
        """A client request the agent answers at once: proves it read everything before."""
        rid = self.log.fresh_id() if req_id is None else req_id
        self.rpc.request("c2a", "_acp_model/sync", {}, rid)
        return self.rpc.error("a2c", rid, -32601, "Method not found")

    # --- prompts ---------------------------------------------------------------------------
    def prompt(self, sid: str, req_id: Any, text: str = "hello",
               blocks: list[dict[str, Any]] | None = None) -> TraceBuilder:
        prompt = blocks if blocks is not None else [{"type": "text", "text": text}]
        return self.rpc.request("c2a", "session/prompt", {"sessionId": sid, "prompt": prompt},
                                req_id)

    def accepted(self, req_id: Any, result: Any = None) -> TraceBuilder:
        return self.rpc.result("a2c", req_id, {} if result is None else result)

    def rejected(self, req_id: Any, code: int = -32603) -> TraceBuilder:
        return self.rpc.error("a2c", req_id, code)

    def cancel(self, sid: str) -> TraceBuilder:
        return self.rpc.notify("c2a", "session/cancel", {"sessionId": sid})

    def turn_done(self, at: int) -> TraceBuilder:
        """The fuzzer's fact on the last record (a cancel's write): its scripted model had
        released the session's turn's whole final response after message #``at``."""
        self.log.records[-1] = self.log.records[-1]._replace(turn_done=at)
        return self

    def model_asked(self, *sids: str) -> TraceBuilder:
        """The fuzzer's fact on the last record: the agent asked the model for those sessions'
        turns since the record before."""
        self.log.records[-1] = self.log.records[-1]._replace(model_asked=sids)
        return self

    def cancel_request(self, direction: str, req_id: Any) -> TraceBuilder:
        return self.rpc.notify(direction, "$/cancel_request", {"requestId": req_id})

    # --- session updates -------------------------------------------------------------------
    def update(self, sid: str, update: dict[str, Any]) -> TraceBuilder:
        return self.rpc.notify("a2c", "session/update", {"sessionId": sid, "update": update})

    def state(self, sid: str, state: str, reason: Any = None, *, with_reason: bool = False
              ) -> TraceBuilder:
        upd: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
        if reason is not None or with_reason:
            upd["stopReason"] = reason
        return self.update(sid, upd)

    def running(self, sid: str) -> TraceBuilder:
        return self.state(sid, "running")

    def requires_action(self, sid: str) -> TraceBuilder:
        return self.state(sid, "requires_action")

    def idle(self, sid: str, reason: Any = None) -> TraceBuilder:
        return self.state(sid, "idle", reason)

    def user_message(self, sid: str, message_id: str | None = None, text: str = "hello"
                     ) -> TraceBuilder:
        return self.update(sid, {"sessionUpdate": "user_message",
                                 "messageId": message_id or self.log.message_id("user"),
                                 "content": [{"type": "text", "text": text}]})

    def user_message_chunk(self, sid: str, message_id: str | None = None, text: str = "hello"
                           ) -> TraceBuilder:
        return self.update(sid, {"sessionUpdate": "user_message_chunk",
                                 "messageId": message_id or self.log.message_id("user"),
                                 "content": {"type": "text", "text": text}})

    def agent_message(self, sid: str, message_id: str | None = None, text: str = "ok",
                      chunk: bool = False) -> TraceBuilder:
        content: Any = {"type": "text", "text": text}
        return self.update(sid, {
            "sessionUpdate": "agent_message_chunk" if chunk else "agent_message",
            "messageId": message_id or self.log.message_id("agent"),
            "content": content if chunk else [content]})

    def tool(self, sid: str, tool_call_id: str, status: str | None = None, **fields: Any
             ) -> TraceBuilder:
        upd: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": tool_call_id}
        if status is not None:
            upd["status"] = status
        upd.update(fields)
        return self.update(sid, upd)

    def tool_chunk(self, sid: str, tool_call_id: str, text: str = "progress") -> TraceBuilder:
        return self.update(sid, {"sessionUpdate": "tool_call_content_chunk",
                                 "toolCallId": tool_call_id,
                                 "content": {"type": "content",
                                             "content": {"type": "text", "text": text}}})

    def usage(self, sid: str, used: int = 10, size: int = 100, currency: str = "USD"
              ) -> TraceBuilder:
        return self.update(sid, {"sessionUpdate": "usage_update", "used": used, "size": size,
                                 "cost": {"amount": 0.01, "currency": currency}})

    # --- permissions -----------------------------------------------------------------------
    def permission(self, sid: str, req_id: Any, tool_call_id: str | None = None
                   ) -> TraceBuilder:
        params: dict[str, Any] = {
            "sessionId": sid, "title": "Run the tool?",
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ]}
        if tool_call_id is not None:
            params["subject"] = {"type": "tool_call", "toolCall": {"toolCallId": tool_call_id}}
        return self.rpc.request("a2c", "session/request_permission", params, req_id)

    def answer(self, req_id: Any, outcome: str = "allow") -> TraceBuilder:
        """Client answer: ``allow``/``reject`` select an option, ``cancelled`` the outcome."""
        if outcome in ("allow", "reject"):
            body = {"outcome": {"outcome": "selected", "optionId": outcome}}
        else:
            body = {"outcome": {"outcome": outcome}}
        return self.rpc.result("c2a", req_id, body)

    def answer_error(self, req_id: Any, code: int = -32800) -> TraceBuilder:
        return self.rpc.error("c2a", req_id, code, "Cancelled")

    # --- elicitations ----------------------------------------------------------------------
    def elicitation(self, sid: str, req_id: Any, tool_call_id: str | None = None
                    ) -> TraceBuilder:
        """A session-scoped form elicitation (optionally tied to a tool call)."""
        params: dict[str, Any] = {
            "sessionId": sid, "mode": "form", "message": "Which branch?",
            "requestedSchema": {"type": "object",
                                "properties": {"branch": {"type": "string"}},
                                "required": ["branch"]}}
        if tool_call_id is not None:
            params["toolCallId"] = tool_call_id
        return self.rpc.request("a2c", "elicitation/create", params, req_id)

    def elicitation_answer(self, req_id: Any, action: str = "accept") -> TraceBuilder:
        """Client answer to an elicitation: ``accept`` (with content), ``decline``,
        ``cancel``."""
        body: dict[str, Any] = {"action": action}
        if action == "accept":
            body["content"] = {"branch": "main"}
        return self.rpc.result("c2a", req_id, body)
