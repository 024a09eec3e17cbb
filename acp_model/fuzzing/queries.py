"""The questions the fuzzer asks its judge, in one small interface.

The fuzz client acts on what the model says of the connection: whether a session works, which
permission requests are open, which answers the model still allows, what is owed. Every such
question goes through :class:`OracleQueries`, so the fuzzer depends on these answers and not
on how the monitor holds them (its machines, open requests, liveness judge and views stay the
oracle's business; ``tests/unit/test_layout.py`` refuses a chain such as
``.monitor.machines.`` anywhere else in the fuzzer). Callers hold the client's lock, as for
any read of the monitor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_model.model.vocab import FINAL_TOOL_STATUSES, Level, ToolStatus
from acp_model.model.wire_shapes import Shape, shape

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from acp_model.model.check import CheckMeta
    from acp_model.oracle.monitor import Monitor


class OracleQueries:
    """What the fuzzer asks the monitor of one connection, and the two facts it tells it
    (a verdict made off the wire, a wait it gave up, a session it takes over again)."""

    def __init__(self, monitor: Monitor) -> None:
        self._monitor = monitor
        # the judged revision's wire: what the client sends differently (login, reopening,
        # permission outcomes, batches)
        self.shape: Shape = shape(monitor.rev)

    def judged(self) -> int:
        """How many records the monitor has judged (the next one's index)."""
        return self._monitor.count

    def client_may(self, sid: str, event: str) -> bool:
        """Would the model let the client send ``event`` on the session now?"""
        return self._monitor.client_may(sid, event)

    # ------------------------------------------------------------- a session's machine
    def state(self, sid: str) -> str | None:
        return self._monitor.machines.state(sid)

    def busy(self, sid: str) -> bool:
        return self._monitor.machines.busy(sid)

    def work_began(self, sid: str) -> int:
        """The index at which the session's latest work began."""
        return self._monitor.machines.work_began(sid)

    def cancel_may_miss(self, sid: str) -> bool:
        """May a cancel miss the session's work (it came after a reopen of a working one)?"""
        return self._monitor.machines.cancel_may_miss(sid)

    def tool_running(self, sid: str) -> bool:
        """Does a tool call the session reported still run (no final status yet)?"""
        view = self._monitor.views.get(sid)
        return view is not None and any(t.status not in FINAL_TOOL_STATUSES
                                        for t in view.tools.values())

    def tool_in_progress(self, sid: str) -> bool:
        """Does the session report a tool call running (``in_progress``) right now?"""
        view = self._monitor.views.get(sid)
        return view is not None and any(t.status == ToolStatus.IN_PROGRESS
                                        for t in view.tools.values())

    def transition_counts(self) -> dict[str, int]:
        return self._monitor.machines.transition_counts()

    # -------------------------------------------------------------- open requests
    def open_permissions(self, sid: str) -> list[Any]:
        """The session's permission requests no answer has reached yet, oldest first."""
        return self._monitor.rpc.open_permissions(sid)

    def permissions_sent_at(self, sid: str) -> list[int]:
        """Where each of those requests was sent (transcript indices)."""
        return self.requests_sent_at(self._monitor.rpc.open_permissions(sid))

    def requests_sent_at(self, rids: Iterable[Any]) -> list[int]:
        """Where each of the agent's requests ``rids`` still open was sent (transcript
        indices)."""
        opened = self._monitor.rpc.open["a2c"]
        return [req.idx for rid in rids if (req := opened.get(rid)) is not None]

    def pending_prompts(self, sid: str) -> list[Any]:
        return self._monitor.rpc.pending_prompts(sid)

    def withdrawn(self, rid: Any) -> bool:
        """Did the agent withdraw its request ``rid`` ($/cancel_request)?"""
        return self._monitor.rpc.withdrawn(rid)

    def permission_options(self, sid: str, rid: Any) -> Mapping[str, Any]:
        return self._monitor.machines.permission_options(sid, rid)

    def required_answers(self, sid: str, rid: Any
                         ) -> frozenset[tuple[str, int | None]] | None:
        """The only answers the model allows to the request now (None: any)."""
        return self._monitor.machines.required_answers(sid, rid)

    # ------------------------------------------------------- what the client tells it
    def note(self, meta: CheckMeta, message: str, *, session: str | None = None,
             level: Level | None = None) -> None:
        """A verdict the client makes off the wire (the model it scripts stopped, say)."""
        self._monitor.note(meta, message, session=session, level=level)

    def owed(self) -> list[tuple[str, bool]]:
        """What the agent owes now (the liveness judge's open obligations)."""
        return self._monitor.liveness.owed()

    def judge_waited(self, rid: Any, meta: CheckMeta, what: str, deadline: float) -> None:
        """The client waited ``deadline`` for the answer to its request ``rid`` and gave up."""
        self._monitor.liveness.judge_waited(rid, meta, what, deadline)

    def reopen(self, sid: str) -> None:
        """The client takes a quiet session over again (a later example's)."""
        self._monitor.liveness.reopen(sid)
