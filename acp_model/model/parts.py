"""Where a message carries the parts that several kinds share (content blocks, a tool call's
fields, config options, commands, a plan, terminal output): each :data:`Locate` yields a part
with its JSON path.

A kind's parts are data of its declaration: a ``session/update`` kind's are its wire-table
row's ``parts``, a request's or a result's are ``model.messages.CARRIES``. The single-message
checks run a kind's own readers first, then each part's, part by part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from acp_model.model.vocab import Reads

Locate = Callable[[Any, str], Iterable[tuple[str, Any]]]  # (value, its path) -> parts, paths
Parts = tuple[tuple[Reads, Locate], ...]  # what a kind carries, and where


def blocks(content: Any, where: str) -> list[tuple[str, Any]]:
    """The content blocks of a ``content`` field (one block, or a list of them), each with its
    JSON path."""
    if isinstance(content, dict):
        return [(where, content)]
    if isinstance(content, list):
        return [(f"{where}/{i}", block) for i, block in enumerate(content)]
    return []


def itself(value: Any, where: str) -> tuple[tuple[str, Any], ...]:
    """The value as a whole (a tool call update is a tool call's fields)."""
    return ((where, value),)


def at(name: str, *, objects_only: bool = False) -> Locate:
    """The value's field ``name`` (``objects_only``: only when it is an object)."""
    def locate(value: Any, where: str) -> tuple[tuple[str, Any], ...]:
        # a tuple, not a generator: a locator runs on every update that carries its part
        part = value.get(name)
        if not objects_only or isinstance(part, dict):
            return ((f"{where}/{name}", part),)
        return ()
    return locate


def wrapped_content(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    """The content blocks inside a tool call's ``{type: content}`` items."""
    for path, item in blocks(value.get("content"), f"{where}/content"):
        if isinstance(item, dict) and item.get("type") == "content":
            yield f"{path}/content", item.get("content")
