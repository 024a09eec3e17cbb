"""What keeps the explored state space finite, and the fixed names the explorer uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_model.model.vocab import StopReason, ToolStatus

SESSION_IDS = ("s1", "s2", "s3")


TOOL_IDS = ("t1", "t2", "t3")


CUSTOM_STATE = "_paused"


SYNC = "sync"


MISSING = "NO-TRANSITION"  # pseudo rule: the machine has no transition for (state, event)


@dataclass(frozen=True, slots=True)
class Bounds:
    """What keeps the extended state finite (counts are per session) and which optional parts
    of the alphabet are tried. Defaults depend on the number of sessions (:meth:`default`):
    the graph grows roughly with the power of the session count."""

    sessions: int = 1
    max_prompts: int = 1  # prompts held by the model: sent and their work not yet ended
    max_permissions: int = 1  # permission requests held (answered ones are forgotten when
    #                            nothing can read them any more, see SessionModel.compact)
    max_cancels: int = 1  # cancels held by the model (or watched by the observer)
    max_elicitations: int = 0  # session-scoped elicitations held (off unless asked for)
    max_tools: int = 0  # distinct toolCallIds; a permission request guards one when > 0
    custom: bool = True  # try custom (``_x``) foreground states
    reasons: tuple[str | None, ...] = (None, StopReason.END_TURN, StopReason.CANCELLED)
    tool_statuses: tuple[str, ...] = (ToolStatus.IN_PROGRESS, ToolStatus.COMPLETED,
                                     ToolStatus.CANCELLED)
    lean: bool = False  # core alphabet only: no output, no $/cancel_request, no rejection,
    #                     no user message before the prompt response

    @classmethod
    def default(cls, sessions: int = 1, **overrides: Any) -> Bounds:
        """Bounds that explore in about ten seconds for 1 or 2 sessions and about a minute for
        3 (see ``benchmarks/bench_explore.py``); ``None`` overrides are ignored."""
        base: dict[str, Any] = {"sessions": sessions}
        if sessions >= 2:
            base.update(max_permissions=0, custom=False, lean=True)
        if sessions >= 3:
            base.update(reasons=(StopReason.END_TURN, StopReason.CANCELLED))
        base.update({k: v for k, v in overrides.items() if v is not None})
        if "reasons" in base:
            base["reasons"] = tuple(base["reasons"])
        return cls(**base)

    def __post_init__(self) -> None:
        if not 1 <= self.sessions <= len(SESSION_IDS):
            raise ValueError(f"sessions must be 1..{len(SESSION_IDS)}, got {self.sessions}")
        if not 0 <= self.max_tools <= len(TOOL_IDS):
            raise ValueError(f"max tools must be 0..{len(TOOL_IDS)}, got {self.max_tools}")
        for name in ("max_prompts", "max_permissions", "max_cancels", "max_elicitations"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name.replace('_', ' ')} must be >= 0")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sessions": self.sessions, "max_prompts": self.max_prompts,
            "max_permissions": self.max_permissions, "max_cancels": self.max_cancels,
            "max_tools": self.max_tools, "custom_states": self.custom,
            "reasons": list(self.reasons), "tool_statuses": list(self.tool_statuses),
            "lean": self.lean}
        if self.max_elicitations:  # (off by default: earlier results name no such bound)
            out["max_elicitations"] = self.max_elicitations
        return out

    def describe(self) -> str:
        return (f"{self.sessions} session(s); per session at most {self.max_prompts} prompt(s), "
                f"{self.max_permissions} permission request(s), {self.max_cancels} cancel(s), "
                f"{self.max_tools} tool call(s)"
                + (f", {self.max_elicitations} elicitation(s)" if self.max_elicitations else "")
                + "; custom states "
                f"{'on' if self.custom else 'off'}; idle reasons "
                f"{', '.join(str(r) for r in self.reasons)}"
                + ("; lean alphabet" if self.lean else ""))
