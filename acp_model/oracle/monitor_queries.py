"""The oracle's answers to the fuzzer's questions (``fuzzing/queries.py``'s ``OracleQueries``).

A thin adapter over one :class:`~acp_model.oracle.monitor.Monitor`: each question is answered
by the part of the monitor that owns the fact (its machines, open requests, liveness judge,
client views or violation store), so the fuzzer depends on the questions and this module
alone knows where the answers live. It decides nothing itself. The oracle cannot import the
fuzzer (a lower layer), so the protocol is met structurally; ``tests/unit/test_oracle_queries``
holds the two together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_model.model.vocab import FINAL_TOOL_STATUSES, ToolStatus
from acp_model.model.wire_shapes import Shape, shape

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from acp_model.model.check import CheckMeta
    from acp_model.model.vocab import Level
    from acp_model.oracle.monitor import Monitor
    from acp_model.oracle.violation import Violation, ViolationKind
    from acp_model.report.stats import RuleStat


class MonitorQueries:
    """What the fuzzer asks the monitor of one connection, what it tells it, and the verdicts
    it reads back. Callers hold the client's lock, as for any read of the monitor."""

    def __init__(self, monitor: Monitor) -> None:
        self._monitor = monitor
        self.shape: Shape = shape(monitor.rev)  # the judged revision's wire

    # ------------------------------------------------------------- a session's machine
    def judged(self) -> int:
        return self._monitor.count

    def client_may(self, sid: str, event: str) -> bool:
        return self._monitor.client_may(sid, event)

    def state(self, sid: str) -> str | None:
        return self._monitor.machines.state(sid)

    def busy(self, sid: str) -> bool:
        return self._monitor.machines.busy(sid)

    def work_began(self, sid: str) -> int:
        return self._monitor.machines.work_began(sid)

    def cancel_may_miss(self, sid: str) -> bool:
        return self._monitor.machines.cancel_may_miss(sid)

    def tool_running(self, sid: str) -> bool:
        view = self._monitor.views.get(sid)
        return view is not None and any(t.status not in FINAL_TOOL_STATUSES
                                        for t in view.tools.values())

    def tool_in_progress(self, sid: str) -> bool:
        view = self._monitor.views.get(sid)
        return view is not None and any(t.status == ToolStatus.IN_PROGRESS
                                        for t in view.tools.values())

    # -------------------------------------------------------------- open requests
    def open_permissions(self, sid: str) -> list[Any]:
        return self._monitor.rpc.open_permissions(sid)

    def requests_sent_at(self, rids: Iterable[Any]) -> list[int]:
        opened = self._monitor.rpc.open["a2c"]
        return [req.idx for rid in rids if (req := opened.get(rid)) is not None]

    def pending_prompts(self, sid: str) -> list[Any]:
        return self._monitor.rpc.pending_prompts(sid)

    def withdrawn(self, rid: Any) -> bool:
        return self._monitor.rpc.withdrawn(rid)

    def permission_options(self, sid: str, rid: Any) -> Mapping[str, Any]:
        return self._monitor.machines.permission_options(sid, rid)

    def required_answers(self, sid: str, rid: Any
                         ) -> frozenset[tuple[str, int | None]] | None:
        return self._monitor.machines.required_answers(sid, rid)

    def owed(self) -> list[tuple[str, bool]]:
        return self._monitor.liveness.owed()

    # ------------------------------------------------------- what the client tells it
    def note(self, meta: CheckMeta, message: str, *, session: str | None = None,
             kind: ViolationKind = "safety", deadline: float | None = None,
             level: Level | None = None) -> None:
        self._monitor.note(meta, message, session=session, kind=kind, deadline=deadline,
                           level=level)

    def judge_waited(self, rid: Any, meta: CheckMeta, what: str, deadline: float) -> None:
        self._monitor.liveness.judge_waited(rid, meta, what, deadline)

    def reopen(self, sid: str) -> None:
        self._monitor.liveness.reopen(sid)

    # ------------------------------------------------------------------- verdicts
    def violations(self, since: int = 0) -> list[Violation]:
        return self._monitor.violations[since:]

    def judge_open(self, sids: Iterable[str], since: int, deadline: float | None, *,
                   skip: Collection[Any] = (), looked: int | None = None) -> list[Violation]:
        return self._monitor.judge_open(sids, since, deadline, skip=skip, looked=looked)

    def exercised(self) -> dict[str, int]:
        return self._monitor.exercised()

    def transition_counts(self) -> dict[str, int]:
        return self._monitor.machines.transition_counts()

    def rule_stats(self) -> dict[str, RuleStat]:
        return self._monitor.rule_stats()

    def sessions_judged(self) -> int:
        return len(self._monitor.machines.sessions)
