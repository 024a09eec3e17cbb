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

from acp_model.llm.script import Fail, Reply, Stall, Stop, Text, Tools
from acp_model.llm.wire import (
    Gone,
    ModelRequest,
    OpenAIEndpoints,
    ReplyContext,
    find_tag,
    keep_alive,
    message_text,
    paced,
    stream_write,
)

SHELL_TOOLS = ("exec_command", "shell", "local_shell", "bash")


def _is_user(item: dict[str, Any]) -> bool:
    return item.get("role") == "user" and item.get("type", "message") == "message"


def _arguments(tool: str, command: str, escalation: bool) -> str:
    if tool == "shell":
        return json.dumps({"command": ["bash", "-lc", command]})
    args: dict[str, Any] = {"cmd": command}
    if escalation:  # run outside the sandbox: the agent must ask the client first
        args.update(sandbox_permissions="require_escalated",
                    justification="acp-model scripted tool call")
    return json.dumps(args)


def _escalates(tools: list[Any]) -> bool:
    for tool in tools:
        params = tool.get("parameters") if isinstance(tool, dict) else None
        props = params.get("properties") if isinstance(params, dict) else None
        if isinstance(props, dict) and "sandbox_permissions" in props:
            return True
    return False


class OpenAIResponses(OpenAIEndpoints):
    name = "openai-responses"
    routes = (("POST", "/v1/responses"), ("POST", "/responses"))

    def parse(self, body: Any) -> ModelRequest:
        if not isinstance(body, dict):
            return ModelRequest(None)
        items = body.get("input")
        items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
        tools = tuple(t.get("name") or t.get("type") for t in body.get("tools") or []
                      if isinstance(t, dict))
        model = str(body.get("model") or "model")
        escalation = _escalates(body.get("tools") or [])
        tagged = [(n, tag) for n, item in enumerate(items)
                  if _is_user(item) and (tag := find_tag(message_text(item))) is not None]
        if not tools or not tagged:
            return ModelRequest(None, tools=tools, model=model)  # a side request
        at, tag = tagged[-1]
        if at == len(items) - 1:
            return ModelRequest(tag, 0, tools, model, escalation)
        if items[-1].get("type") != "function_call_output":
            return ModelRequest(None, tools=tools, model=model)
        # one round per run of tool outputs (a response may call several tools)
        rounds = sum(1 for prev, item in zip(items[at:], items[at + 1:], strict=False)
                     if item.get("type") == "function_call_output"
                     and prev.get("type") != "function_call_output")
        return ModelRequest(tag, rounds, tools, model, escalation)

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse:
        if isinstance(reply, Fail) and reply.failure != "dropped":
            status = 503 if reply.failure == "overloaded" else 500
            return web.json_response({"error": {
                "type": "server_error", "code": "server_is_overloaded" if status == 503
                else "server_error", "message": "acp-model scripted failure"}}, status=status)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        out = _Out(resp, f"resp_acpm_{ctx.tag}_{ctx.step}", req.model)
        await out.event("response.created", response=out.response("in_progress", []))
        items: list[dict[str, Any]] = []
        if isinstance(reply, Tools):
            shell = next((t for t in SHELL_TOOLS if t in req.tools), "exec_command")
            for k in range(reply.count):
                name = f"acpm-{ctx.tag}-{ctx.step}-{k}"
                command = f"touch {name}.txt" if reply.tool == "shell" else \
                    f"printf 'written by acp-model\\n' > {name}.md"
                items.append(await out.function_call(len(items), shell,
                                                     _arguments(shell, command, req.escalation),
                                                     f"call_acpm_{ctx.tag}_{ctx.step}_{k}"))
        elif isinstance(reply, Stall):
            await keep_alive(resp, ctx.stall_limit)
            items.append(await out.message(0, 1, 0))
        elif isinstance(reply, Fail):  # dropped: one chunk, then the connection goes
            await out.event("response.output_item.added", output_index=0, item={
                "type": "message", "id": "msg_dropped", "status": "in_progress",
                "role": "assistant", "content": []})
            if request.transport is not None:
                request.transport.close()
            raise Gone
        elif isinstance(reply, Stop) and reply.reason == "refusal":
            items.append(await out.refusal(0))
        else:
            chunks, pace = (reply.chunks, reply.pace_ms) if isinstance(reply, Text) else (1, 0)
            items.append(await out.message(0, chunks, pace))
        if isinstance(reply, Stop) and reply.reason == "max_tokens":
            final = out.response("incomplete", items)
            final["incomplete_details"] = {"reason": "max_output_tokens"}
            await out.event("response.incomplete", response=final)
        else:
            await out.event("response.completed", response=out.response("completed", items))
        await resp.write_eof()
        return resp


class _Out:
    """Writes one response's events with their sequence numbers."""

    def __init__(self, resp: web.StreamResponse, rid: str, model: str) -> None:
        self.resp, self.rid, self.model, self.seq = resp, rid, model, 0

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

    async def message(self, index: int, chunks: int, pace_ms: int) -> dict[str, Any]:
        mid = f"msg_{self.rid}_{index}"
        item = {"type": "message", "id": mid, "status": "in_progress", "role": "assistant",
                "content": []}
        await self.event("response.output_item.added", output_index=index, item=item)
        await self.event("response.content_part.added", item_id=mid, output_index=index,
                         content_index=0, part={"type": "output_text", "text": "",
                                                "annotations": []})
        text = ""
        for n in range(chunks):
            if n:
                await paced(pace_ms)
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
        await self.event("response.refusal.delta", item_id=mid, output_index=index,
                         content_index=0, delta=text)
        await self.event("response.refusal.done", item_id=mid, output_index=index,
                         content_index=0, refusal=text)
        done = {**item, "status": "completed", "content": [{"type": "refusal",
                                                             "refusal": text}]}
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
