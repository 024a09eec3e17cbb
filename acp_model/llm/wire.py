"""What the scripted model's server and its API adapters share: the reading of a request
(which scripted turn, which step), the reply context, and streaming helpers."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TAG_RE = re.compile(r"\[acpm:([0-9a-z]+)\]")


def tag_text(tag: str) -> str:
    """What the fuzzer writes into a prompt so the model knows the turn."""
    return f"[acpm:{tag}]"


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What an adapter reads off one model request."""

    tag: str | None  # the scripted turn it belongs to (None: a side request)
    step: int = 0  # tool-result rounds since the tagged prompt
    tools: tuple[str, ...] = ()  # the tool names the agent offers the model
    model: str = "model"
    # The shell tool takes a per-call sandbox escalation (codex's exec_command): asking for
    # it is what makes the agent ask the client for permission.
    escalation: bool = False


class Gone(Exception):
    """The agent hung up (a cancel aborted the request)."""


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """What a reply needs besides the request: names, the workspace, limits."""

    tag: str
    step: int
    workspace: str | None
    stall_limit: float


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


def scripted_call(req: ModelRequest, tool: str, ctx: ReplyContext, k: int,
                  shell_tools: tuple[str, ...], edit_tools: tuple[str, ...], fallback: str
                  ) -> tuple[str, dict[str, Any]]:
    """The concrete tool and input for the ``k``-th call of a ``Tools`` reply (``tool``: its
    "shell" or "edit"), for an agent whose tools are named like ``shell_tools`` / ``edit_tools``
    (``fallback``: the shell tool when it offers none of them)."""
    name = f"acpm-{ctx.tag}-{ctx.step}-{k}"
    edit = next((t for t in edit_tools if t in req.tools), None)
    if tool == "edit" and edit is not None and ctx.workspace:
        return edit, {"file_path": f"{ctx.workspace}/{name}.md",
                      "content": "written by the acp-model scripted model\n"}
    shell = next((t for t in shell_tools if t in req.tools), fallback)
    command = f"touch {name}.txt" if tool == "shell" else \
        f"printf 'written by acp-model\\n' > {name}.md"
    return shell, {"command": command, "description": "acp-model scripted tool call"}


async def keep_alive(resp: Any, limit: float) -> None:
    """SSE comments until the agent hangs up (raises Gone) or ``limit`` passes (a stall)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        await asyncio.sleep(0.2)
        await stream_write(resp, b": keep-alive\n\n")


class OpenAIEndpoints:
    """What the OpenAI APIs the scripted model speaks share: the variables their clients
    read, and an empty model list."""

    def env(self, base_url: str) -> dict[str, str]:
        return {"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": "acp-model-scripted"}

    async def other(self, request: web.Request) -> web.StreamResponse | None:
        if request.path.rstrip("/").endswith("/models"):
            return web.json_response({"object": "list", "data": []})
        return None
