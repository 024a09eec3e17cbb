"""JSON-RPC over the recorded pipe: requests with fresh ids, notifications, answers, and waiting
for what the agent writes. :class:`RpcCalls` is what a client talks through; the transport
(:class:`~acp_model.fuzzing.transport.AgentProcess`) holds one as ``calls`` and below it only
records and delivers lines (the :class:`Pipe` the calls write through).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from acp_model.trace.wire import Record, is_response_to

if TYPE_CHECKING:
    from acp_model.fuzzing.transcript import Transcript


class AgentExited(RuntimeError):
    """The agent is gone (process exited or stdout closed) and cannot answer any more."""


class RpcError(RuntimeError):
    """A JSON-RPC error response returned by :meth:`RpcCalls.call`."""

    def __init__(self, error: Any) -> None:
        self.error = error
        code = error.get("code") if isinstance(error, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        super().__init__(f"JSON-RPC error {code}: {message}")
        self.code = code


class Pipe(Protocol):
    """What the calls write through and ask of the agent's process (the transport)."""

    stop_requested: threading.Event  # set on a stop request: every wait gives up

    @property
    def alive(self) -> bool: ...

    @property
    def returncode(self) -> int | None: ...

    def send(self, msg: Any, *, probe: bool = False) -> Record: ...

    def send_many(self, msgs: Iterable[Any], *, probe: bool = False) -> list[Record]: ...

    def send_raw(self, data: bytes, *, probe: bool = False) -> Record: ...


class RpcCalls:
    """JSON-RPC calls and waits over a recorded pipe: the ids of the requests sent, and a
    cursor over what the agent wrote. ``pipe`` writes, says whether the agent can still
    answer and whether a stop was requested; ``log`` is the transcript waited on."""

    def __init__(self, pipe: Pipe, log: Transcript) -> None:
        self.pipe = pipe
        self.log = log
        self._next_id = 0
        self._cursor = 0

    def send(self, msg: Any, *, probe: bool = False) -> Record:
        """Write one message as it is (a probe is marked so in the transcript)."""
        return self.pipe.send(msg, probe=probe)

    def send_many(self, msgs: Iterable[Any], *, probe: bool = False) -> list[Record]:
        """Write several messages in one write: the agent reads them in one chunk."""
        return self.pipe.send_many(msgs, probe=probe)

    @property
    def alive(self) -> bool:
        """Can the agent still answer (its process runs and its stdout is open)?"""
        return self.pipe.alive

    def mark(self) -> int:
        """The transcript's length now: a wait from here sees only what comes after."""
        return self.log.mark()

    def at(self, index: int) -> Record:
        """The transcript's record at ``index``."""
        return self.log.at(index)

    def _new_id(self) -> int:
        with self.log.cond:
            request_id = self._next_id
            self._next_id += 1
            return request_id

    def request(self, method: str, params: Any = None,
                claim: Callable[[int], None] | None = None) -> int:
        """Send a request with a fresh integer id and return that id. ``claim`` gets the id
        before the request is written: whoever watches the transcript from another thread
        can tell the request is someone's before it can see it."""
        request_id = self._new_id()
        if claim is not None:
            claim(request_id)
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return request_id

    def notify_then_request(self, note: str, note_params: Any, method: str, params: Any) -> int:
        """A notification and a request in one write, so the agent reads them in one chunk (an
        editor that cancels and sends the next prompt at once); returns the request's id."""
        request_id = self._new_id()
        self.send_many([{"jsonrpc": "2.0", "method": note, "params": note_params},
                        {"jsonrpc": "2.0", "id": request_id, "method": method,
                         "params": params}])
        return request_id

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (no id, never answered)."""
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def respond(self, request_id: Any, result: Any = None, error: Any = None) -> None:
        """Answer an agent->client request with ``result`` or, if given, ``error``.

        ``error`` is a JSON-RPC error object (``{"code": ..., "message": ...}``).
        """
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            msg["error"] = error
        else:
            msg["result"] = result
        self.send(msg)

    # ----------------------------------------------------------------- waiting

    def wait_for_index(self, predicate: Callable[[Any], bool], timeout: float, *,
                       start: int = 0, direction: str | None = "a2c",
                       raw: bool = False) -> int | None:
        """:meth:`Transcript.wait_for_index`, given up on a stop request."""
        return self.log.wait_for_index(predicate, timeout, stop=self.pipe.stop_requested,
                                       start=start, direction=direction, raw=raw)

    def wait_for(
        self,
        predicate: Callable[[Any], bool],
        timeout: float = 5.0,
        *,
        start: int | None = None,
        direction: str | None = "a2c",
        raw: bool = False,
    ) -> Record | None:
        """Wait for the next record matching ``predicate``; returns the record or None.

        With ``start=None`` the search begins at an internal cursor that moves past each match
        returned, so successive calls find successive matches ("the next" one). Pass an explicit
        ``start`` (e.g. from :meth:`mark`) to search from there without touching the cursor.
        """
        use_cursor = start is None
        begin = self._cursor if use_cursor else start
        assert begin is not None
        index = self.wait_for_index(predicate, timeout, start=begin, direction=direction, raw=raw)
        if index is None:
            return None
        if use_cursor:
            self._cursor = index + 1
        return self.log.at(index)

    def call(self, method: str, params: Any = None, timeout: float = 10.0) -> Any:
        """Send a request and wait for its response; returns the ``result``.

        Raises :class:`RpcError` for an error response, :class:`AgentExited` if the agent went
        away first and :class:`TimeoutError` if nothing came within ``timeout``.
        """
        start = self.log.mark()
        request_id = self.request(method, params)
        index = self.wait_for_index(lambda m: is_response_to(m, request_id), timeout, start=start)
        if index is None:
            if not self.pipe.alive:
                raise AgentExited(f"agent gone before answering {method} "
                                  f"(code {self.pipe.returncode})")
            raise TimeoutError(f"no response to {method} (id {request_id}) within {timeout}s")
        msg = self.log.at(index)["msg"]
        if "error" in msg:
            raise RpcError(msg["error"])
        return msg.get("result")
