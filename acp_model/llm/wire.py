"""What the scripted model's server and its API adapters share: the reading of a request
(which scripted turn, which step), the reply context, and streaming helpers."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from aiohttp import web

from acp_model.llm.script import ModelToolCall
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


class ResponsePart(StrEnum):
    """What the model releases of one response, in order: its side of the boundary schedule
    (``fuzzing/schedule.py``). Every part goes out through :meth:`ReplyContext.release`, the
    one place where it can be held (a replay under its recorded schedule) or timed (the pace
    of a ``Text`` reply, the pause before each call of a ``Tools`` reply; the time to first
    byte comes before the response, ``ScriptedModel``)."""

    START = "start"  # the response begins (its status and headers: the first byte)
    TEXT = "text"  # text chunk ``n`` (from 0)
    TOOL = "tool"  # tool call ``n`` (from 0)
    STALL = "stall"  # nothing more comes until the agent hangs up or the server ends it
    END = "end"  # the response's end (stop reason, usage)
    FAIL = "fail"  # an error status, or a stream dropped (after one chunk)


class ModelGate(Protocol):
    """Who hears what crosses the model boundary in one scripted turn (the fuzzer's schedule
    of the connection that registered it), and may hold it: a request is the agent's, held
    only as a replay holds the agent's output; a release is the model's input to the agent."""

    async def requested(self, tag: str, step: int, attempt: int) -> None: ...

    async def release(self, tag: str, step: int, attempt: int, part: ResponsePart,
                      n: int) -> None: ...

    def hung_up(self, tag: str, step: int, attempt: int) -> None: ...


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """What a reply needs besides the request: names, the workspace, limits, the concrete
    tool calls of a ``Tools`` reply (chosen by the server, ``llm.tools``), and the turn's
    gate with the request's attempt (a retry of a failed step is attempt 2)."""

    tag: str
    step: int
    workspace: str | None
    stall_limit: float
    calls: tuple[ModelToolCall, ...] = ()
    released: Callable[[], bool] = lambda: False  # the server ended this turn's stalls
    gate: ModelGate | None = None
    attempt: int = 1
    pace_ms: int = 0  # between text chunks (a ``Text`` reply's pace)
    pause_ms: int = 0  # before each tool call (a ``Tools`` reply's pause)

    def stalls(self) -> bool:
        """Should a stalled response keep stalling (not released by the server)?"""
        return not self.released()

    async def release(self, part: ResponsePart, n: int = 0) -> None:
        """Before part ``part`` (number ``n``) of the response is written: the pace between
        text chunks or the pause before a tool call, then the gate (a held replay waits here
        until what preceded this part in the recording has happened)."""
        if part is ResponsePart.TEXT and n and self.pace_ms:
            await asyncio.sleep(self.pace_ms / 1000)
        elif part is ResponsePart.TOOL and self.pause_ms:
            await asyncio.sleep(self.pause_ms / 1000)
        if self.gate is not None:
            await self.gate.release(self.tag, self.step, self.attempt, part, n)

    def call_arguments(self, call: ModelToolCall) -> Any:
        """A call's arguments as sent: the run's workspace in place of its placeholder."""
        return materialize(call.arguments, self.workspace)


async def stream_write(resp: web.StreamResponse, data: bytes) -> None:
    """Write a piece of a streamed body; :class:`Gone` when the agent hung up."""
    try:
        await resp.write(data)
    except (ConnectionResetError, ConnectionError, RuntimeError) as exc:
        raise Gone from exc


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
    """A stall (released as :attr:`ResponsePart.STALL`): ``ping`` now and then until the agent hangs
    up (``ping`` raises Gone), the stall limit passes or the server ends the stall
    (:meth:`ScriptedModel.end_stalls`). What follows it (one text chunk) is released as
    usual."""
    await ctx.release(ResponsePart.STALL)
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
