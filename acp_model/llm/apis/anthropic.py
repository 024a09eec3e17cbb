"""The Anthropic Messages API (``POST /v1/messages``, ``stream: true``), as claude-agent-acp and
other Claude Code based agents call it.

Streams are server-sent events: ``message_start``, per content block ``content_block_start`` /
``content_block_delta`` (``text_delta`` or ``input_json_delta``) / ``content_block_stop``, then
``message_delta`` with the ``stop_reason`` and ``message_stop``. A tool call is a ``tool_use``
block; its result comes back in the next request as a ``tool_result`` block of a user message.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from acp_model.llm.script import Fail, Reply, Stall, StopReply, Text, Tools
from acp_model.llm.tools import OfferedTool, offered_tools
from acp_model.llm.wire import (
    Gone,
    ModelRequest,
    ReplyContext,
    ResponsePart,
    find_tag,
    message_text,
    stall,
    stream_write,
)


def _is_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def offered(body: dict[str, Any]) -> tuple[OfferedTool, ...]:
    """The client tools of a request (server tools such as web search have no schema)."""
    return offered_tools([(t.get("name"), t.get("description"), t.get("input_schema") or {})
                          for t in body.get("tools") or [] if isinstance(t, dict)
                          and t.get("type", "custom") == "custom"])


class AnthropicMessages:
    name = "anthropic"
    routes = (("POST", "/v1/messages"),)

    def env(self, base_url: str) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "acp-model-scripted"}

    def parse(self, body: Any) -> ModelRequest:
        if not isinstance(body, dict):
            return ModelRequest(None)
        # the conversation only: Claude Code appends a "system" role message of its own
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)
                    and m.get("role") in ("user", "assistant")]
        tools = offered(body)
        model = str(body.get("model") or "model")
        tagged = [(i, tag) for i, m in enumerate(messages) if m.get("role") == "user"
                  and not _is_tool_result(m) and (tag := find_tag(message_text(m))) is not None]
        if not tools or not tagged or not messages:
            return ModelRequest(None, tools=tools, model=model)  # a side request
        at, tag = tagged[-1]
        last = messages[-1]
        if len(messages) - 1 == at:
            return ModelRequest(tag, 0, tools, model)
        if not _is_tool_result(last):
            return ModelRequest(None, tools=tools, model=model)  # e.g. a suggestion request
        rounds = sum(1 for m in messages[at + 1:] if _is_tool_result(m))
        return ModelRequest(tag, rounds, tools, model)

    async def other(self, request: web.Request) -> web.StreamResponse | None:
        if request.path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": 100})
        if request.path.rstrip("/").endswith("/v1/models"):
            return web.json_response({"data": [], "has_more": False})
        return None

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse:
        if isinstance(reply, Fail) and reply.failure != "dropped":
            await ctx.release(ResponsePart.FAIL)
            status, kind = (529, "overloaded_error") if reply.failure == "overloaded" \
                else (500, "api_error")
            return web.json_response({"type": "error", "error": {
                "type": kind, "message": "acp-model scripted failure"}}, status=status)
        await ctx.release(ResponsePart.START)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        msg_id = f"msg_acpm_{ctx.tag}_{ctx.step}"
        await _event(resp, "message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": req.model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 1}}})
        stop = "end_turn"
        if isinstance(reply, Tools):
            for k, call in enumerate(ctx.calls):
                await ctx.release(ResponsePart.TOOL, k)
                args = ctx.call_arguments(call)
                if isinstance(args, str):
                    args = {"input": args}
                await _event(resp, "content_block_start", {
                    "type": "content_block_start", "index": k, "content_block": {
                        "type": "tool_use", "id": f"toolu_acpm_{ctx.tag}_{ctx.step}_{k}",
                        "name": call.name, "input": {}}})
                await _event(resp, "content_block_delta", {
                    "type": "content_block_delta", "index": k,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}})
                await _event(resp, "content_block_stop", {"type": "content_block_stop",
                                                          "index": k})
            stop = "tool_use"
        elif isinstance(reply, Stall):
            await stall(ctx, lambda: _event(resp, "ping", {"type": "ping"}))
            await _text_block(resp, ctx, 1)
        elif isinstance(reply, Fail):  # dropped: one chunk, then the connection goes
            await ctx.release(ResponsePart.FAIL)
            await _event(resp, "content_block_start", {
                "type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}})
            await _delta(resp, 0, "the stream breaks here ")
            if request.transport is not None:
                request.transport.close()
            raise Gone
        else:
            await _text_block(resp, ctx, reply.chunks if isinstance(reply, Text) else 1)
            if isinstance(reply, StopReply):
                stop = reply.reason
        await ctx.release(ResponsePart.END)
        await _event(resp, "message_delta", {"type": "message_delta", "delta": {
            "stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 10}})
        await _event(resp, "message_stop", {"type": "message_stop"})
        await resp.write_eof()
        return resp


async def _event(resp: web.StreamResponse, event: str, data: dict[str, Any]) -> None:
    await stream_write(resp, f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())


async def _delta(resp: web.StreamResponse, index: int, text: str) -> None:
    await _event(resp, "content_block_delta", {
        "type": "content_block_delta", "index": index,
        "delta": {"type": "text_delta", "text": text}})


async def _text_block(resp: web.StreamResponse, ctx: ReplyContext, chunks: int) -> None:
    """A text block of ``chunks`` deltas, each released first."""
    await _event(resp, "content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": {"type": "text", "text": ""}})
    for n in range(chunks):
        await ctx.release(ResponsePart.TEXT, n)
        await _delta(resp, 0, f"chunk {n + 1} of {chunks}. ")
    await _event(resp, "content_block_stop", {"type": "content_block_stop", "index": 0})
