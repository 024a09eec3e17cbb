"""What the scripted model does in one turn: a typed vocabulary of replies.

A turn of a real agent is a series of model requests: the prompt, then one request per batch
of tool results. A :data:`ModelScript` says what the model answers to each of them, in order:
stream text, call tools the agent must ask permission for, fail, stop for ``max_tokens`` or a
refusal, or stall until the agent gives up the request (a cancel). When the script runs out,
the model ends the turn with a short text. Scripts are part of the generated program (the
fuzzer's ``Prompt`` action carries one), so a counterexample describes its model behaviour and
a replay reproduces it. The wire formats live in the API adapters; nothing here knows one.

A reply's timing is part of it too (real models take seconds where the scripted one takes
milliseconds, and some races open only in those seconds): the time to its first byte
(``first_byte_ms``, every reply), the pace between text chunks (``Text.pace_ms``), a pause
before each tool call (``Tools.pause_ms``); a tool that blocks until cancelled is the
``long`` tool kind. Zero is the plain reply: :meth:`Reply.untimed` is what a minimizer tries.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

REPLIES: dict[str, type[Reply]] = {}


class ScriptError(ValueError):
    """A model reply that names no reply of the vocabulary, or a field it does not have."""


MAX_DELAY_MS = 60_000  # a delay longer than a minute is a typo, not a model
# the delays of a reply, by field name: a replay file omits them while they are zero (files
# written before timing was drawn have none)
DELAYS = ("first_byte_ms", "pace_ms", "pause_ms")


def _delay(value: Any, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_DELAY_MS:
        raise ScriptError(f"{what} {value!r} is not a whole number of milliseconds from 0 to "
                          f"{MAX_DELAY_MS}")


@dataclass(frozen=True)
class Reply:
    """One model response; subclasses register under their ``reply`` name.
    ``first_byte_ms``: how long the model takes before its response starts (time to first
    byte; a failure's error status comes as late)."""

    reply: ClassVar[str] = ""
    first_byte_ms: int = field(default=0, kw_only=True)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.reply:
            REPLIES[cls.reply] = cls

    def __post_init__(self) -> None:
        for name in DELAYS:
            if hasattr(self, name):
                _delay(getattr(self, name), name.replace("_", " "))

    def describe(self) -> str:
        raise NotImplementedError

    def described(self) -> str:
        """:meth:`describe` with its time to first byte."""
        late = f" (first byte after {self.first_byte_ms} ms)" if self.first_byte_ms else ""
        return self.describe() + late

    def untimed(self) -> Reply:
        """This reply with every delay zero (the simpler program a minimizer tries)."""
        return dataclasses.replace(self, **{f.name: 0 for f in fields(self) if f.name in DELAYS})

    @property
    def timed(self) -> bool:
        return self.untimed() != self

    def to_json(self) -> dict[str, Any]:
        return {"reply": self.reply, **{f.name: getattr(self, f.name) for f in fields(self)
                                        if f.name not in DELAYS or getattr(self, f.name)}}


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
class ModelToolCall:
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
    def from_json(cls, data: Any) -> ModelToolCall:
        if isinstance(data, ModelToolCall):
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
    approval policy asks about (:data:`RISKS`; a file edit has none of its own). ``pause_ms``:
    how long the model pauses, once its response has started, before each call (a cancel
    lands between the start of the model's answer and the call it brings)."""

    reply: ClassVar[str] = "tools"
    tool: str = "shell"
    count: int = 1
    calls: tuple[ModelToolCall, ...] = ()
    risk: str = "plain"
    pause_ms: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.tool not in TOOL_KINDS:
            raise ScriptError(f"tool {self.tool!r} is not one of {', '.join(TOOL_KINDS)}")
        if self.risk not in RISKS:
            raise ScriptError(f"risk {self.risk!r} is not one of {', '.join(RISKS)}")
        if not isinstance(self.count, int) or self.count < 1:
            raise ScriptError(f"tool count {self.count!r} is not a positive integer")
        calls = self.calls if isinstance(self.calls, (tuple, list)) else None
        if calls is None:
            raise ScriptError(f"tool calls {self.calls!r} are not a list")
        object.__setattr__(self, "calls", tuple(ModelToolCall.from_json(c) for c in calls))

    def describe(self) -> str:
        pause = f" after a {self.pause_ms} ms pause" if self.pause_ms else ""
        if self.calls:
            return "calls " + ", ".join(c.describe() for c in self.calls) + (
                f", each{pause}" if pause and len(self.calls) > 1 else pause)
        what = {"shell": "shell command", "edit": "file edit",
                "long": "long-running command"}[self.tool]
        if self.risk != "plain" and self.tool != "edit":
            what += f": {RISK_WORDS[self.risk]}"
        return (f"{self.count} {what} tool calls, each{pause}" if self.count > 1 and pause
                else f"{self.count} {what} tool calls" if self.count > 1
                else f"tool call ({what}){pause}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reply": self.reply, "tool": self.tool, "count": self.count}
        if self.risk != "plain":  # older replay files have none
            out["risk"] = self.risk
        if self.calls:
            out["calls"] = [c.to_json() for c in self.calls]
        out.update({name: getattr(self, name) for name in ("first_byte_ms", "pause_ms")
                    if getattr(self, name)})
        return out

    def resolved(self, calls: Sequence[ModelToolCall]) -> Tools:
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
        super().__post_init__()
        if self.failure not in FAILURES:
            raise ScriptError(f"failure {self.failure!r} is not one of {', '.join(FAILURES)}")

    def describe(self) -> str:
        return {"http500": "HTTP 500", "overloaded": "overloaded error",
                "dropped": "stream dropped after one chunk"}[self.failure]


STOPS = ("max_tokens", "refusal")


@dataclass(frozen=True)
class StopReply(Reply):
    """One text chunk, then the turn stops for ``max_tokens`` or a refusal."""

    reply: ClassVar[str] = "stop"
    reason: str = "max_tokens"

    def __post_init__(self) -> None:
        super().__post_init__()
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
    return "model: " + ", then ".join(r.described() for r in script)


def untimed(script: Iterable[Reply]) -> ModelScript:
    """``script`` with every reply's delays zero."""
    return tuple(r.untimed() for r in script)


def one_delay_less(script: ModelScript) -> list[ModelScript]:
    """``script`` with one of its delays zero, for each of them in turn (what a minimizer
    tries when the failure needs some of the delays, not all)."""
    out = []
    for at, reply in enumerate(script):
        for f in fields(reply):
            if f.name in DELAYS and getattr(reply, f.name):
                less = dataclasses.replace(reply, **{f.name: 0})
                out.append((*script[:at], less, *script[at + 1:]))
    return out
