"""A deterministic stand-in for the language model: prompt text (+ seed) -> a turn script.

The reference agent needs realistic, varied turns (thoughts, plans, streamed text, tool calls,
permission requests, usage, custom extras, various stop reasons) that are nevertheless exactly
reproducible, so that a fuzzer's counterexample replays. Everything here is a pure function of
``(seed, prompt text)``; tests use :func:`plan_turn` to pick prompts with a wanted shape.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from enum import StrEnum

STOP_REASONS: tuple[tuple[float, str], ...] = (
    (0.80, "end_turn"),
    (0.85, "max_tokens"),
    (0.90, "max_turn_requests"),
    (0.95, "refusal"),
    (1.00, "_budget_exhausted"),
)
"""Cumulative distribution of the stop reason of a turn that is not cancelled."""

TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other")
_FILES = ("src/main.py", "src/util.py", "README.md", "tests/test_main.py", "pyproject.toml")
_WORDS = (
    "checking", "the", "loop", "body", "types", "look", "fine", "one", "edge", "case",
    "empty", "input", "handled", "refactor", "suggested", "tests", "pass", "config", "found",
    "three", "issues", "error", "handling", "could", "improve", "done", "reading", "file",
)  # fmt: skip


@dataclass(frozen=True)
class ToolSpec:
    """One tool call of the script."""

    title: str
    kind: str
    path: str  # relative to the session cwd; the agent reports it as an absolute path
    needs_permission: bool
    chunks: tuple[str, ...]
    fails: bool


class Output(StrEnum):
    """What a step of the script makes the agent send; it selects which fields of the step
    matter: thought/message (texts, chunked), plan (progress), tools (tools), usage (used,
    size, cost), custom (none)."""

    THOUGHT = "thought"
    MESSAGE = "message"
    PLAN = "plan"
    TOOLS = "tools"
    USAGE = "usage"
    CUSTOM = "custom"


@dataclass(frozen=True)
class Step:
    """One unit of model output; ``output`` selects which fields matter."""

    output: Output
    texts: tuple[str, ...] = ()
    chunked: bool = False
    tools: tuple[ToolSpec, ...] = ()
    progress: int = 0
    used: int = 0
    size: int = 0
    cost: float | None = None
    jitter: float = 0.0  # in [0, 1): scales the pause after the step in real/slow timing


@dataclass(frozen=True)
class TurnPlan:
    """The whole script for the work one prompt contributes."""

    steps: tuple[Step, ...]
    stop_reason: str
    plan_entries: tuple[tuple[str, str], ...] = field(default=())  # (content, priority)
    accept_jitter: float = 0.0

    @property
    def permissions(self) -> int:
        return sum(t.needs_permission for t in self._tool_specs())

    @property
    def tools(self) -> int:
        return len(self._tool_specs())

    def _tool_specs(self) -> list[ToolSpec]:
        return [t for s in self.steps if s.output == Output.TOOLS for t in s.tools]


def prompt_text(blocks: object) -> str:
    """Flatten a prompt's content blocks into the text the fake model looks at."""
    if not isinstance(blocks, list):
        return ""
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            parts.append(block["uri"])
        elif kind == "resource" and isinstance(block.get("resource"), dict):
            parts.append(str(block["resource"].get("uri", "")))
        else:
            parts.append(f"<{kind}>")
    return "\n".join(parts)


def rng_for(seed: int, text: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{text}".encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def _tool(rng: random.Random, index: int, *, permission: bool | None = None) -> ToolSpec:
    kind = rng.choice(TOOL_KINDS)
    path = rng.choice(_FILES)
    needs = rng.random() < 0.4 if permission is None else permission
    chunks = tuple(_sentence(rng, rng.randint(2, 5)) for _ in range(rng.randint(1, 3)))
    return ToolSpec(
        title=f"{kind.capitalize()} {path} (#{index})",
        kind=kind,
        path=path,
        needs_permission=needs,
        chunks=chunks,
        fails=rng.random() < 0.15,
    )


def plan_turn(  # noqa: C901
    text: str,
    seed: int = 0,
    *,
    force_tool: bool = False,
    force_permission: bool = False,
    force_plan: bool = False,
    force_usage: bool = False,
) -> TurnPlan:
    """Derive the script of one prompt's work from its text.

    The ``force_*`` switches are for mutants that need a sync point (a pending permission
    request is where a client's cancel reliably lands mid-turn, even with no delays at all) or
    a particular update kind to plant their bug in; the forced items come first in the turn.
    """
    rng = rng_for(seed, text)
    steps: list[Step] = []
    tool_index = 0

    def jit() -> float:
        return rng.random()

    if force_permission:
        tool_index += 1
        tool = _tool(rng, tool_index, permission=True)
        steps.append(Step(Output.TOOLS, tools=(tool,), jitter=jit()))
    if force_tool:
        tool_index += 1
        tool = _tool(rng, tool_index, permission=False)
        steps.append(Step(Output.TOOLS, tools=(tool,), jitter=jit()))
    if rng.random() < 0.5:
        n = rng.randint(1, 3)
        texts = tuple(_sentence(rng, rng.randint(3, 7)) for _ in range(n))
        chunked = rng.random() < 0.5
        steps.append(Step(Output.THOUGHT, texts=texts, chunked=chunked, jitter=jit()))
    entries: tuple[tuple[str, str], ...] = ()
    if force_plan or rng.random() < 0.6:
        entries = tuple(
            (_sentence(rng, rng.randint(2, 4)), rng.choice(("high", "medium", "low")))
            for _ in range(rng.randint(2, 4))
        )
        steps.append(Step(Output.PLAN, progress=0, jitter=jit()))
    if force_usage:
        steps.append(Step(Output.USAGE, used=1000, size=200000, cost=0.001, jitter=jit()))
    rounds = rng.randint(1, 3)
    used = rng.randint(1000, 20000)
    cost = 0.0
    for r in range(rounds):
        if rng.random() < 0.7:
            n = rng.randint(1, 3)
            texts = tuple(_sentence(rng, rng.randint(3, 8)) for _ in range(n))
            chunked = rng.random() < 0.6
            steps.append(Step(Output.MESSAGE, texts=texts, chunked=chunked, jitter=jit()))
        if rng.random() < 0.6:
            group = []
            for _ in range(1 if rng.random() < 0.75 else 2):
                tool_index += 1
                group.append(_tool(rng, tool_index))
            steps.append(Step(Output.TOOLS, tools=tuple(group), jitter=jit()))
        if entries:
            progress = min(len(entries), (r + 1) * len(entries) // rounds)
            steps.append(Step(Output.PLAN, progress=progress))
        if rng.random() < 0.5:
            used += rng.randint(500, 8000)
            cost += round(rng.random() * 0.01, 4)
            steps.append(
                Step(
                    Output.USAGE,
                    used=used,
                    size=200000,
                    cost=round(cost, 4) if rng.random() < 0.7 else None,
                    jitter=jit(),
                )
            )
        if rng.random() < 0.15:
            steps.append(Step(Output.CUSTOM, jitter=jit()))
    final = tuple(_sentence(rng, rng.randint(4, 9)) for _ in range(rng.randint(1, 2)))
    steps.append(Step(Output.MESSAGE, texts=final, chunked=rng.random() < 0.5, jitter=jit()))
    roll = rng.random()
    stop_reason = next(reason for bound, reason in STOP_REASONS if roll < bound)
    return TurnPlan(
        steps=tuple(steps),
        stop_reason=stop_reason,
        plan_entries=entries,
        accept_jitter=rng.random(),
    )


