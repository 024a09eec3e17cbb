"""The Gemini API (``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``), as gemini-cli
calls it through the ``@google/genai`` SDK.

A request's ``contents`` are turns of ``parts`` (``text``, ``functionCall``,
``functionResponse``); its tools are ``functionDeclarations`` with a ``parameters`` (OpenAPI
dialect: upper-case types) or ``parametersJsonSchema`` schema. A streamed reply is
server-sent ``data:`` lines, each a ``GenerateContentResponse``: one candidate whose content
holds this chunk's parts; the last one carries the ``finishReason`` (``STOP``, also after
function calls; ``MAX_TOKENS``; ``SAFETY``) and the usage. A tool's result comes back in the
next request as a user turn of ``functionResponse`` parts. ``generateContent`` (not streamed)
answers the agent's side questions: a JSON answer drawn from the schema the request asks for
(a next-speaker check, a model router), or a short text. ``countTokens`` gets a fixed count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from acp_model.llm.script import Fail, Reply, Stall, StopReply, Text, Tools
from acp_model.llm.tools import OfferedTool, draw, normalize, offered_tools
from acp_model.llm.wire import (
    Gone,
    ModelRequest,
    ReplyContext,
    ResponsePart,
    find_tag,
    keep_alive,
    stream_write,
)

_USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
FINISH = {"max_tokens": "MAX_TOKENS", "refusal": "SAFETY"}


def _parts(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = content.get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _text(content: Mapping[str, Any]) -> str:
    return " ".join(p["text"] for p in _parts(content) if isinstance(p.get("text"), str))


def _is_result(content: Mapping[str, Any]) -> bool:
    return any("functionResponse" in p for p in _parts(content))


def offered(body: Mapping[str, Any]) -> tuple[OfferedTool, ...]:
    """Every function declaration of the request's tools."""
    raw = []
    for tool in body.get("tools") or []:
        decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for decl in decls if isinstance(decls, list) else []:
            if isinstance(decl, dict):
                schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
                raw.append((decl.get("name"), decl.get("description"), schema))
    return offered_tools(raw)


class Gemini:
    name = "gemini"
    routes = (("POST", "/v1beta/models/{model}:streamGenerateContent"),
              ("POST", "/v1/models/{model}:streamGenerateContent"),
              ("POST", "/v1beta/models/{model}:generateContent"),
              ("POST", "/v1/models/{model}:generateContent"))

    def env(self, base_url: str) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": "acp-model-scripted"}

    def parse(self, body: Any) -> ModelRequest:
        if not isinstance(body, dict):
            return ModelRequest(None)
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        tools = offered(body)
        model = str(body.get("model") or "model")
        tagged = [(n, tag) for n, c in enumerate(contents) if c.get("role", "user") == "user"
                  and not _is_result(c) and (tag := find_tag(_text(c))) is not None]
        if not tools or not tagged:
            return ModelRequest(None, tools=tools, model=model)  # a side request
        at, tag = tagged[-1]
        if at == len(contents) - 1:
            return ModelRequest(tag, 0, tools, model)
        if not _is_result(contents[-1]):
            return ModelRequest(None, tools=tools, model=model)
        rounds = sum(1 for c in contents[at + 1:] if _is_result(c))
        return ModelRequest(tag, rounds, tools, model)

    async def other(self, request: web.Request) -> web.StreamResponse | None:
        if request.path.endswith(":countTokens"):
            return web.json_response({"totalTokens": 100})
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"models": []})
        return None

    async def respond(self, request: web.Request, reply: Reply, req: ModelRequest,
                      ctx: ReplyContext) -> web.StreamResponse:
        model = request.match_info.get("model", req.model)
        if isinstance(reply, Fail) and reply.failure != "dropped":
            await ctx.release(ResponsePart.FAIL)
            code, status = (503, "UNAVAILABLE") if reply.failure == "overloaded" \
                else (500, "INTERNAL")
            return web.json_response({"error": {"code": code, "status": status,
                                                 "message": "acp-model scripted failure"}},
                                     status=code)
        await ctx.release(ResponsePart.START)
        if not request.path.endswith(":streamGenerateContent"):
            whole = await self._whole(request, reply, ctx, model)
            await ctx.release(ResponsePart.END)
            return web.json_response(whole)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
        await resp.prepare(request)
        out = _Out(resp, model, f"acpm-{ctx.tag}-{ctx.step}")
        # the last chunk carries the finish reason and the usage, as the API's own does
        if isinstance(reply, Tools):
            parts = []
            for k, call in enumerate(ctx.calls):
                await ctx.release(ResponsePart.TOOL, k)
                args = ctx.call_arguments(call)
                parts.append({"functionCall": {
                    "id": f"call_acpm_{ctx.tag}_{ctx.step}_{k}", "name": call.name,
                    "args": args if isinstance(args, dict) else {"input": args}}})
            await ctx.release(ResponsePart.END)
            await out.chunk(parts, finish="STOP")
        elif isinstance(reply, Stall):
            await keep_alive(resp, ctx)
            await ctx.release(ResponsePart.TEXT, 0)
            await ctx.release(ResponsePart.END)
            await out.chunk([{"text": "chunk 1 of 1. "}], finish="STOP")
        elif isinstance(reply, Fail):  # dropped: one chunk, then the connection goes
            await ctx.release(ResponsePart.FAIL)
            await out.chunk([{"text": "chunk 1 of "}])
            if request.transport is not None:
                request.transport.close()
            raise Gone
        elif isinstance(reply, StopReply):
            text = "I can't help with that (acp-model scripted refusal)." \
                if reply.reason == "refusal" else "chunk 1 of 1. "
            await ctx.release(ResponsePart.TEXT, 0)
            await ctx.release(ResponsePart.END)
            await out.chunk([{"text": text}], finish=FINISH[reply.reason])
        else:
            chunks = reply.chunks if isinstance(reply, Text) else 1
            for n in range(chunks):
                await ctx.release(ResponsePart.TEXT, n)
                if n == chunks - 1:  # the last chunk carries the end (finish reason, usage)
                    await ctx.release(ResponsePart.END)
                await out.chunk([{"text": f"chunk {n + 1} of {chunks}. "}],
                                finish="STOP" if n == chunks - 1 else None)
        await resp.write_eof()
        return resp

    async def _whole(self, request: web.Request, reply: Reply, ctx: ReplyContext,
                     model: str) -> dict[str, Any]:
        """A ``generateContent`` answer: JSON from the schema the request asks for, or text."""
        try:
            body = await request.json()
        except ValueError:
            body = {}
        config = body.get("generationConfig") if isinstance(body, dict) else None
        config = config if isinstance(config, dict) else {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        text = "acp-model scripted answer."
        if config.get("responseMimeType") == "application/json":
            value = draw(normalize(schema)) if isinstance(schema, dict) else {}
            text = json.dumps(value if isinstance(value, (dict, list)) else {})
        parts: list[dict[str, Any]] = [{"text": text}]
        if isinstance(reply, Tools) and ctx.calls:
            parts = [{"functionCall": {"name": c.name, "args": ctx.call_arguments(c)}}
                     for c in ctx.calls]
        return {"candidates": [{"content": {"role": "model", "parts": parts},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": _USAGE, "modelVersion": model,
                "responseId": f"acpm-{ctx.tag}-{ctx.step}"}


class _Out:
    """Writes one reply's ``GenerateContentResponse`` chunks."""

    def __init__(self, resp: web.StreamResponse, model: str, rid: str) -> None:
        self.resp, self.model, self.rid = resp, model, rid

    async def chunk(self, parts: list[dict[str, Any]], *, finish: str | None = None) -> None:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        data: dict[str, Any] = {"candidates": [candidate], "modelVersion": self.model,
                                "responseId": self.rid}
        if finish is not None:
            candidate["finishReason"] = finish
            data["usageMetadata"] = _USAGE
        await stream_write(self.resp, f"data: {json.dumps(data)}\r\n\r\n".encode())


__all__ = ["Gemini"]
