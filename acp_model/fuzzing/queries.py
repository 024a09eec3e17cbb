"""The questions the fuzzer asks its judge, in one small interface.

The fuzz client acts on what the model says of the connection: whether a session works, which
permission requests are open, which answers the model still allows, what is owed. Every such
question, every fact the client tells the judge and every verdict it reads back goes through
:class:`OracleQueries`, so the fuzzer depends on these answers and not on how the monitor holds
them. The oracle answers them (``oracle/monitor_queries.py``, a thin adapter over the
monitor); the fuzzer itself touches a monitor only to feed it the wire
(``tests/unit/test_oracle_queries.py`` scans for any other reach). Callers hold the client's
lock, as for any read of the monitor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

    from acp_model.model.check import CheckMeta
    from acp_model.model.vocab import Level
    from acp_model.model.wire_shapes import Shape
    from acp_model.oracle.violation import Violation, ViolationKind
    from acp_model.report.stats import RuleStat


class OracleQueries(Protocol):
    """What the fuzzer asks the judge of one connection, the facts it tells it (a verdict made
    off the wire, a wait it gave up, a session it takes over again) and the verdicts it reads
    back (an example's, the run's report)."""

    # the judged revision's wire: what the client sends differently (login, reopening,
    # permission outcomes, batches)
    shape: Shape

    # ------------------------------------------------------------- a session's machine
    def judged(self) -> int:
        """How many records the monitor has judged (the next one's index)."""
        ...

    def client_may(self, sid: str, event: str) -> bool:
        """Would the model let the client send ``event`` on the session now?"""
        ...

    def state(self, sid: str) -> str | None:
        """The state the agent last reported for the session (None: unknown session)."""
        ...

    def busy(self, sid: str) -> bool:
        """Foreground work, or prompts whose work has not ended with an idle yet."""
        ...

    def work_began(self, sid: str) -> int:
        """The index at which the session's latest work began."""
        ...

    def cancel_may_miss(self, sid: str) -> bool:
        """May a cancel miss the session's work (it came after a reopen of a working one)?"""
        ...

    def tool_running(self, sid: str) -> bool:
        """Does a tool call the session reported still run (no final status yet)?"""
        ...

    def tool_in_progress(self, sid: str) -> bool:
        """Does the session report a tool call running (``in_progress``) right now?"""
        ...

    # -------------------------------------------------------------- open requests
    def open_permissions(self, sid: str) -> list[Any]:
        """The session's permission requests no answer has reached yet, oldest first."""
        ...

    def requests_sent_at(self, rids: Iterable[Any]) -> list[int]:
        """Where each of the agent's requests ``rids`` still open was sent (transcript
        indices)."""
        ...

    def pending_prompts(self, sid: str) -> list[Any]:
        """The session's prompts not answered yet."""
        ...

    def withdrawn(self, rid: Any) -> bool:
        """Did the agent withdraw its request ``rid`` ($/cancel_request)?"""
        ...

    def permission_options(self, sid: str, rid: Any) -> Mapping[str, Any]:
        """The options the agent offered in its permission request ``rid``."""
        ...

    def required_answers(self, sid: str, rid: Any
                         ) -> frozenset[tuple[str, int | None]] | None:
        """The only answers the model allows to the request now (None: any)."""
        ...

    def owed(self) -> list[tuple[str, bool]]:
        """What the agent owes now, each with whether it provably knew (the liveness
        judge's open obligations)."""
        ...

    # ------------------------------------------------------- what the client tells it
    def note(self, meta: CheckMeta, message: str, *, session: str | None = None,
             kind: ViolationKind = "safety", deadline: float | None = None,
             level: Level | None = None) -> None:
        """A verdict the client makes off the wire (a crash, a stalled model, no answer to
        its initialize)."""
        ...

    def judge_waited(self, rid: Any, meta: CheckMeta, what: str, deadline: float) -> None:
        """The client waited ``deadline`` for the answer to its request ``rid`` and gave up."""
        ...

    def reopen(self, sid: str) -> None:
        """The client takes a quiet session over again (a later example's)."""
        ...

    # ------------------------------------------------------------------- verdicts
    def violations(self, since: int = 0) -> list[Violation]:
        """The violations found so far, from the ``since``-th on."""
        ...

    def judge_open(self, sids: Iterable[str], since: int, deadline: float | None, *,
                   skip: Collection[Any] = (), looked: int | None = None) -> list[Violation]:
        """Liveness verdicts at an example's end: what the sessions ``sids`` still owe of what
        was asked from record ``since`` on (``skip``: requests still awaited elsewhere;
        ``looked``: the index of the client's last look)."""
        ...

    def exercised(self) -> dict[str, int]:
        """How often each rule was exercised."""
        ...

    def transition_counts(self) -> dict[str, int]:
        """How often each transition of the session machines was taken."""
        ...

    def rule_stats(self) -> dict[str, RuleStat]:
        """Each rule's statistics, for the run's report."""
        ...

    def sessions_judged(self) -> int:
        """How many sessions the oracle judged on the connection."""
        ...
