"""What the scripted model's server and its API adapters share: the reading of a request
(which scripted turn, which step), the reply context, and streaming helpers."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

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
