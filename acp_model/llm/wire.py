"""What the scripted model's server and its API adapters share: the reading of a request
(which scripted turn, which step), the reply context, and streaming helpers."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from acp_model.llm.script import ToolCall
from acp_model.llm.tools import OfferedTool, materialize

TAG_RE = re.compile(r"\[acpm:([0-9a-z]+)\]")


def tag_text(tag: str) -> str:
    """What the fuzzer writes into a prompt so the model knows the turn."""
    return f"[acpm:{tag}]"


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What an adapter reads off one model request."""

    tag: str | None  # the scripted turn it belongs to (None: a side request)
    step: int = 0  # tool-result rounds since the tagged prompt
    tools: tuple[OfferedTool, ...] = ()  # the tools the agent offers the model
    model: str = "model"

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)


class Gone(Exception):
    """The agent hung up (a cancel aborted the request)."""


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """What a reply needs besides the request: names, the workspace, limits, and the concrete
    tool calls of a ``Tools`` reply (chosen by the server, ``llm.tools``)."""

    tag: str
    step: int
    workspace: str | None
    stall_limit: float
    calls: tuple[ToolCall, ...] = ()
    released: Callable[[], bool] = lambda: False  # the server ended this turn's stalls

    def stalls(self) -> bool:
        """Should a stalled response keep stalling (not released by the server)?"""
        return not self.released()

    def call_arguments(self, call: ToolCall) -> Any:
        """A call's arguments as sent: the run's workspace in place of its placeholder."""
        return materialize(call.arguments, self.workspace)


async def stream_write(resp: web.StreamResponse, data: bytes) -> None:
    """Write a piece of a streamed body; :class:`Gone` when the agent hung up."""
    try:
        await resp.write(data)
    except (ConnectionResetError, ConnectionError, RuntimeError) as exc:
        raise Gone from exc


async def paced(pace_ms: int) -> None:
    if pace_ms:
        await asyncio.sleep(pace_ms / 1000)


def find_tag(text: str) -> str | None:
    found = TAG_RE.findall(text)
    return found[-1] if found else None


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message or input item: a string, or the text parts of a list."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(c.get("text", "") for c in content
                        if isinstance(c, dict) and isinstance(c.get("text"), str))
    return ""


async def stall(ctx: ReplyContext, ping: Callable[[], Awaitable[None]]) -> None:
    """A stall: ``ping`` now and then until the agent hangs up (``ping`` raises Gone), the
    stall limit passes or the server ends the stall (:meth:`ScriptedModel.end_stalls`)."""
    end = time.monotonic() + ctx.stall_limit
    while time.monotonic() < end and ctx.stalls():
        await asyncio.sleep(0.2)
        await ping()


async def keep_alive(resp: Any, ctx: ReplyContext) -> None:
    """A stall of SSE comments (:func:`stall`)."""
    await stall(ctx, lambda: stream_write(resp, b": keep-alive\n\n"))


class OpenAIEndpoints:
    """What the OpenAI APIs the scripted model speaks share: the variables their clients
    read, and an empty model list."""

    def env(self, base_url: str) -> dict[str, str]:
        return {"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": "acp-model-scripted"}

    async def other(self, request: web.Request) -> web.StreamResponse | None:
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": []})
        return None
