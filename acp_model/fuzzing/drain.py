"""The end of an example: bring its sessions to rest (cancel the work, answer what it asks as
the client rules require, wait for idle), on a deadline that a stall of ours or new work
renews (``fuzzing.stalls``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from acp_model.fuzzing.answers import CANCELLED
from acp_model.fuzzing.ops import WaitingOps

if TYPE_CHECKING:
    from acp_model.fuzzing.answers import PermissionAnswers
    from acp_model.fuzzing.calls import RpcCalls
    from acp_model.fuzzing.ops import ElicitationOps, LookOps
    from acp_model.fuzzing.stalls import Stalls

MAX_RECANCELS = 32  # new works one drain cancels, each with its own deadline: a queue of held
# prompts (one example sends at most `steps` of them) is cancelled one by one, not judged at once
MAX_LOOKS = 32  # looks one drain takes while the agent keeps asking for permission as it syncs


class DrainWaits(WaitingOps, Protocol):
    """The waits of a drain: for the agent's output, a sync, the oracle catching up, and the
    deadline each new work renews."""

    deadline: float

    def caught_up(self, timeout: float = 1.0) -> bool: ...


class Ending(Protocol):
    """What a drain does to bring work to rest: cancel it, answer what it asks (as the client
    rules require) and release the held elicitations, while the connection lives."""

    answers: PermissionAnswers
    calls: RpcCalls
    elicitations: ElicitationOps

    def cancel(self, idx: int, sync: bool = False, *,
               then_prompt: dict[str, Any] | None = None) -> None: ...

    def answering(self, timeout: float = 0.0) -> list[Any]: ...


class Drain:
    """One drain of ``indices``: the transcript index of each session's last cancel, and how
    many new works it cancelled.

    It is built with the small contexts it uses: ``look`` (the sessions and the judge's view
    of them), ``waits``, ``ends`` (the cancels and answers that bring work to rest) and the
    ``stalls`` of the scripted model it may end."""

    def __init__(self, indices: Sequence[int], *, look: LookOps, waits: DrainWaits,
                 ends: Ending, stalls: Stalls) -> None:
        self.look = look
        self.waits = waits
        self.ends = ends
        self.stalls = stalls
        self.indices = indices
        self.cancelled_at: dict[int, int] = {}  # session -> transcript index of our last cancel
        self.recancels = 0
        self.looks = 0

    def run(self) -> int | None:
        """Returns the index of its last look (None: none): what is owed after it had no
        deadline."""
        c, w, e = self.look, self.waits, self.ends
        # the teardown decides what is still busy on its view: a look, so a replay held to its
        # schedule decides once what the recording had read by then came (a turn that had
        # ended is not cancelled: the program's last wait is not needed to show its end)
        w.wait_until(lambda: True, 0.0)
        for idx in self.indices:
            if c.busy(idx):
                self._cancel(idx)
        if not e.calls.alive:
            return None
        w.sync()
        w.caught_up()  # what the agent wrote before the sync's answer is in the model
        end = time.monotonic() + w.deadline
        while e.calls.alive:
            w.wait_until(lambda: all(not c.busy(i) or c.open_permissions(i) or self._new_work(i)
                                     for i in self.indices), max(0.0, end - time.monotonic()))
            asked = self._answer_asked()
            started = [i for i in self.indices if self._new_work(i)] \
                if self.recancels < MAX_RECANCELS else []
            for i in started:
                self.recancels += 1
                self._cancel(i)
            if started:
                end = time.monotonic() + w.deadline
                continue
            if asked and time.monotonic() < end:
                continue
            if (fresh := self.stalls.fresh_deadline(end)) is not None:
                end = fresh  # the agent may have waited on our stalled model: not dead yet
                continue
            if (look := self._last_look()) is not None:
                return look
        return None

    def _new_work(self, i: int) -> bool:
        # A prompt held behind the cancelled work may start its own work afterwards (A-10
        # leaves that open): new work gets its own cancel and deadline. So does work a
        # session quiet at the first look begins later (a rejected prompt's, say).
        c = self.look
        if not c.busy(i) or c.open_permissions(i):
            return False
        if i not in self.cancelled_at:
            return True
        with c.lock:
            return c.oracle.work_began(c.sessions[i].sid) > self.cancelled_at[i]

    def _cancel(self, i: int) -> None:
        self.cancelled_at[i] = self._next_index()
        self.ends.cancel(i)

    def _answer_asked(self) -> list[tuple[str, Any]]:
        """Answer what the cancelled work asked, as the model requires (else cancelled)."""
        c, e = self.look, self.ends
        asked = [(c.sessions[i].sid, rid) for i in self.indices for rid in c.open_permissions(i)]
        for sid, rid in asked:
            if not e.answers.as_required(sid, rid):
                e.answers.send(sid, rid, CANCELLED)
        # the elicitations a drawn action held: answered, and held no more (the example ends)
        if e.elicitations.release([c.sessions[i].sid for i in self.indices]):
            asked.append(("", None))
        return asked

    def _last_look(self) -> int | None:
        """A sync, then the look: the index judged so far once nothing new began and nothing
        the agent asked waits for this client's answer (None: more to cancel or to answer).

        A permission request can arrive while the look's sync is in flight; its answer is
        owed by this client, which has not had the chance to send it: looking past it would
        judge our own client as never answering (PERM-12 on two real agents, issue 49). It
        is answered first, and looked at again; past ``MAX_LOOKS`` (an agent that asks anew
        on every sync) the look ends before the first such request, which had no deadline."""
        c, w, e = self.look, self.waits, self.ends
        # what the client's services are answering is written first (a worker on a loaded
        # machine took over a second: the look judged the agent's elicitation never answered)
        e.answering(w.window(1.0))
        w.sync()  # updates the agent wrote before reading this belong to this example,
        w.caught_up()  # and work they report begun gets its cancel as well
        self.looks += 1
        with c.lock:  # the look and its index, with nothing judged in between
            if self.recancels < MAX_RECANCELS and any(self._new_work(i)
                                                      for i in self.indices):
                return None
            waiting = self._unanswered()
            if waiting and self.looks < MAX_LOOKS:
                return None
            # a request the services still answer (a worker waiting on a terminal, say) was
            # owed by this client: the look ends before it
            serving = c.oracle.requests_sent_at(e.answering())
            return min([c.oracle.judged(), *waiting, *serving])

    def _unanswered(self) -> list[int]:
        """Where the drained sessions' permission requests that this client's answer has not
        yet reached the transcript were sent (the lock held)."""
        c = self.look
        return [at for i in self.indices
                for at in c.oracle.requests_sent_at(c.oracle.open_permissions(c.sessions[i].sid))]

    def _next_index(self) -> int:
        """The transcript index the next record gets, once the monitor has judged all so far."""
        self.waits.caught_up()
        with self.look.lock:
            return self.look.oracle.judged()

