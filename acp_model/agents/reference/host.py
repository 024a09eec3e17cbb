"""What the reference agent's parts (prompts, work, permissions, sessions) use of the agent
that holds them: the protocol it speaks, its design, and the reports it sends (a planted bug
comes to each part as its own hooks, ``faults.py``).

They see the agent only through :class:`Host`, so each part reads alone and the package's
import graph has no circle: ``agent`` imports the parts, the parts import this module. A
``Host`` is also the :class:`~acp_model.agents.reference.faults.AgentOps` a fault hook gets.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from acp_model.agents.reference.faults import AgentOps

if TYPE_CHECKING:
    import asyncio

    from acp_model.agents.design import Design
    from acp_model.agents.reference.output import Output
    from acp_model.agents.reference.state import Session


class Host(AgentOps, Protocol):
    """The agent as its parts see it."""

    design: Design
    protocol: int  # 2, or 1 when the client asked for v1 (reference/v1.py)
    elicits: bool  # the client advertised form elicitation (v2)
    seed: int
    forced: dict[str, bool]
    out: Output

    @property
    def newer(self) -> bool: ...

    @property
    def sends_receipts(self) -> bool: ...

    def reply_error(self, ctx: Any, code: int, message: str) -> None: ...

    def running(self, s: Session) -> None: ...

    def cancel_session(self, s: Session) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...
