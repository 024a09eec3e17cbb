"""The OpenAI Chat Completions API (``POST /v1/chat/completions``), as qwen-code calls it.

A streamed reply is server-sent ``data:`` lines of ``chat.completion.chunk`` objects: deltas of
the assistant's ``content`` or of its ``tool_calls`` (name and arguments), a last chunk with the
``finish_reason`` (``stop``, ``tool_calls``, ``length``) and usage, then ``data: [DONE]``. A
tool's result comes back in the next request as a ``tool`` message. Requests with
``stream: false`` (an agent's side questions) get one ``chat.completion`` object.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from acp_model.llm.script import Fail, Reply, Stall, StopReply, Text, Tools
from acp_model.llm.tools import OfferedTool, offered_tools
from acp_model.llm.wire import (
    Gone,
    ModelRequest,
    OpenAIEndpoints,
    ReplyContext,
    ResponsePart,
    find_tag,
    keep_alive,
    message_text,
    stream_write,
)


def offered(body: dict[str, Any]) -> tuple[OfferedTool, ...]:
    """The function tools of a request: name, description and ``parameters`` schema."""
    raw = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            raw.append((fn.get("name"), fn.get("description"), fn.get("parameters") or {}))
    return offered_tools(raw)


class OpenAIChat(OpenAIEndpoints):
    name = "openai-chat"
    routes = (("POST", "/v1/chat/completions"), ("POST", "/chat/completions"))

    def parse(self, body: Any) -> ModelRequest:
        if not isinstance(body, dict):
            return ModelRequest(None)
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        tools = offered(body)
        model = str(body.get("model") or "model")
        tagged = [(n, tag) for n, m in enumerate(messages)
                  if m.get("role") == "user" and (tag := find_tag(message_text(m))) is not None]
        if not tools or not tagged or body.get("stream") is False:
            return ModelRequest(None, tools=tools, model=model)  # a side request
        at, tag = tagged[-1]
        if at == len(messages) - 1:
            return ModelRequest(tag, 0, tools, model)
        if messages[-1].get("role") != "tool":
            return ModelRequest(None, tools=tools, model=model)
        rounds = sum(1 for prev, m in zip(messages[at:], messages[at + 1:], strict=False)
                     if m.get("role") == "tool" and prev.get("role") != "tool")
        return ModelRequest(tag, rounds, tools, model)

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse:
        if isinstance(reply, Fail) and reply.failure != "dropped":
            await ctx.release(ResponsePart.FAIL)
            status = 503 if reply.failure == "overloaded" else 500
            return web.json_response({"error": {"type": "server_error", "message":
                                                "acp-model scripted failure"}}, status=status)
        await ctx.release(ResponsePart.START)
        cid = f"chatcmpl-acpm-{ctx.tag}-{ctx.step}"
        if req.tag is None and (whole := await _side_answer(request, cid, req.model)):
            return whole
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        out = _Out(resp, cid, req.model)
        finish = "stop"
        if isinstance(reply, Tools):
            for k, call in enumerate(ctx.calls):
                await ctx.release(ResponsePart.TOOL, k)
                args = ctx.call_arguments(call)
                await out.chunk({"tool_calls": [{
                    "index": k, "id": f"call_acpm_{ctx.tag}_{ctx.step}_{k}", "type": "function",
                    "function": {"name": call.name, "arguments": args if isinstance(args, str)
                                 else json.dumps(args)}}]})
            finish = "tool_calls"
        elif isinstance(reply, Stall):
            await keep_alive(resp, ctx)
            await ctx.release(ResponsePart.TEXT, 0)
            await out.chunk({"role": "assistant", "content": "chunk 1 of 1. "})
        elif isinstance(reply, Fail):  # dropped: one chunk, then the connection goes
            await ctx.release(ResponsePart.FAIL)
            await out.chunk({"role": "assistant", "content": "chunk 1 of "})
            if request.transport is not None:
                request.transport.close()
            raise Gone
        elif isinstance(reply, StopReply) and reply.reason == "refusal":
            await ctx.release(ResponsePart.TEXT, 0)
            await out.chunk({"role": "assistant",
                             "content": "I can't help with that (acp-model scripted refusal)."})
        else:
            chunks = reply.chunks if isinstance(reply, Text) else 1
            for n in range(chunks):
                await ctx.release(ResponsePart.TEXT, n)
                await out.chunk({"role": "assistant", "content": f"chunk {n + 1} of {chunks}. "})
        if isinstance(reply, StopReply) and reply.reason == "max_tokens":
            finish = "length"
        await ctx.release(ResponsePart.END)
        await out.chunk({}, finish=finish, usage=True)
        await stream_write(resp, b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


_USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


async def _side_answer(request: web.Request, cid: str, model: str) -> web.Response | None:
    """A side question asked with ``stream: false``: one short plain ``chat.completion``
    (None: it streams, as the scripted replies do)."""
    try:
        body = await request.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict) or body.get("stream") is not False:
        return None
    return web.json_response({
        "id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "acp-model scripted answer."}}],
        "usage": _USAGE})


class _Out:
    """Writes one reply's ``chat.completion.chunk`` lines."""

    def __init__(self, resp: web.StreamResponse, cid: str, model: str) -> None:
        self.resp, self.cid, self.model = resp, cid, model

    async def chunk(self, delta: dict[str, Any], *, finish: str | None = None,
                    usage: bool = False) -> None:
        data: dict[str, Any] = {"id": self.cid, "object": "chat.completion.chunk",
                                "created": int(time.time()), "model": self.model,
                                "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish}]}
        if usage:
            data["usage"] = _USAGE
        await stream_write(self.resp, f"data: {json.dumps(data)}\n\n".encode())


__all__ = ["OpenAIChat"]
