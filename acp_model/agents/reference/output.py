"""Everything the reference agent writes to stdout, in the shape its design's ``writes`` axis
says: whole lines, lines split in two writes, ``session/update`` notifications gathered into
batch arrays, or several lines in one write. It owns what is buffered for that."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from acp_model.agents.reference.wire import Ctx
from acp_model.agents.stdio import StdoutWriter


class Output:
    """The agent's stdout; ``finished`` is set once the client stopped reading."""

    def __init__(self, writer: StdoutWriter, writes: str, finished: asyncio.Event) -> None:
        self.writer = writer
        self.writes = writes
        self.finished = finished
        self._outbox: list[dict[str, Any]] = []  # updates gathered into one batch array
        self._pending_lines: list[bytes] = []  # lines written together
        self._flush_scheduled = False

    def send(self, msg: Any) -> None:
        """Write one message the way the design's ``writes`` axis says."""
        if self.writes == "batch-array" and isinstance(msg, dict) \
                and msg.get("method") == "session/update":
            self._outbox.append(msg)
            if len(self._outbox) >= 3:
                self.flush()
            else:
                self._schedule_flush()
            return
        if self.writes == "lines":
            self._pending_lines.append(orjson.dumps(msg))
            self._schedule_flush()
            return
        self.flush()
        line = orjson.dumps(msg)
        if self.writes == "split" and len(line) > 1:
            cut = len(line) // 2
            self.writer.write(line[:cut])
            self.writer.write(line[cut:] + b"\n")
        else:
            self.writer.write_line(line)
        if self.writer.broken:
            self.finished.set()

    def send_raw(self, line: bytes) -> None:
        self.flush()
        self.writer.write_line(line)

    def flush(self) -> None:
        """Write what is gathered (at once, or when the loop gets to it)."""
        self._flush_scheduled = False
        if self._outbox:
            batch, self._outbox = self._outbox, []
            self.writer.write_line(orjson.dumps(batch if len(batch) > 1 else batch[0]))
        if self._pending_lines:
            lines, self._pending_lines = self._pending_lines, []
            self.writer.write(b"".join(line + b"\n" for line in lines))

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    # --- answers -------------------------------------------------------------------------------
    def reply(self, ctx: Ctx, result: Any) -> None:
        self._answer(ctx, {"jsonrpc": "2.0", "id": ctx.request_id, "result": result})

    def reply_error(self, ctx: Ctx, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self._answer(ctx, {"jsonrpc": "2.0", "id": ctx.request_id, "error": error})

    def _answer(self, ctx: Ctx, response: dict[str, Any]) -> None:
        if ctx.batch is not None:
            ctx.batch.add(response)
        else:
            self.send(response)
