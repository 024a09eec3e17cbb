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


class StepOutput(StrEnum):
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

    output: StepOutput
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
        return [t for s in self.steps if s.output == StepOutput.TOOLS for t in s.tools]


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


def plan_turn(
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
    planner = _Planner(rng_for(seed, text))
    if force_permission:
        planner.tool_step(permission=True)
    if force_tool:
        planner.tool_step(permission=False)
    planner.thought()
    planner.plan(forced=force_plan)
    if force_usage:
        planner.steps.append(Step(StepOutput.USAGE, used=1000, size=200000, cost=0.001,
                                  jitter=planner.jitter()))
    rounds = planner.rng.randint(1, 3)
    planner.used = planner.rng.randint(1000, 20000)
    for r in range(rounds):
        planner.round(r, rounds)
    return planner.finish()


class _Planner:
    """One turn's script as it is drawn: the random stream (every draw in a fixed order, so a
    prompt and a seed always give the same script), the steps so far, the tools numbered, the
    usage reported."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.steps: list[Step] = []
        self.tool_index = 0
        self.entries: tuple[tuple[str, str], ...] = ()
        self.used = 0
        self.cost = 0.0

    def jitter(self) -> float:
        return self.rng.random()

    def tool_step(self, *, permission: bool) -> None:
        """A step of one forced tool call (asking permission or not)."""
        self.tool_index += 1
        tool = _tool(self.rng, self.tool_index, permission=permission)
        self.steps.append(Step(StepOutput.TOOLS, tools=(tool,), jitter=self.jitter()))

    def texts(self, kind: StepOutput, likely: float, most_words: int, chunked: float) -> None:
        """Sometimes (``likely``) one to three sentences of ``kind``, chunked or not."""
        rng = self.rng
        if rng.random() < likely:
            n = rng.randint(1, 3)
            texts = tuple(_sentence(rng, rng.randint(3, most_words)) for _ in range(n))
            self.steps.append(Step(kind, texts=texts, chunked=rng.random() < chunked,
                                   jitter=self.jitter()))

    def thought(self) -> None:
        self.texts(StepOutput.THOUGHT, 0.5, 7, 0.5)

    def plan(self, *, forced: bool) -> None:
        """The plan's entries, reported first with none done (``progress`` rises per round)."""
        rng = self.rng
        if forced or rng.random() < 0.6:
            self.entries = tuple(
                (_sentence(rng, rng.randint(2, 4)), rng.choice(("high", "medium", "low")))
                for _ in range(rng.randint(2, 4))
            )
            self.steps.append(Step(StepOutput.PLAN, progress=0, jitter=self.jitter()))

    def round(self, r: int, rounds: int) -> None:
        """One round of the model: a message, tools, the plan's progress, usage, an extra."""
        rng = self.rng
        self.texts(StepOutput.MESSAGE, 0.7, 8, 0.6)
        if rng.random() < 0.6:
            group = []
            for _ in range(1 if rng.random() < 0.75 else 2):
                self.tool_index += 1
                group.append(_tool(rng, self.tool_index))
            self.steps.append(Step(StepOutput.TOOLS, tools=tuple(group), jitter=self.jitter()))
        if self.entries:
            progress = min(len(self.entries), (r + 1) * len(self.entries) // rounds)
            self.steps.append(Step(StepOutput.PLAN, progress=progress))
        if rng.random() < 0.5:
            self.usage()
        if rng.random() < 0.15:
            self.steps.append(Step(StepOutput.CUSTOM, jitter=self.jitter()))

    def usage(self) -> None:
        rng = self.rng
        self.used += rng.randint(500, 8000)
        self.cost += round(rng.random() * 0.01, 4)
        cost = round(self.cost, 4) if rng.random() < 0.7 else None
        self.steps.append(Step(StepOutput.USAGE, used=self.used, size=200000, cost=cost,
                               jitter=self.jitter()))

    def finish(self) -> TurnPlan:
        """The final message and the stop reason."""
        rng = self.rng
        final = tuple(_sentence(rng, rng.randint(4, 9)) for _ in range(rng.randint(1, 2)))
        self.steps.append(Step(StepOutput.MESSAGE, texts=final, chunked=rng.random() < 0.5,
                               jitter=self.jitter()))
        roll = rng.random()
        stop_reason = next(reason for bound, reason in STOP_REASONS if roll < bound)
        return TurnPlan(
            steps=tuple(self.steps),
            stop_reason=stop_reason,
            plan_entries=self.entries,
            accept_jitter=rng.random(),
        )
