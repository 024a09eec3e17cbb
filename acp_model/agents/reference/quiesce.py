"""``_acp_model/quiesce``: a test-only extension request, answered (``{}``) once the agent has
nothing left to do without new input, so a test can await the proof that a message will never
come instead of waiting out a timed absence window."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from acp_model.agents.reference.wire import Ctx

QUIESCE = "_acp_model/quiesce"


def quiescent(loop: asyncio.AbstractEventLoop) -> bool:
    """Nothing will run on ``loop`` until new input arrives: no callback is ready and no timer
    (a think time, a grace period) is pending.

    Called from a task step, so the caller's own wake-up is not in the ready queue. It reads
    the private queues of CPython's ``BaseEventLoop``: asyncio offers no public view, and this
    is a test hook of the reference agent only.
    """
    ready = getattr(loop, "_ready", None)
    scheduled = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:
        raise RuntimeError("quiesce needs CPython's asyncio event loop")
    return not ready and all(handle.cancelled() for handle in scheduled)


class Quiescence:
    """The quiesce requests waiting for the loop to go idle, and the one task that watches."""

    def __init__(self, reply: Callable[[Ctx, Any], None]) -> None:
        self.reply = reply
        self._waiting: list[Ctx] = []
        self._task: asyncio.Task[None] | None = None

    def request(self, ctx: Ctx) -> None:
        """Answer ``ctx`` once the agent is quiescent.

        One checker serves every pending request (two checkers would each see the other's
        wake-up and never agree the loop is idle); it is not one of the agent's tasks.
        """
        self._waiting.append(ctx)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while not quiescent(loop):
            await asyncio.sleep(0)
        waiting, self._waiting = self._waiting, []
        self._task = None
        for ctx in waiting:
            self.reply(ctx, {})
