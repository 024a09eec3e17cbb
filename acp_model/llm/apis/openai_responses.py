"""The OpenAI Responses API (``POST /v1/responses``, ``stream: true``), as codex-acp calls it.

Streams are server-sent events named by their ``type``: ``response.created``, then per output
item ``response.output_item.added`` ... ``response.output_item.done`` (a message with
``response.output_text.delta`` events, or a ``function_call`` with
``response.function_call_arguments.delta``), then ``response.completed`` (or
``response.incomplete`` for a token limit). A tool's result comes back in the next request as a
``function_call_output`` input item.
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

OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _is_user(item: dict[str, Any]) -> bool:
    return item.get("role") == "user" and item.get("type", "message") == "message"


def offered(body: dict[str, Any]) -> tuple[OfferedTool, ...]:
    """Function tools (``parameters`` schema) and custom tools (free-form text input)."""
    raw: list[tuple[Any, Any, Any]] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function":
            raw.append((tool.get("name"), tool.get("description"), tool.get("parameters") or {}))
        elif tool.get("type") == "custom":
            raw.append((tool.get("name"), tool.get("description"), None))
    return offered_tools(raw)


class OpenAIResponses(OpenAIEndpoints):
    name = "openai-responses"
    routes = (("POST", "/v1/responses"), ("POST", "/responses"))

    def parse(self, body: Any) -> ModelRequest:
        if not isinstance(body, dict):
            return ModelRequest(None)
        items = body.get("input")
        items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        tools = offered(body)
        model = str(body.get("model") or "model")
        tagged = [(n, tag) for n, item in enumerate(items)
                  if _is_user(item) and (tag := find_tag(message_text(item))) is not None]
        if not tools or not tagged:
            return ModelRequest(None, tools=tools, model=model)  # a side request
        at, tag = tagged[-1]
        if at == len(items) - 1:
            return ModelRequest(tag, 0, tools, model)
        if items[-1].get("type") not in OUTPUTS:
            return ModelRequest(None, tools=tools, model=model)
        # one round per run of tool outputs (a response may call several tools)
        rounds = sum(1 for prev, item in zip(items[at:], items[at + 1:], strict=False)
                     if item.get("type") in OUTPUTS and prev.get("type") not in OUTPUTS)
        return ModelRequest(tag, rounds, tools, model)

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse:
        if isinstance(reply, Fail) and reply.failure != "dropped":
            await ctx.release(ResponsePart.FAIL)
            status = 503 if reply.failure == "overloaded" else 500
            return web.json_response({"error": {
                "type": "server_error", "code": "server_is_overloaded" if status == 503
                else "server_error", "message": "acp-model scripted failure"}}, status=status)
        await ctx.release(ResponsePart.START)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        out = _Out(resp, f"resp_acpm_{ctx.tag}_{ctx.step}", req.model, ctx)
        await out.event("response.created", response=out.response("in_progress", []))
        items: list[dict[str, Any]] = []
        if isinstance(reply, Tools):
            for k, call in enumerate(ctx.calls):
                await ctx.release(ResponsePart.TOOL, k)
                args = ctx.call_arguments(call)
                call_id = f"call_acpm_{ctx.tag}_{ctx.step}_{k}"
                if isinstance(args, str):
                    items.append(await out.custom_call(len(items), call.name, args, call_id))
                else:
                    items.append(await out.function_call(len(items), call.name,
                                                         json.dumps(args), call_id))
        elif isinstance(reply, Stall):
            await keep_alive(resp, ctx)
            items.append(await out.message(0, 1))
        elif isinstance(reply, Fail):  # dropped: one chunk, then the connection goes
            await ctx.release(ResponsePart.FAIL)
            await out.event("response.output_item.added", output_index=0, item={
                "type": "message", "id": "msg_dropped", "status": "in_progress",
                "role": "assistant", "content": []})
            if request.transport is not None:
                request.transport.close()
            raise Gone
        elif isinstance(reply, StopReply) and reply.reason == "refusal":
            items.append(await out.refusal(0))
        else:
            items.append(await out.message(0, reply.chunks if isinstance(reply, Text) else 1))
        await ctx.release(ResponsePart.END)
        if isinstance(reply, StopReply) and reply.reason == "max_tokens":
            final = out.response("incomplete", items)
            final["incomplete_details"] = {"reason": "max_output_tokens"}
            await out.event("response.incomplete", response=final)
        else:
            await out.event("response.completed", response=out.response("completed", items))
        await resp.write_eof()
        return resp


class _Out:
    """Writes one response's events with their sequence numbers."""

    def __init__(self, resp: web.StreamResponse, rid: str, model: str,
                 ctx: ReplyContext) -> None:
        self.resp, self.rid, self.model, self.ctx, self.seq = resp, rid, model, ctx, 0

    def response(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.rid, "object": "response", "created_at": int(time.time()),
                "model": self.model, "status": status, "output": output,
                "usage": {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

    async def event(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        await stream_write(self.resp, f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

    async def message(self, index: int, chunks: int) -> dict[str, Any]:
        mid = f"msg_{self.rid}_{index}"
        item = {"type": "message", "id": mid, "status": "in_progress", "role": "assistant",
                "content": []}
        await self.event("response.output_item.added", output_index=index, item=item)
        await self.event("response.content_part.added", item_id=mid, output_index=index,
                         content_index=0, part={"type": "output_text", "text": "",
                                                "annotations": []})
        text = ""
        for n in range(chunks):
            await self.ctx.release(ResponsePart.TEXT, n)
            delta = f"chunk {n + 1} of {chunks}. "
            text += delta
            await self.event("response.output_text.delta", item_id=mid, output_index=index,
                             content_index=0, delta=delta)
        part = {"type": "output_text", "text": text, "annotations": []}
        await self.event("response.output_text.done", item_id=mid, output_index=index,
                         content_index=0, text=text)
        await self.event("response.content_part.done", item_id=mid, output_index=index,
                         content_index=0, part=part)
        done = {**item, "status": "completed", "content": [part]}
        await self.event("response.output_item.done", output_index=index, item=done)
        return done

    async def refusal(self, index: int) -> dict[str, Any]:
        mid = f"msg_{self.rid}_{index}"
        item = {"type": "message", "id": mid, "status": "in_progress", "role": "assistant",
                "content": []}
        await self.event("response.output_item.added", output_index=index, item=item)
        text = "I can't help with that (acp-model scripted refusal)."
        await self.ctx.release(ResponsePart.TEXT, 0)
        await self.event("response.refusal.delta", item_id=mid, output_index=index,
                         content_index=0, delta=text)
        await self.event("response.refusal.done", item_id=mid, output_index=index,
                         content_index=0, refusal=text)
        done = {**item, "status": "completed", "content": [{"type": "refusal",
                                                             "refusal": text}]}
        await self.event("response.output_item.done", output_index=index, item=done)
        return done

    async def custom_call(self, index: int, name: str, text: str,
                          call_id: str) -> dict[str, Any]:
        cid = f"ctc_{call_id}"
        item = {"type": "custom_tool_call", "id": cid, "call_id": call_id, "name": name,
                "input": "", "status": "in_progress"}
        await self.event("response.output_item.added", output_index=index, item=item)
        await self.event("response.custom_tool_call_input.delta", item_id=cid,
                         output_index=index, delta=text)
        await self.event("response.custom_tool_call_input.done", item_id=cid,
                         output_index=index, input=text)
        done = {**item, "input": text, "status": "completed"}
        await self.event("response.output_item.done", output_index=index, item=done)
        return done

    async def function_call(self, index: int, name: str, arguments: str,
                            call_id: str) -> dict[str, Any]:
        fid = f"fc_{call_id}"
        item = {"type": "function_call", "id": fid, "call_id": call_id, "name": name,
                "arguments": "", "status": "in_progress"}
        await self.event("response.output_item.added", output_index=index, item=item)
        await self.event("response.function_call_arguments.delta", item_id=fid,
                         output_index=index, delta=arguments)
        await self.event("response.function_call_arguments.done", item_id=fid,
                         output_index=index, arguments=arguments)
        done = {**item, "arguments": arguments, "status": "completed"}
        await self.event("response.output_item.done", output_index=index, item=done)
        return done


__all__ = ["Gone", "OpenAIResponses"]
