"""What the sessions of one connection share: readings, capabilities and the read frontier.

Race soundness rests on one fact: stdio is FIFO per direction, so once the agent answers a client
request sent at trace index ``i``, it has provably read every client message up to ``i``. The
*read frontier* is the highest such index; :meth:`Context.answered` is the one place it moves
(the oracle calls it for every agent response, the explorer for its abstract answers), and
:meth:`Context.read` the one place a check asks it. When proofs are kept (the oracle), each move
is recorded, so a failure can say *which* response proved what (:meth:`Context.proof`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from acp_model.spec.readings import DEFAULT, Readings


@dataclass(frozen=True, slots=True)
class Proof:
    """The agent answered ``request`` (sent at that index) at ``response``: it had read every
    client message up to ``request`` before it wrote ``response``."""

    request: int
    response: int


@dataclass(slots=True)
class Context:
    """Shared by the session models of one connection."""

    readings: Readings = DEFAULT
    frontier: int = -1
    session_advertised: bool = True
    keep_proofs: bool = False
    proofs: list[Proof] = field(default_factory=list)  # frontier moves, in order
    # The agent acted on a client message (it resumed after a permission answer): it probably
    # read everything up to it, unless it acted for another reason. Never a proof.
    probable: int = -1
    hints: list[Proof] = field(default_factory=list)  # probable moves: (answer, resumption)
    # The readings a product exploration judges every configuration by (empty: ``readings``
    # alone): a snapshot's ``canon`` methods ask the readings, so its key is taken under each
    # (model.snapshot), or a field dead under the first reading would merge what another's
    # checks tell apart.
    product: tuple[Readings, ...] = ()

    def read(self, idx: int) -> bool:
        """Has the agent provably read the client message at ``idx``?"""
        return idx <= self.frontier

    def answered(self, request_idx: int, response_idx: int) -> None:
        """The agent answered the client request sent at ``request_idx``."""
        if request_idx > self.frontier:
            self.frontier = request_idx
            if self.keep_proofs:
                self.proofs.append(Proof(request_idx, response_idx))

    def acted_on(self, request_idx: int, by_idx: int) -> None:
        """The agent's message at ``by_idx`` acted on the client's message at ``request_idx``
        (resumed after that permission answer): it probably read everything up to it."""
        if request_idx > self.probable:
            self.probable = request_idx
            if self.keep_proofs:
                self.hints.append(Proof(request_idx, by_idx))

    def probably_read(self, idx: int) -> bool:
        return idx <= self.probable

    def hint(self, idx: int) -> Proof | None:
        """The first message suggesting the agent read the client message at ``idx``."""
        at = bisect.bisect_left(self.hints, idx, key=lambda p: p.request)
        return self.hints[at] if at < len(self.hints) else None

    def proof(self, idx: int) -> Proof | None:
        """The first response that proves the agent read the message at ``idx``."""
        if not self.read(idx) or not self.proofs:
            return None
        at = bisect.bisect_left(self.proofs, idx, key=lambda p: p.request)
        return self.proofs[at] if at < len(self.proofs) else None

    def derive(self) -> Context:
        """A copy for a successor configuration (the explorer keeps no proofs)."""
        return Context(self.readings, self.frontier, self.session_advertised, False, [],
                       self.probable, [], self.product)


def frontier_after(frontier: int, request_idx: int) -> int:
    """The frontier once the agent answered the request sent at ``request_idx``."""
    return max(frontier, request_idx)
