"""A broken rule, as every report shows it: where, how bad, what was expected, and the proof."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from acp_model.spec.levels import Level
from acp_model.spec.rules import RULES

# What a violation is about: something the agent did (safety) or something it still owes.
ViolationKind = Literal["safety", "liveness"]


@dataclass(slots=True)
class Violation:
    """A broken rule: where, how bad, and what was expected instead.

    ``evidence`` lists the trace records that establish a race-dependent failure, each with its
    role (``(12, "session/cancel")``, ``(14, "response proving it was read")`` ...), so a
    reader can check the proof without trusting the model.
    """

    rule: str
    level: Level  # FAIL or WARN
    strength: str
    index: int
    message: str
    kind: ViolationKind = "safety"
    session: str | None = None
    check: str | None = None
    sub: int | None = None  # element of a batch
    related: list[int] = field(default_factory=list)
    deadline: float | None = None
    evidence: list[tuple[int, str]] = field(default_factory=list)
    view: dict[str, Any] | None = None  # the client's view of the session at the failure

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v is not None and v != []}
        if self.evidence:
            out["evidence"] = [{"index": i, "role": role} for i, role in self.evidence]
        out["party"] = RULES[self.rule].party
        return out
