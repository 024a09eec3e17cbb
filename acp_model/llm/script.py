"""What the scripted model does in one turn: a typed vocabulary of replies.

A turn of a real agent is a series of model requests: the prompt, then one request per batch
of tool results. A :data:`ModelScript` says what the model answers to each of them, in order:
stream text, call tools the agent must ask permission for, fail, stop for ``max_tokens`` or a
refusal, or stall until the agent gives up the request (a cancel). When the script runs out,
the model ends the turn with a short text. Scripts are part of the generated program (the
fuzzer's ``Prompt`` action carries one), so a counterexample describes its model behaviour and
a replay reproduces it. The wire formats live in the API adapters; nothing here knows one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

REPLIES: dict[str, type[Reply]] = {}


class ScriptError(ValueError):
    """A model reply that names no reply of the vocabulary, or a field it does not have."""


@dataclass(frozen=True)
class Reply:
    """One model response; subclasses register under their ``reply`` name."""

    reply: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.reply:
            REPLIES[cls.reply] = cls

    def describe(self) -> str:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"reply": self.reply, **{f.name: getattr(self, f.name) for f in fields(self)}}


@dataclass(frozen=True)
class Text(Reply):
    """``chunks`` text deltas, ``pace_ms`` apart (slow enough for a cancel to land inside),
    then the end of the turn."""

    reply: ClassVar[str] = "text"
    chunks: int = 3
    pace_ms: int = 0

    def describe(self) -> str:
        pace = f" {self.pace_ms} ms apart" if self.pace_ms else ""
        return f"{self.chunks} chunk{'s' if self.chunks != 1 else ''}{pace}"


# what a ``Tools`` reply asks for: a command run, a file edit, or a command that keeps running
# (a tool call still running when a cancel comes: the cancel must stop it, or at least end
# the turn)
TOOL_KINDS = ("shell", "edit", "long")
# what a command does besides running, in the shapes agents' approval policies ask about
# (``llm.tools.command_for`` writes each, confined to the run's scratch folder): an agent that
# asks only for commands it flags reaches its permission path with these
RISKS = ("plain", "recursive_delete", "mode_change", "pipe_to_shell", "forced_reset")
RISK_WORDS = {"plain": "", "recursive_delete": "recursive delete", "mode_change": "mode change",
              "pipe_to_shell": "pipe into a shell", "forced_reset": "forced git reset"}


def _short(value: Any, room: int = 48) -> str:
    if isinstance(value, str):
        text = json.dumps(value)
        return text if len(text) <= room else text[:room - 4] + '..."'
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v, 24) for v in value) + "]"
    return json.dumps(value)


@dataclass(frozen=True)
class ToolCall:
    """One concrete call the model sent: the agent's tool name and its arguments (a JSON
    object, or the text of a free-form tool). Paths carry the ``{workspace}`` placeholder."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ScriptError(f"a tool call needs a tool name, not {self.name!r}")
        if not isinstance(self.arguments, (Mapping, str)):
            raise ScriptError(f"tool call {self.name}: arguments {self.arguments!r} are "
                              "neither an object nor a text")

    def __hash__(self) -> int:
        return hash((self.name, json.dumps(self.arguments, sort_keys=True, default=str)))

    def describe(self) -> str:
        return f"{self.name} {_short(self.arguments)}"

    def to_json(self) -> dict[str, Any]:
        args = dict(self.arguments) if isinstance(self.arguments, Mapping) else self.arguments
        return {"name": self.name, "arguments": args}

    @classmethod
    def from_json(cls, data: Any) -> ToolCall:
        if isinstance(data, ToolCall):
            return data
        if not isinstance(data, Mapping) or set(data) - {"name", "arguments"}:
            raise ScriptError(f"not a tool call: {data!r}")
        return cls(data.get("name", ""), data.get("arguments", {}))


@dataclass(frozen=True)
class Tools(Reply):
    """``count`` tool calls in one response, each one the agent must ask permission for; the
    next model request carries their results. ``tool`` is what the program asks for (a
    command run, or a file edit): the model picks the agent's own tool of that kind
    (``llm.tools``). ``calls``: the concrete calls it sent, once known (a replay sends them
    as they are while the agent offers their tools). ``risk``: what a command does that an
    approval policy asks about (:data:`RISKS`; a file edit has none of its own)."""

    reply: ClassVar[str] = "tools"
    tool: str = "shell"
    count: int = 1
    calls: tuple[ToolCall, ...] = ()
    risk: str = "plain"

    def __post_init__(self) -> None:
        if self.tool not in TOOL_KINDS:
            raise ScriptError(f"tool {self.tool!r} is not one of {', '.join(TOOL_KINDS)}")
        if self.risk not in RISKS:
            raise ScriptError(f"risk {self.risk!r} is not one of {', '.join(RISKS)}")
        if not isinstance(self.count, int) or self.count < 1:
            raise ScriptError(f"tool count {self.count!r} is not a positive integer")
        calls = self.calls if isinstance(self.calls, (tuple, list)) else None
        if calls is None:
            raise ScriptError(f"tool calls {self.calls!r} are not a list")
        object.__setattr__(self, "calls", tuple(ToolCall.from_json(c) for c in calls))

    def describe(self) -> str:
        if self.calls:
            return "calls " + ", ".join(c.describe() for c in self.calls)
        what = {"shell": "shell command", "edit": "file edit",
                "long": "long-running command"}[self.tool]
        if self.risk != "plain" and self.tool != "edit":
            what += f": {RISK_WORDS[self.risk]}"
        return f"{self.count} {what} tool calls" if self.count > 1 else f"tool call ({what})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reply": self.reply, "tool": self.tool, "count": self.count}
        if self.risk != "plain":  # older replay files have none
            out["risk"] = self.risk
        if self.calls:
            out["calls"] = [c.to_json() for c in self.calls]
        return out

    def resolved(self, calls: Sequence[ToolCall]) -> Tools:
        """This reply with the concrete calls the model sent for it."""
        return dataclasses.replace(self, calls=tuple(calls)) if calls else self


FAILURES = ("http500", "overloaded", "dropped")


@dataclass(frozen=True)
class Fail(Reply):
    """The request fails (HTTP 500, the API's overloaded error, or a stream dropped after
    one chunk); a retry of the same request gets a short text."""

    reply: ClassVar[str] = "fail"
    failure: str = "http500"

    def __post_init__(self) -> None:
        if self.failure not in FAILURES:
            raise ScriptError(f"failure {self.failure!r} is not one of {', '.join(FAILURES)}")

    def describe(self) -> str:
        return {"http500": "HTTP 500", "overloaded": "overloaded error",
                "dropped": "stream dropped after one chunk"}[self.failure]


STOPS = ("max_tokens", "refusal")


@dataclass(frozen=True)
class Stop(Reply):
    """One text chunk, then the turn stops for ``max_tokens`` or a refusal."""

    reply: ClassVar[str] = "stop"
    reason: str = "max_tokens"

    def __post_init__(self) -> None:
        if self.reason not in STOPS:
            raise ScriptError(f"stop reason {self.reason!r} is not one of {', '.join(STOPS)}")

    def describe(self) -> str:
        return f"stop ({self.reason})"


@dataclass(frozen=True)
class Stall(Reply):
    """The response starts and then nothing comes, until the agent drops the request (a
    cancel) or ``STALL_LIMIT`` seconds pass."""

    reply: ClassVar[str] = "stall"

    def describe(self) -> str:
        return "stall until cancelled"


ModelScript = tuple[Reply, ...]
END = Text(1)  # what the model answers once its script ran out


def reply_from_json(data: Mapping[str, Any] | Reply) -> Reply:
    if isinstance(data, Reply):
        return data
    cls = REPLIES.get(data.get("reply", "")) if isinstance(data, Mapping) else None
    if cls is None:
        raise ScriptError(f"not a model reply: {data!r}")
    names = {f.name for f in fields(cls)}
    extra = set(data) - names - {"reply"}
    if extra:
        raise ScriptError(f"model reply {cls.reply!r} has no field {', '.join(sorted(extra))}")
    return cls(**{k: v for k, v in data.items() if k != "reply"})


def script_from_json(data: Sequence[Any]) -> ModelScript:
    return tuple(reply_from_json(r) for r in data)


def describe_script(script: ModelScript) -> str:
    """``model: tool call (shell command), then 3 chunks 200 ms apart``."""
    if not script:
        return ""
    return "model: " + ", then ".join(r.describe() for r in script)
