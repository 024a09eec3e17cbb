"""What a fuzz client offers the parts that act through it: the narrow protocols that actions
(:mod:`acp_model.fuzzing.actions`) and the session factory (:mod:`acp_model.fuzzing.sessions`)
depend on, instead of the whole :class:`~acp_model.fuzzing.client.FuzzClient`.

With them live the two small types all three share (a session's handle, a sloppy client's
mistake). They name only what those parts call, so the import graph has no circle (client imports
actions and sessions; these import only this module) and a reader sees at one glance what an
action may do to a connection.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from acp_model.model.vocab import Answer
from acp_model.report.reach import Reach

if TYPE_CHECKING:
    from acp_model.fuzzing.transport import AgentProcess
    from acp_model.llm.server import ScriptedModel
    from acp_model.oracle.monitor import Monitor


@dataclass
class SessionHandle:
    """One session of the connection, as the client keeps it."""

    sid: str
    prompts: list[Any] = field(default_factory=list)  # request ids, in order
    reused: bool = False  # a quiet session an earlier example left, taken over


class Mistake(StrEnum):
    """What a sloppy client gets wrong (``SloppyAnswer``, ``ClientOps.sloppy_answer``)."""

    DUPLICATE = "duplicate"  # a second allow for the session's last answered request
    AFTER_CANCEL = "after_cancel"  # cancel, then allow (not cancelled) for pending requests
    WITHDRAWN = "withdrawn"  # allow for a request the agent withdrew
    LATE = "late"  # cancel, and allow the pending requests once the cancelled work has ended


class Connection(Protocol):
    """The process, its judge and the client's waits: what the session factory uses."""

    proc: AgentProcess
    monitor: Monitor
    lock: threading.RLock
    cwd: str
    deadline: float
    startup_deadline: float
    session_config: Sequence[tuple[str, dict[str, Any]]]


class ClientOps(Connection, Protocol):
    """Everything a client action may do: sessions, prompts' bookkeeping, cancels, permission
    answers (careful and sloppy), the waits, and request ids of the client's own."""

    model: ScriptedModel | None
    tick: float
    batches_unanswered: bool
    reloads: frozenset[str]  # the requests that reopen a session the agent advertised
    reach: Counter[Reach]

    @property
    def sessions(self) -> list[SessionHandle]: ...

    def session_index(self, s: int) -> int | None: ...

    def new_session(self) -> None: ...

    def busy(self, s: int) -> bool: ...

    def settled(self, s: int) -> bool: ...

    def settle(self, idx: int, limit: float) -> bool: ...

    def window(self, seconds: float) -> float: ...

    def open_permissions(self, s: int) -> list[Any]: ...

    def pending_prompts(self, s: int) -> list[Any]: ...

    def cancel(self, idx: int, sync: bool = False, *,
               then_prompt: dict[str, Any] | None = None) -> None: ...

    def answer_permission(self, idx: int, wanted: Answer, *, newest: bool = False,
                          late: bool = False, sync: bool = False) -> None: ...

    def sloppy_answer(self, idx: int, mistake: Mistake) -> None: ...

    def sync(self) -> None: ...

    def turn_started(self, tag: str) -> None: ...

    def next_id(self) -> int: ...


SYNC_METHOD = "_acp_model/sync"


def sync_message(rid: int) -> dict[str, Any]:
    """A request the agent must answer (-32601 will do): its response proves what it read."""
    return {"jsonrpc": "2.0", "id": rid, "method": SYNC_METHOD, "params": {}}
