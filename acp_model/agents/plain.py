"""A second correct ACP v2 agent that shares no code with the reference agent.

The reference agent and the oracle were written by the same people; an agent written another
way catches the assumptions they share. This one is plain threads and the standard library (no
asyncio, no orjson, nothing else of ``acp_model``): the main thread reads stdin, one worker
thread per turn does the work, a lock keeps stdout lines whole. Its choices are its own:

* ``--busy join|queue|reject``: a prompt while a turn runs joins it, waits for it to end (and
  outlives a cancel), or is rejected with -32602;
* ``--perm-cancel wait|withdraw``: on a cancel, wait up to a second for the answers to pending
  permission requests, or withdraw them with ``$/cancel_request`` at once;
* ``--order response-first|message-first``; ``--instant running|no-running`` (a cancel that
  arrives before the turn started: idle cancelled with or without running first);
* every third prompt of a session asks for permission before an edit.

One lock orders what the reader thread learns (a cancel, a prompt) against what a turn's thread
writes because of it: the idle and its stop reason, the next held prompt's start, and a
permission request are decided and written under it. Without that the agent would answer a
request sent after a cancel and only then write the ``end_turn`` it had decided before, a
violation the fuzzer proves (it did, against earlier versions of this file).

Run: ``python -m acp_model.agents.plain [--busy ...] [--timing fast|real|slow] [--seed N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

NOT_FOUND, BAD_PARAMS, BAD_REQUEST, PARSE, CANCELLED = -32601, -32602, -32600, -32700, -32800


@dataclass
class Work:
    """One turn: the prompts it serves, its cancel flag, the permissions it waits on."""

    sid: str
    prompts: list[int]
    cancel: threading.Event = field(default_factory=threading.Event)
    answers: dict[int, threading.Event] = field(default_factory=dict)
    outcome: dict[int, Any] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    extra: int = 0  # prompts joined while it ran


@dataclass
class Sess:
    sid: str
    cwd: str
    count: int = 0
    work: Work | None = None
    held: list[tuple[Any, list[Any]]] = field(default_factory=list)  # (request id, blocks)
    ids: int = 0

    def next_id(self, what: str) -> str:
        self.ids += 1
        return f"{what}-{self.sid[-4:]}-{self.ids}"


class PlainAgent:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = threading.Lock()
        # guards the sessions and the permission table, and orders a turn's decisive writes
        # against the reader (re-entrant: a turn's end starts the prompts held behind it)
        self.state = threading.RLock()
        self.sessions: dict[str, Sess] = {}
        self.waiting: dict[int, tuple[Work, int]] = {}  # permission request id -> turn
        self.next_request = 100
        self.pause = {"fast": 0.0, "real": 0.005, "slow": 0.02}[args.timing]
        self.ready = False

    # --- wire ----------------------------------------------------------------------------------
    def write(self, msg: Any) -> None:
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self.out:
            os.write(1, line.encode())

    def result(self, rid: Any, value: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "result": value}

    def error(self, rid: Any, code: int, text: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

    def notify(self, sid: str, update: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": "session/update",
                    "params": {"sessionId": sid, "update": update}})

    def status(self, sid: str, state: str, reason: str | None = None) -> None:
        update: dict[str, Any] = {"sessionUpdate": "state_update", "state": state}
        if reason is not None:
            update["stopReason"] = reason
        self.notify(sid, update)

    # --- reading -----------------------------------------------------------------------------
    def serve(self) -> None:
        for raw in sys.stdin.buffer:
            line = raw.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.write(self.error(None, PARSE, "not JSON"))
                continue
            if isinstance(msg, list):
                if not msg:
                    self.write(self.error(None, BAD_REQUEST, "empty batch"))
                    continue
                replies = [r for r in (self.handle(m) for m in msg) if r is not None]
                if replies:
                    self.write(replies)
            else:
                reply = self.handle(msg)
                if reply is not None:
                    self.write(reply)

    def handle(self, msg: Any) -> dict[str, Any] | None:  # noqa: C901
        """One JSON-RPC object; returns the immediate reply (None: none, or it comes later)."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return self.error(None, BAD_REQUEST, "not a JSON-RPC 2.0 object")
        if "method" not in msg:
            self.on_answer(msg)
            return None
        method, params, has_id = msg["method"], msg.get("params"), "id" in msg
        rid = msg.get("id")
        if not has_id:
            if method == "session/cancel" and isinstance(params, dict):
                self.cancel(params.get("sessionId"))
            elif method == "$/cancel_request" and isinstance(params, dict):
                self.withdraw_held(params.get("requestId"))
            return None
        try:
            if method == "initialize":
                self.ready = True
                return self.result(rid, {"protocolVersion": 2, "info": {
                    "name": "acp-model-plain-agent", "version": "1"},
                    "capabilities": {"session": {"prompt": {}}}})
            if not self.ready:
                return self.error(rid, BAD_REQUEST, "initialize first")
            if method == "session/new":
                return self.new(rid, params)
            if method == "session/prompt":
                return self.prompt(rid, params)
            if method == "session/list":
                return self.result(rid, {"sessions": [{"sessionId": s.sid, "cwd": s.cwd}
                                                      for s in self.sessions.values()]})
            if method == "session/close":
                return self.close(rid, params)
            if method == "session/resume":
                return self.resume(rid, params)
            return self.error(rid, NOT_FOUND, f"no method {method}")
        except (KeyError, TypeError, ValueError) as exc:
            return self.error(rid, BAD_PARAMS, f"invalid params: {exc}")

    # --- sessions ----------------------------------------------------------------------------
    def new(self, rid: Any, params: Any) -> dict[str, Any]:
        cwd = params["cwd"]
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            raise ValueError("cwd must be absolute")
        with self.state:
            sid = f"plain-{self.args.seed}-{len(self.sessions) + 1}"
            self.sessions[sid] = Sess(sid, cwd)
        return self.result(rid, {"sessionId": sid})

    def session(self, params: Any) -> Sess:
        sess = self.sessions.get(params["sessionId"])
        if sess is None:
            raise KeyError("unknown session")
        return sess

    def resume(self, rid: Any, params: Any) -> dict[str, Any]:
        """session/resume, which every agent of the session surface supports: a session of
        this process is live again; it keeps no history, so a replay is refused (-32602),
        never answered without the conversation."""
        self.session(params)
        if params.get("replayFrom") is not None:
            return self.error(rid, BAD_PARAMS, "this agent keeps no history to replay")
        return self.result(rid, {})

    def close(self, rid: Any, params: Any) -> None:
        sess = self.session(params)
        work = self.cancel(sess.sid)

        def later() -> None:
            if work is not None:
                work.done.wait(5)
            self.write(self.result(rid, {}))

        threading.Thread(target=later, daemon=True).start()
        return None

    # --- prompts -----------------------------------------------------------------------------
    def prompt(self, rid: Any, params: Any) -> dict[str, Any] | None:
        sess = self.session(params)
        blocks = params["prompt"]
        if not isinstance(blocks, list) or not all(isinstance(b, dict) and "type" in b
                                                    for b in blocks):
            raise ValueError("prompt must be a list of content blocks")
        with self.state:
            work = sess.work
            if work is not None and not work.cancel.is_set():
                if self.args.busy == "reject":
                    return self.error(rid, BAD_PARAMS, "a turn is running")
                if self.args.busy == "queue":
                    sess.held.append((rid, blocks))
                    return None
                work.extra += 1  # join: one more round of output, one idle for both
                self.accept(sess, rid, blocks)
                return None
            if work is not None:  # a cancelled turn winds down: this prompt waits for it
                sess.held.append((rid, blocks))
                return None
            sess.count += 1
            work = sess.work = Work(sess.sid, [sess.count])
        self.accept(sess, rid, blocks)
        threading.Thread(target=self.run, args=(sess, work), daemon=True).start()
        return None

    def accept(self, sess: Sess, rid: Any, blocks: list[Any]) -> None:
        message = {"sessionUpdate": "user_message", "messageId": sess.next_id("user"),
                   "content": blocks}
        if self.args.order == "message-first":
            self.notify(sess.sid, message)
            self.write(self.result(rid, {}))
        else:
            self.write(self.result(rid, {}))
            self.notify(sess.sid, message)

    def withdraw_held(self, request_id: Any) -> None:
        with self.state:
            for sess in self.sessions.values():
                for item in list(sess.held):
                    if item[0] == request_id and type(item[0]) is type(request_id):
                        sess.held.remove(item)
                        self.write(self.error(request_id, CANCELLED, "withdrawn"))

    # --- work ---------------------------------------------------------------------------------
    def run(self, sess: Sess, work: Work) -> None:
        sid = sess.sid
        if work.cancel.is_set() and self.args.instant == "no-running":
            self.finish(sess, work, "cancelled")
            return
        self.status(sid, "running")
        rounds = 0
        while not work.cancel.is_set() and rounds <= work.extra:
            rounds += 1
            mid = sess.next_id("agent")
            for text in ("Looking", " at it."):
                if work.cancel.wait(self.pause):
                    break
                self.notify(sid, {"sessionUpdate": "agent_message_chunk", "messageId": mid,
                                  "content": {"type": "text", "text": text}})
            if work.prompts[0] % 3 == 0 and rounds == 1:
                self.edit_with_permission(sess, work)
        self.finish(sess, work, "end_turn")

    def edit_with_permission(self, sess: Sess, work: Work) -> None:
        sid = sess.sid
        with self.state:  # no new permission request once the reader has seen a cancel
            if work.cancel.is_set():
                return
            tool = sess.next_id("tool")
            self.notify(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tool,
                              "title": "Edit main.py", "kind": "edit", "status": "pending",
                              "locations": [{"path": sess.cwd.rstrip("/") + "/main.py"}]})
            rid = self.next_request
            self.next_request += 1
            gate = threading.Event()
            work.answers[rid] = gate
            self.waiting[rid] = (work, rid)
            self.write({"jsonrpc": "2.0", "id": rid, "method": "session/request_permission",
                        "params": {"sessionId": sid, "title": "Edit main.py?",
                                   "subject": {"type": "tool_call",
                                               "toolCall": {"toolCallId": tool}},
                                   "options": [{"optionId": "yes", "name": "Yes",
                                                "kind": "allow_once"},
                                               {"optionId": "no", "name": "No",
                                                "kind": "reject_once"}]}})
            self.status(sid, "requires_action")
        while not gate.wait(0.01):
            if work.cancel.is_set():
                break
        outcome = work.outcome.get(rid)
        if work.cancel.is_set():
            self.notify(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tool,
                              "status": "cancelled"})
            return
        self.status(sid, "running")
        chosen = outcome.get("outcome") if isinstance(outcome, dict) else None
        allowed = isinstance(chosen, dict) and chosen.get("outcome") == "selected" \
            and chosen.get("optionId") == "yes"
        if allowed:
            self.notify(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tool,
                              "status": "in_progress"})
            time.sleep(self.pause)
        self.notify(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tool,
                          "status": "completed" if allowed else "failed"})

    def finish(self, sess: Sess, work: Work, reason: str) -> None:
        """End the turn: the stop reason is decided, the idle written, the session freed and
        the held prompts started in one critical section, so a cancel the reader handles is
        either in time for this idle or meets the next turn."""
        waited = False
        while True:
            if work.cancel.is_set() and work.answers and self.args.perm_cancel == "wait":
                for gate in work.answers.values():
                    gate.wait(1.0)
                waited = True
            with self.state:
                if work.cancel.is_set() and work.answers and not waited \
                        and self.args.perm_cancel == "wait":
                    continue  # cancelled since: wait for the answers first
                self.status(sess.sid, "idle", "cancelled" if work.cancel.is_set() else reason)
                sess.work = None
                held, sess.held = sess.held, []
                work.done.set()
                for rid, blocks in held:  # held prompts run now, one turn each, in order
                    reply = self.prompt(rid, {"sessionId": sess.sid, "prompt": blocks})
                    if reply is not None:  # rejected now that another held prompt runs
                        self.write(reply)
                return

    def cancel(self, sid: Any) -> Work | None:
        with self.state:
            sess = self.sessions.get(sid) if isinstance(sid, str) else None
            work = sess.work if sess is not None else None
            if work is None or work.cancel.is_set():
                return work
            work.cancel.set()
            pending = [rid for rid, gate in work.answers.items() if not gate.is_set()]
        if self.args.perm_cancel == "withdraw":
            for rid in pending:
                self.write({"jsonrpc": "2.0", "method": "$/cancel_request",
                            "params": {"requestId": rid}})
        return work

    def on_answer(self, msg: dict[str, Any]) -> None:
        with self.state:
            entry = self.waiting.pop(msg.get("id"), None)
        if entry is None:
            return  # late or unknown: ignored
        work, rid = entry
        work.outcome[rid] = msg.get("result")
        work.answers[rid].set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_model.agents.plain",
                                     description="A plain, thread-based ACP v2 agent.")
    parser.add_argument("--busy", choices=("join", "queue", "reject"), default="queue")
    parser.add_argument("--perm-cancel", choices=("wait", "withdraw"), default="withdraw")
    parser.add_argument("--order", choices=("response-first", "message-first"),
                        default="response-first")
    parser.add_argument("--instant", choices=("running", "no-running"), default="no-running")
    parser.add_argument("--timing", choices=("fast", "real", "slow"), default="fast")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    PlainAgent(args).serve()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
