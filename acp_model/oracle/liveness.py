"""What the agent and the client still owe at a point of the trace, and its verdicts.

Open JSON-RPC requests (the connection's table) and the session models' obligations are
judged here, one verdict per open thing; which obligation an unanswered request breaks is
decided once, in :meth:`LivenessJudge._unanswered`, for every method alike: the obligation
its wire-table row names (``Message.owed``), else ACPM-ANSWER's (a permission request asks its
session model: PERM-12 or CANCEL-04).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from acp_model.model import wire_table
from acp_model.model.check import CheckMeta, declare, meta_of
from acp_model.model.obligations import REQUEST_OBLIGATIONS, WITHDRAWN_ANSWERED
from acp_model.model.vocab import Role
from acp_model.oracle.machines import Machines
from acp_model.oracle.reopens import Reopens
from acp_model.oracle.rpc import (
    OpenRequest,
    Rpc,
    batch_answered_per_request,
    batch_left_unanswered,
)
from acp_model.oracle.store import ViolationStore
from acp_model.oracle.violation import Violation

REQUEST_ANSWERED = declare("ACPM-ANSWER", "request_answered",
                           "Every request is eventually answered with a result or an error.",
                           module=__name__, role=Role.OBLIGATION)


class LivenessJudge:
    """Liveness verdicts (the monitor's ``finish`` and the fuzzer's per-example share); owns
    which sessions were judged already."""

    def __init__(self, rpc: Rpc, machines: Machines, store: ViolationStore,
                 reopens: Reopens | None = None) -> None:
        self.rpc = rpc
        self.machines = machines
        self.store = store
        self.reopens = reopens or Reopens()
        self._judged_sessions: set[str] = set()

    def judge_open(self, sessions: Iterable[str] | None, since: int, last: int,
                   deadline: float | None = None, skip: Collection[Any] = (),
                   looked: int | None = None) -> list[Violation]:
        """Liveness verdicts for what is still open.

        ``sessions=None`` judges every session and every request; otherwise only the named
        sessions and the requests sent at index ``since`` or later (one fuzz example's share).
        A session is judged once. ``last``: the index of the last record (where an
        obligation with no message of its own is reported). ``skip``: client requests someone
        still waits for (judged by that waiter). ``looked``: the trace index of the client's
        last look before it judged (the fuzzer's drain); what the agent began owing from there
        on (or could take up only since) was given no deadline, so it is no proof of "never".
        """
        before = len(self.store.violations)
        self.store.sub = None
        chosen = set(self.machines.sessions) if sessions is None else set(sessions)
        chosen -= self._judged_sessions
        self._judged_sessions |= chosen
        batches: set[int] = set()  # a batch left unanswered is one verdict, not one per request
        for direction in ("c2a", "a2c"):
            for req_id, req in self.rpc.open[direction].items():
                if not self._due(direction, req_id, req, since, deadline, skip, looked,
                                 None if sessions is None else chosen):
                    continue
                req.judged = True
                if self.rpc.silenced_by(direction, req) is not None:
                    continue  # the peer fell silent on an older request: that one is judged
                if req.batched:
                    if req.idx in batches:
                        continue
                    batches.add(req.idx)
                meta, what = self._unanswered(direction, req_id, req)
                doubt = self._reopened(req.session, req.idx) \
                    if direction == "c2a" and wire_table.owed(req.method) is not None else None
                self.store.liveness(meta, req.idx, req.session, deadline, what, doubt=doubt)
        for sid in sorted(chosen):
            for ob in self.machines.sessions[sid].obligations():
                if ob.check in REQUEST_OBLIGATIONS:
                    continue  # open requests are judged above, for every method alike
                if looked is not None and ob.since >= looked:
                    continue  # owed only since the client's last look: it had no deadline
                self.store.liveness(ob.check, ob.idx if ob.idx >= 0 else last, sid,
                                    deadline, ob.what, doubt=self._reopened(sid, ob.since))
        return self.store.violations[before:]

    def _reopened(self, sid: str | None, since: int) -> str | None:
        """Why a deadline proves nothing about what session ``sid`` owes since ``since``: the
        client reopened the session while that work ran (None: it did not)."""
        at = self.reopens.reopened_since(sid, since)
        if at is None:
            return None
        return (f"the client reopened the session at #{at} while this work ran: the text does "
                "not say whether a reopen replaces the session the work runs in, so the "
                "cancels since may not reach it, and it may still be running")

    def _due(self, direction: str, req_id: Any, req: OpenRequest, since: int,
             deadline: float | None, skip: Collection[Any], looked: int | None,
             chosen: set[str] | None) -> bool:
        """Is the open request ``req`` judged now (``chosen``: the sessions judged, None:
        all)?"""
        if req.judged or req.idx < since or (direction == "c2a" and req_id in skip):
            return False
        if looked is not None and (req.idx >= looked or self.rpc.queued_behind(
                direction, req, looked, deadline)):  # no deadline of its own: sent
            return False  # after the client's last look, or queued behind one answered since
        if chosen is None:
            return True
        return req.session in chosen if direction == "a2c" else \
            req.session is None or req.session in chosen

    def _unanswered(self, direction: str, req_id: Any, req: OpenRequest
                    ) -> tuple[CheckMeta, str]:
        """Which obligation an unanswered request breaks, and how to say it."""
        own = wire_table.owed(req.method, direction)  # its row's obligation (prompts: PROMPT-04)
        if direction == "c2a":
            if req.batched and not req.withdrawn:
                return meta_of(batch_answered_per_request), batch_left_unanswered(req, req_id)
            meta = WITHDRAWN_ANSWERED if req.withdrawn else (own or REQUEST_ANSWERED)
            named = f"{req.method} (id {req_id!r}){self._withdrawal(req)}"
            what = (f"{named} was never answered" if own is not None
                    else f"the agent never answered {named.rstrip(',')}")
            return meta, what
        what = f"the client never answered {req.method} (id {req_id!r})"
        sess = self.machines.sessions.get(req.session or "")
        if own is not None and sess is not None:  # a permission request: its session's book
            return sess.owed.unanswered_rule(req_id), what  # says which (PERM-12, CANCEL-04)
        return (WITHDRAWN_ANSWERED if req.withdrawn else REQUEST_ANSWERED), what

    def _withdrawal(self, req: OpenRequest) -> str:
        """How the client withdrew its request, and the response that proves the agent read
        the withdrawal ("" : not withdrawn): the messages a CANCEL-14 verdict rests on."""
        if not req.withdrawn or req.withdrawn_at < 0:
            return ""
        proof = self.machines.ctx.proof(req.withdrawn_at)
        read = (f" (read: the agent answered #{proof.request}, sent after it, at "
                f"#{proof.response})" if proof is not None else " (not provably read)")
        return f", withdrawn by $/cancel_request #{req.withdrawn_at}{read},"

    def judge_waited(self, req_id: Any, meta: CheckMeta, message: str, deadline: float
                     ) -> None:
        """The verdict of a client that waited for its request ``req_id`` in vain (a
        session/new past the start-up deadline): reported at the request, unless the agent
        is stuck on an older request (that one is the cause, judged on its own)."""
        req = self.rpc.open["c2a"].get(req_id)
        if req is None or req.judged or self.rpc.silenced_by("c2a", req) is not None:
            return  # a silenced one is left to judge_open: the older one may be answered by then
        req.judged = True
        self.store.sub = None
        self.store.report(meta, req.idx, message, kind="liveness", deadline=deadline)

    def reopen(self, sid: str) -> None:
        """The session is used again (a fuzz example took it over): what it owes from now on
        is judged again."""
        self._judged_sessions.discard(sid)

    def owed(self) -> list[tuple[str, bool]]:
        """What the agent still owes the client right now (requests, session obligations),
        each with whether the agent provably knew: a request it provably read (a response to
        it or to a later one), or an obligation of work it accepted or reported itself
        (``Obligation.by_client`` says which rest on a client message). A request still in its
        input pipe when it exits was owed, but it cannot be shown that the agent knew."""
        read = self.machines.ctx.read
        out = [(f"a response to {req.method} #{req.idx}", read(req.idx))
               for req in self.rpc.open["c2a"].values() if not req.judged]
        for sid, sess in self.machines.sessions.items():
            out += [(f"{ob.what} (session {sid})",
                     not ob.by_client or read(ob.idx))
                    for ob in sess.obligations() if ob.check not in REQUEST_OBLIGATIONS]
        return out
