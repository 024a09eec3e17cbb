"""Every line the client sends: parsed, classified as JSON-RPC 2.0 says, and handed to the part
of the reference agent that handles its method. It owns the method tables, so the routing of
each wire message is written once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from acp_model.agents.reference.output import Output
from acp_model.agents.reference.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Batch,
    Ctx,
    RpcFailure,
)
from acp_model.agents.stdio import EOF, OVERSIZE

log = logging.getLogger("acp_model.agents.reference")

RequestHandler = Callable[[Ctx, Any], None]
NotificationHandler = Callable[[Any], None]


class Inbox:
    """Routes requests, notifications and responses; invalid objects get -32600 and a line
    that is no JSON -32700, and no message, however bad, stops the agent."""

    def __init__(self, out: Output, finished: asyncio.Event, *,
                 requests: Mapping[str, RequestHandler],
                 notifications: Mapping[str, NotificationHandler],
                 on_response: Callable[[dict[str, Any]], None],
                 ready: Callable[[], bool], before_ready: frozenset[str],
                 empty_batch_reply: Callable[[], bool]) -> None:
        self.out = out
        self.finished = finished  # set at the end of stdin
        self.requests = requests  # method -> handler
        self.notifications = notifications
        self.on_response = on_response  # a response to one of the agent's own requests
        self.ready = ready  # is the connection initialized?
        self.before_ready = before_ready  # the methods served before that
        self.empty_batch_reply = empty_batch_reply

    def on_input(self, item: object) -> None:
        """Entry point for every stdin line (called on the loop by the reader thread)."""
        if item is EOF:
            self.finished.set()
            return
        if item is OVERSIZE:
            self._parse_error("line too long")
            return
        assert isinstance(item, bytes)
        if not item.strip():
            return
        try:
            msg = orjson.loads(item)
        except orjson.JSONDecodeError:
            self._parse_error("invalid JSON")
            return
        try:
            if isinstance(msg, list):
                self._batch(msg)
            else:
                self.dispatch(msg, None)
        except Exception:  # never let one message kill the agent
            log.exception("internal error while dispatching")

    def _batch(self, msgs: list[Any]) -> None:
        if not msgs:
            self.out.reply_error(Ctx(None), INVALID_REQUEST, "empty batch")
            return
        batch = Batch(self.out.send, self.empty_batch_reply)
        for entry in msgs:
            self.dispatch(entry, batch)
        batch.close()

    def _parse_error(self, why: str) -> None:
        self.out.reply_error(Ctx(None), PARSE_ERROR, f"parse error: {why}")

    def _invalid(self, batch: Batch | None, request_id: Any, why: str) -> None:
        if batch is not None:
            batch.expect()
        self.out.reply_error(Ctx(request_id, batch), INVALID_REQUEST, f"invalid request: {why}")

    def dispatch(self, msg: Any, batch: Batch | None) -> None:
        """Classify one JSON-RPC object; invalid objects get -32600 as JSON-RPC 2.0 says."""
        if not isinstance(msg, dict):
            self._invalid(batch, None, "not an object")
            return
        rid = msg.get("id")
        id_ok = (
            rid is None or isinstance(rid, str) or (isinstance(rid, int) and type(rid) is not bool)
        )
        reply_id = rid if id_ok else None
        if "method" not in msg and ("result" in msg or "error" in msg):
            if msg.get("jsonrpc") == "2.0":
                self.on_response(msg)
            else:  # never answer a response, even a malformed one
                log.info("ignoring malformed response %r", rid)
        elif msg.get("jsonrpc") != "2.0":
            self._invalid(batch, reply_id, 'jsonrpc must be "2.0"')
        elif "method" in msg:
            method, params = msg["method"], msg.get("params")
            if not isinstance(method, str):
                self._invalid(batch, reply_id, "method must be a string")
            elif not id_ok:
                self._invalid(batch, None, "id must be a string, an integer or null")
            elif "params" in msg and not isinstance(params, dict | list):
                self._invalid(batch, reply_id, "params must be an object or an array")
            elif "id" in msg:
                self.handle_request(Ctx(rid, batch), method, params)
            else:
                self.handle_notification(method, params)
        else:
            self._invalid(batch, reply_id, "neither a request nor a response")

    def handle_request(self, ctx: Ctx, method: str, params: Any) -> None:
        if ctx.batch is not None:
            ctx.batch.expect()
        try:
            if method not in self.before_ready and not self.ready():
                raise RpcFailure(INVALID_REQUEST, "connection not initialized")
            handler = self.requests.get(method)
            if handler is None:
                raise RpcFailure(METHOD_NOT_FOUND, f"method not found: {method}")
            handler(ctx, params)
        except RpcFailure as exc:
            self.out.reply_error(ctx, exc.code, exc.message)
        except Exception:
            log.exception("internal error in %s", method)
            self.out.reply_error(ctx, INTERNAL_ERROR, "internal error")

    def handle_notification(self, method: str, params: Any) -> None:
        handler = self.notifications.get(method)
        if handler is None:
            log.info("ignoring notification %s", method)
            return
        handler(params)
