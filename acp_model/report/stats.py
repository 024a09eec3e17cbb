"""What one run saw of each rule (exercised, broken, warned), kept apart from the catalogue: the
catalogue is data about the specification, this is bookkeeping of a run."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class RuleStat:
    """Per-run bookkeeping: how often a rule was exercised and whether it was broken."""

    exercised: int = 0
    violations: int = 0
    warnings: int = 0
    examples: list[int] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.violations:
            return "violated"
        if self.warnings:
            return "warned"
        return "held" if self.exercised else "not exercised"
