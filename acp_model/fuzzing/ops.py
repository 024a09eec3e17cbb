"""What a fuzz client offers the parts that act through it: the narrow protocols that actions
(:mod:`acp_model.fuzzing.actions`) and the session factory (:mod:`acp_model.fuzzing.sessions`)
depend on, instead of the whole :class:`~acp_model.fuzzing.client.FuzzClient`.

With them live the small types all three share (a session's handle, a sloppy client's mistake,
the client's own request ids). They name only what those parts call, so the import graph has no
circle (client imports actions and sessions; these import only this module) and a reader sees
at one glance what an action may do to a connection.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from acp_model.model.vocab import Answer, ElicitationAction
from acp_model.report.reach import Reach
from acp_model.trace.wire import is_response_to

if TYPE_CHECKING:
    from acp_model.fuzzing.calls import RpcCalls
    from acp_model.fuzzing.editors import ClientProfile
    from acp_model.fuzzing.model_window import ScriptedTurns
    from acp_model.fuzzing.queries import OracleQueries
    from acp_model.llm.server import ScriptedModel


@dataclass
class SessionHandle:
    """One session of the connection, as the client keeps it."""

    sid: str
    prompts: list[Any] = field(default_factory=list)  # request ids, in order
    reused: bool = False  # a quiet session an earlier example left, taken over


class Mistake(StrEnum):
    """What a sloppy client gets wrong (``SloppyAnswer``, ``PermissionOps.sloppy``)."""

    DUPLICATE = "duplicate"  # a second allow for the session's last answered request
    AFTER_CANCEL = "after_cancel"  # cancel, then allow (not cancelled) for pending requests
    WITHDRAWN = "withdrawn"  # allow for a request the agent withdrew
    LATE = "late"  # cancel, and allow the pending requests once the cancelled work has ended


class CallOps(Protocol):
    """The connection's calls and how long one may wait: what closing sessions uses."""

    calls: RpcCalls  # the JSON-RPC requests, answers and waits of the connection
    deadline: float


class Connection(CallOps, Protocol):
    """The connection's calls, what it asks its judge and the client's waits: what the
    session factory uses."""

    oracle: OracleQueries
    lock: threading.RLock
    cwd: str
    startup_deadline: float
    session_config: Sequence[tuple[str, dict[str, Any]]]

    def wait_delivered(self, timeout: float) -> bool: ...


class PermissionOps(Protocol):
    """How an action answers the agent's permission requests."""

    def answer(self, idx: int, wanted: Answer, *, newest: bool = False, late: bool = False,
               sync: bool = False) -> None: ...

    def sloppy(self, idx: int, mistake: Mistake) -> None: ...


class ElicitationOps(Protocol):
    """How an action holds the agent's elicitations open and answers them
    (``fuzzing/elicitations.py``)."""

    def hold(self, sid: str, after_cancel: ElicitationAction) -> None: ...

    def answer(self, sid: str, action: ElicitationAction, *, newest: bool = False) -> bool: ...

    def waiting(self, sid: str) -> Sequence[Any]: ...

    def after_cancel(self, idx: int) -> None: ...

    def release(self, sids: Sequence[str]) -> int: ...


class SessionsOps(Protocol):
    """The sessions of the connection as the client keeps them: what every action on one of
    them reads (``s`` of the program -> its index, or None while it does not exist)."""

    @property
    def sessions(self) -> list[SessionHandle]: ...

    def session_index(self, s: int) -> int | None: ...


class NewSessionOps(Protocol):
    """What opening a session uses."""

    def new_session(self) -> None: ...


class PromptOps(SessionsOps, Protocol):
    """What sending a prompt uses: the editor's habits, the scripted model's turn (started
    with its listeners: ``turns``), the oracle's view of the session."""

    calls: RpcCalls
    cwd: str
    lock: threading.RLock
    oracle: OracleQueries
    profile: ClientProfile  # the editor played: its habits shape how actions write
    turns: ScriptedTurns  # the scripted turns it starts, with their listeners


class CancelOps(SessionsOps, Protocol):
    """What cancelling uses: the cancel itself, the prompts still pending, the oracle's view
    of what runs."""

    calls: RpcCalls
    lock: threading.RLock
    oracle: OracleQueries

    def cancel(self, idx: int, sync: bool = False, *,
               then_prompt: dict[str, Any] | None = None) -> None: ...

    def pending_prompts(self, s: int) -> list[Any]: ...


class WaitOps(SessionsOps, Protocol):
    """What waiting uses: the client's tick, settling, a window of time, a sync."""

    calls: RpcCalls
    tick: float

    def settle(self, idx: int, limit: float) -> bool: ...

    def settled(self, s: int) -> bool: ...

    def window(self, seconds: float) -> float: ...

    def sync(self) -> None: ...


class PermissionAnswerOps(SessionsOps, Protocol):
    """What answering the agent's permission requests uses (careful and sloppy)."""

    calls: RpcCalls
    deadline: float

    @property
    def answers(self) -> PermissionOps: ...

    def open_permissions(self, s: int) -> list[Any]: ...

    def busy(self, s: int) -> bool: ...

    def settle(self, idx: int, limit: float) -> bool: ...

    def window(self, seconds: float) -> float: ...

    def sync(self) -> None: ...


class ElicitingOps(SessionsOps, Protocol):
    """What holding and answering the agent's elicitations uses."""

    elicitations: ElicitationOps  # the elicitations a drawn action holds open

    def settled(self, s: int) -> bool: ...

    def window(self, seconds: float) -> float: ...

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool: ...

    def sync(self) -> None: ...


class Advertised(Protocol):
    """What the agent's initialize result advertised that an action reads."""

    reloads: frozenset[str]  # the requests that reopen a session


class ReopenOps(SessionsOps, Protocol):
    """What reopening a session (session/load, session/resume) uses."""

    calls: RpcCalls
    cwd: str
    deadline: float
    oracle: OracleQueries
    reach: Counter[Reach]
    session_config: Sequence[tuple[str, dict[str, Any]]]
    handshake: Advertised

    def busy(self, s: int) -> bool: ...


class ProbeOps(SessionsOps, Protocol):
    """What a deliberate breach of the protocol uses: its own request ids and the raw
    connection."""

    calls: RpcCalls
    deadline: float
    batches_unanswered: bool

    def sync(self) -> None: ...

    def next_id(self) -> int: ...


class ClientOps(Connection, PromptOps, CancelOps, WaitOps, PermissionAnswerOps, ElicitingOps,
                ReopenOps, ProbeOps, NewSessionOps, Protocol):
    """Everything a fuzz client offers its actions: what ``Action.perform`` is handed, each
    action family asking only for its own protocol above (the client's parts below)."""


# The client's own parts (its answers, held elicitations, stalls, the reach of a cancel; the
# drain's and the process watch's live beside them) are built with the client too, and each
# names what it uses of it: tests/unit/test_action_context.py holds them to it.
class LookOps(Protocol):
    """What a part reads of the client's sessions and of the judge's view of them (asked with
    the lock held)."""

    lock: threading.RLock
    oracle: OracleQueries

    @property
    def sessions(self) -> list[SessionHandle]: ...

    def busy(self, s: int) -> bool: ...

    def open_permissions(self, s: int) -> list[Any]: ...


class MeetOps(Protocol):
    """What the reach of a cancel reads (``reach.cancel_meets``): the sessions, the judge's
    view of them, and whether the scripted model serves the session's turn."""

    lock: threading.RLock
    oracle: OracleQueries
    model: ScriptedModel | None

    @property
    def sessions(self) -> list[SessionHandle]: ...

    def open_permissions(self, s: int) -> list[Any]: ...


class StallOps(MeetOps, Protocol):
    """What ending the scripted model's stalls uses (``stalls.Stalls``)."""

    deadline: float

    def busy(self, s: int) -> bool: ...


class WaitingOps(Protocol):
    """The client's waits a part uses: until something holds, a window of time, a sync."""

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool: ...

    def window(self, seconds: float) -> float: ...

    def sync(self) -> None: ...


class ReplyOps(Protocol):
    """What the client's own replies to the agent's requests use (``answers.PermissionAnswers``):
    the connection's calls and the reach they count in (a pool swaps in the run's)."""

    calls: RpcCalls
    reach: Counter[Reach]


class AnswerWaits(WaitingOps, Protocol):
    """The waits of a careful or sloppy permission answer (``answers.PermissionAnswers``):
    for a request to come or the session to settle, and how long a dying agent gets."""

    deadline: float

    def settle(self, idx: int, limit: float) -> bool: ...

    def settled(self, s: int) -> bool: ...


class HoldingOps(WaitingOps, Protocol):
    """What holding the agent's elicitations uses (``elicitations.HeldElicitations``): the
    sessions and the judge's view of them, the calls, the reach it counts in, the waits."""

    calls: RpcCalls
    lock: threading.RLock
    oracle: OracleQueries
    reach: Counter[Reach]

    @property
    def sessions(self) -> list[SessionHandle]: ...

    def busy(self, s: int) -> bool: ...


SYNC_METHOD = "_acp_model/sync"


def sync_message(rid: int) -> dict[str, Any]:
    """A request the agent must answer (-32601 will do): its response proves what it read."""
    return {"jsonrpc": "2.0", "id": rid, "method": SYNC_METHOD, "params": {}}


class RequestIds:
    """Ids for the client's own requests (from a million up: never one the agent could echo),
    and the sync request whose response proves what the agent has read."""

    def __init__(self, calls: RpcCalls, deadline: float) -> None:
        self.calls = calls
        self.deadline = deadline
        self._ids = itertools.count(1_000_000)

    def next(self) -> int:
        return next(self._ids)

    def send_sync(self, after: dict[str, Any] | None = None) -> tuple[int, int]:
        """Send a sync; returns (its id, the transcript mark its answer comes after).
        ``after``: a message written first, in the same write, so the agent reads the sync
        with it and its answer proves that message read before anything the agent does after
        (no gap between them for the agent's reaction to outrun the proof)."""
        rid = self.next()
        mark = self.calls.mark()  # the answer comes after the request: scan only from here
        if after is None:
            self.calls.send(sync_message(rid))
        else:
            self.calls.send_many([after, sync_message(rid)])
        return rid, mark

    def await_sync(self, sent: tuple[int, int]) -> None:
        """Wait (up to the deadline) for the answer to the sync ``sent``."""
        self.calls.wait_for_index(lambda m: is_response_to(m, sent[0]), self.deadline,
                                 start=sent[1])
