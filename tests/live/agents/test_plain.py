"""The plain agent's turn ends are ordered against the reader thread.

The campaign found the plain agent (a correct agent by design) failing CANCEL-07 and warning
CANCEL-05 with sound proofs: a turn's thread decided ``end_turn`` (or a new permission request)
before the reader thread handled a cancel, and wrote it after the reader had answered a request
sent after the cancel; or wrote its idle and only then freed the session, so a prompt sent after
that idle was held behind a finished turn and outlived the cancel that followed it. These tests
stop a turn's thread at the exact write and let the reader handle messages meanwhile, so the
orderings that used to happen by chance happen every time.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Iterator
from typing import Any

from acp_model.agents.plain import PlainAgent

WAIT = 10.0  # generous bound on every wait for an observable event


class WatchedLock:
    """A re-entrant lock that tells when another thread starts waiting for it."""

    def __init__(self, on_contention: Callable[[], None]) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0  # re-entries of the owner
        self.contended = threading.Event()
        self._on_contention = on_contention

    def __enter__(self) -> WatchedLock:
        me = threading.get_ident()
        if self._owner is not None and self._owner != me:
            self.contended.set()
            self._on_contention()
        self._lock.acquire()
        self._owner = me
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
        self._lock.release()


class Harness:
    """A plain agent driven in process: the test is its reader thread."""

    def __init__(self, **choices: str) -> None:
        args = argparse.Namespace(busy="queue", perm_cancel="withdraw", order="response-first",
                                  instant="no-running", timing="fast", seed=0)
        for key, value in choices.items():
            setattr(args, key, value)
        self.agent = PlainAgent(args)
        self.sent: list[dict[str, Any]] = []
        self.changed = threading.Condition()
        self.lock = WatchedLock(self._notify)
        self.agent.state = self.lock  # type: ignore[assignment]
        self.hold: Callable[[dict[str, Any]], bool] = lambda msg: False
        self.held = threading.Event()
        self.go = threading.Event()
        self.agent.write = self._write  # type: ignore[method-assign]
        self.ids = 0
        self.call("initialize", {"protocolVersion": 2})
        self.sid = self.call("session/new", {"cwd": "/tmp", "mcpServers": []})["sessionId"]

    def _write(self, msg: Any) -> None:
        if isinstance(msg, dict) and self.hold(msg) and not self.held.is_set():
            self.held.set()
            assert self.go.wait(WAIT), "the test never released the held write"
        with self.changed:
            self.sent.append(msg)
            self.changed.notify_all()

    def _notify(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        reply = self.agent.handle({"jsonrpc": "2.0", "id": self.ids, "method": method,
                                   "params": params})
        return reply["result"] if reply is not None else None

    def prompt(self, text: str) -> None:
        self.call("session/prompt", {"sessionId": self.sid,
                                     "prompt": [{"type": "text", "text": text}]})

    def cancel(self) -> None:
        self.agent.handle({"jsonrpc": "2.0", "method": "session/cancel",
                           "params": {"sessionId": self.sid}})

    def idles(self) -> Iterator[str | None]:
        for msg in list(self.sent):
            update = msg.get("params", {}).get("update", {})
            if update.get("state") == "idle":
                yield update.get("stopReason")

    def wait_for(self, test: Callable[[], bool]) -> None:
        with self.changed:
            assert self.changed.wait_for(test, WAIT), f"timed out; sent: {self.sent}"

    def while_held(self, reader: Callable[[], None]) -> None:
        """Run ``reader`` while the turn's thread is stopped at the held write; release the
        write once the reader is done or waits for the agent's lock."""
        assert self.held.wait(WAIT), "the turn never reached the held write"
        done = threading.Event()

        def run() -> None:
            reader()
            done.set()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        with self.changed:
            self.changed.wait_for(lambda: done.is_set() or self.lock.contended.is_set(), WAIT)
        self.go.set()
        thread.join(WAIT)
        assert not thread.is_alive()


def _is_idle(msg: dict[str, Any]) -> bool:
    return msg.get("params", {}).get("update", {}).get("state") == "idle"


def _update(msg: dict[str, Any]) -> dict[str, Any]:
    return msg.get("params", {}).get("update", {})


def test_a_prompt_sent_after_the_idle_is_not_held_behind_the_finished_turn() -> None:
    """Prompt; the idle goes out; then a prompt and a cancel before the agent has freed the
    session: the cancel reaches the new turn (no work in front of it), which ends cancelled
    unless it had ended before the reader handled the cancel."""
    h = Harness()
    h.hold = _is_idle
    h.prompt("first")
    handled: list[int] = []
    h.while_held(lambda: (h.prompt("second"), h.cancel(), handled.append(len(h.sent))))
    h.wait_for(lambda: len(list(h.idles())) == 2)
    second_idle = [i for i, m in enumerate(h.sent) if _is_idle(m)][1]
    # the new turn may well have ended before the reader got to the cancel (fast timing)
    assert list(h.idles())[1] == "cancelled" or handled[0] > second_idle


def test_a_cancel_the_reader_handled_before_the_idle_went_out_makes_it_cancelled() -> None:
    """The turn is writing its idle when the reader handles a cancel: either the idle says
    cancelled, or the reader could only handle the cancel after the idle was out (so it
    could not have answered a later request first)."""
    h = Harness()
    h.hold = _is_idle
    h.prompt("first")
    handled: list[int] = []
    h.while_held(lambda: (h.cancel(), handled.append(len(h.sent))))
    h.wait_for(lambda: len(list(h.idles())) == 1)
    idle_at = next(i for i, m in enumerate(h.sent) if _is_idle(m))
    assert next(h.idles()) == "cancelled" or handled[0] > idle_at


def test_no_permission_request_goes_out_after_the_reader_handled_a_cancel() -> None:
    """The third prompt's turn asks for permission; a cancel handled while it prepares the
    request: either no request, or the reader handled the cancel only after it was out."""
    h = Harness()
    for n, text in enumerate(("one", "two"), start=1):
        h.prompt(text)
        h.wait_for(lambda n=n: len(list(h.idles())) == n)
    h.hold = lambda msg: _update(msg).get("sessionUpdate") == "tool_call_update" \
        and _update(msg).get("status") == "pending"
    h.prompt("three")
    handled: list[int] = []
    h.while_held(lambda: (h.cancel(), handled.append(len(h.sent))))
    h.wait_for(lambda: len(list(h.idles())) == 3)
    asked = [i for i, m in enumerate(h.sent) if m.get("method") == "session/request_permission"]
    assert not asked or asked[0] < handled[0]
    assert list(h.idles())[-1] == "cancelled"
