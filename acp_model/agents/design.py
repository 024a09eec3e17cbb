"""The design space of correct agents: independent choices the text leaves to the agent.

Each axis is one decision real agents make differently, every value of it allowed by the text
(the readings each relies on are named). The reference agent takes any combination
(``--design busy=queue,order=message-first``), so a campaign can fuzz many correct agents and
count false positives; :func:`pairwise` picks combinations that cover every pair of values.
The first value of an axis is what the reference agent does by default.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass, fields

AXES: dict[str, tuple[tuple[str, str], ...]] = {
    "busy": (  # a prompt read while a turn is running or blocked (A-01 b)
        ("join", "accept it and fold its work into the running turn"),
        ("queue", "hold it unanswered, accept it once the turn ended; a cancel leaves it be "
                  "(A-10 d: it runs afterwards)"),
        ("queue-reject", "hold it unanswered; a cancel rejects it with -32800 (A-10 a)"),
        ("reject", "reject it at once with -32602"),
    ),
    "perm_cancel": (  # a cancel while permission requests are pending
        ("alternate", "stop waiting at once; every second time also withdraw the requests "
                      "with $/cancel_request"),
        ("drop", "stop waiting at once, never withdraw"),
        ("withdraw", "stop waiting and withdraw every request with $/cancel_request"),
        ("wait", "wait for the client's cancelled answers (up to 1 s) before the idle"),
        ("grace", "keep waiting for the answers for a grace period (50 ms), then go on"),
    ),
    "order": (  # acceptance order (A-03 b)
        ("response-first", "prompt response, user message, running"),
        ("message-first", "user message and running before the prompt response"),
    ),
    "instant": (  # a cancel read before the work reported anything (A-09, A-10 b)
        ("running", "report running, then idle cancelled"),
        ("no-running", "report idle cancelled straight away"),
    ),
    "running": (  # running snapshots
        ("once", "one running per start or resumption"),
        ("repeat", "running reported twice each time"),
    ),
    "background": (  # updates while idle (STATE-07)
        ("turns", "a usage or commands update after every second turn"),
        ("none", "nothing while idle"),
        ("chatty", "usage, an agent message and commands after session/new and every turn"),
    ),
    "messages": (  # whole-message updates, chunks or both (MSG-02)
        ("mixed", "user messages alternate between whole updates and chunks"),
        ("whole", "whole-message updates only"),
        ("chunks", "chunks only"),
    ),
    "writes": (  # how messages reach stdout
        ("line", "one message per write"),
        ("lines", "several queued messages in one write"),
        ("split", "each line split across two writes"),
        ("batch-array", "session/updates grouped in JSON-RPC batch arrays of up to 3 (RPC-06)"),
    ),
    "result": (  # the prompt's success result (PROMPT-05: an open object)
        ("empty", "{}"),
        ("meta", "{_meta: ...}"),
        ("message-id", "{messageId: the user message's id} (like newer SDKs; a receipt, so "
                       "a cancel also rejects held prompts, as that revision requires)"),
    ),
    "pending_cancel": (  # a cancel read while a prompt is still being accepted
        ("accept", "accept it anyway and end its work cancelled (A-10 b/c)"),
        ("reject", "reject it with -32800 (A-10 a); acceptance takes >= 30 ms"),
    ),
    "idle_cancel": (  # a cancel with no foreground work
        ("noop", "nothing"),
        ("echo", "an idle with stopReason cancelled"),
    ),
    "initial_idle": (  # after session/new
        ("no", "nothing"),
        ("yes", "a bare idle state_update"),
    ),
}


@dataclass(frozen=True)
class Design:
    """One point of the design space (every field is an axis of :data:`AXES`)."""

    busy: str = "join"
    perm_cancel: str = "alternate"
    order: str = "response-first"
    instant: str = "running"
    running: str = "once"
    background: str = "turns"
    messages: str = "mixed"
    writes: str = "line"
    result: str = "empty"
    pending_cancel: str = "accept"
    idle_cancel: str = "noop"
    initial_idle: str = "no"

    def __post_init__(self) -> None:
        for f in fields(self):
            values = [v for v, _ in AXES[f.name]]
            if getattr(self, f.name) not in values:
                raise ValueError(f"design axis {f.name} has no value "
                                 f"{getattr(self, f.name)!r}; choose one of {', '.join(values)}")

    def changed(self) -> dict[str, str]:
        default = Design()
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) != getattr(default, f.name)}

    def spec(self) -> str:
        """The ``--design`` argument for this point (empty for the default)."""
        return ",".join(f"{k}={v}" for k, v in self.changed().items())

    @classmethod
    def parse(cls, text: str | None) -> Design:
        """``busy=queue,order=message-first`` -> a Design (ValueError with a message)."""
        values: dict[str, str] = {}
        for part in (text or "").split(","):
            if not part.strip():
                continue
            name, sep, value = part.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in AXES:
                raise ValueError(f"--design expects AXIS=VALUE with AXIS one of "
                                 f"{', '.join(AXES)}; got {part!r}")
            values[name] = value.strip()
        return cls(**values)


def pairwise(count: int = 40, seed: int = 16) -> list[Design]:
    """At least ``count`` designs that together cover every pair of values of two axes.

    Greedy all-pairs: each new design is the candidate (of a few hundred random ones) that
    covers the most pairs not yet covered; once all are, random designs fill up to ``count``.
    Deterministic for a seed; the default design comes first.
    """
    names = list(AXES)
    rng = random.Random(seed)
    todo = {((a, va), (b, vb)) for a, b in itertools.combinations(names, 2)
            for va, _ in AXES[a] for vb, _ in AXES[b]}
    out = [Design()]
    todo -= _pairs(out[0])
    while todo or len(out) < count:
        candidates = [Design(**{n: rng.choice(AXES[n])[0] for n in names}) for _ in range(300)]
        if todo:  # seed one candidate from an uncovered pair, so progress is guaranteed
            (a, va), (b, vb) = min(todo)
            base = {n: rng.choice(AXES[n])[0] for n in names}
            base[a], base[b] = va, vb
            candidates.append(Design(**base))
        best = max(candidates, key=lambda d: len(_pairs(d) & todo))
        out.append(best)
        todo -= _pairs(best)
    return out


def _pairs(d: Design) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    items = [(f.name, getattr(d, f.name)) for f in fields(d)]
    return set(itertools.combinations(items, 2))


def covered(designs: Iterable[Design]) -> bool:
    """Do ``designs`` cover every pair of values of every two axes?"""
    names = list(AXES)
    want = {((a, va), (b, vb)) for a, b in itertools.combinations(names, 2)
            for va, _ in AXES[a] for vb, _ in AXES[b]}
    got: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    for d in designs:
        got |= _pairs(d)
    return want <= got
