"""Drive one profiled agent release through a fixed client session by hand, and print the wire.

For checking a published report on its pinned release where the fuzzer has no action for the
report's steps (``session/load`` of a session whose prompt still runs). The agent runs behind
the scripted model with the profile's environment, exactly as ``acp-model fuzz --agent``
starts it. Run it under the machine's lock, e.g.::

    flock /tmp/acpm-heavy.lock python benchmarks/known_bugs_client.py claude-agent-acp \\
        @zed-industries/claude-agent-acp@0.21.0 load-then-cancel

Scenarios (``SCENARIOS``): ``load-then-cancel`` is session/new, a prompt whose model stalls,
session/load of the same session, session/cancel; the prompt should end ``cancelled`` within
the wait. ``cancel`` is the control: the same without the load. ``cancel-then-prompt``: a
cancelled turn, then a prompt that should run (the model is asked, the turn ends ``end_turn``),
not be answered with a second stop reason. ``cancel-in-permission``: the model calls a shell
command, the client holds its permission request, cancels, answers it ``cancelled``; the
prompt should end ``cancelled``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.llm.script import Stall, Text, Tools
from acp_model.llm.wire import tag_text
from acp_model.profiles import get
from acp_model.profiles.versions import at_version

WAIT = 20.0  # seconds the prompt has to end after the cancel


class Wire:
    """The agent's stdio: requests by id, every message printed with its time."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.start = time.monotonic()
        self.answers: dict[int, dict[str, Any]] = {}
        self.cond = threading.Condition()
        self.next_id = 0
        self.held: list[Any] = []  # the agent's requests not answered yet (permissions)
        self.hold = False  # hold them (answered cancelled by :meth:`release`) or refuse at once
        threading.Thread(target=self._read, daemon=True).start()

    def show(self, way: str, msg: dict[str, Any]) -> None:
        text = json.dumps(msg)
        print(f"{time.monotonic() - self.start:7.2f} {way} {text[:220]}", flush=True)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            self.show("A->C", msg)
            if "method" in msg and "id" in msg:  # a request of the agent (a permission)
                with self.cond:
                    self.held.append(msg["id"])
                    self.cond.notify_all()
                if not self.hold:
                    self.release()
            elif "id" in msg:
                with self.cond:
                    self.answers[msg["id"]] = msg
                    self.cond.notify_all()

    def release(self) -> None:
        """Answer every held request of the agent with the cancelled outcome."""
        with self.cond:
            held, self.held = self.held, []
        for rid in held:
            self.send({"jsonrpc": "2.0", "id": rid,
                       "result": {"outcome": {"outcome": "cancelled"}}})

    def send(self, msg: dict[str, Any]) -> None:
        self.show("C->A", msg)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, req: int, seconds: float) -> dict[str, Any] | None:
        with self.cond:
            self.cond.wait_for(lambda: req in self.answers, timeout=seconds)
            return self.answers.get(req)


def scenario(wire: Wire, cfg: FuzzConfig, name: str) -> bool:
    """Run ``name``; True when the agent did what the spec asks (the prompt ended cancelled)."""
    cwd = cfg.cwd or os.getcwd()
    wire.wait(wire.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}), 60)
    sid = wire.wait(wire.request("session/new", {"cwd": cwd, "mcpServers": []}), 60)
    sid = (sid or {}).get("result", {}).get("sessionId")
    if not sid:
        print("no session")
        return False
    for method, params in cfg.session_config:
        wire.wait(wire.request(method, {**params, "sessionId": sid}), 30)
    assert cfg.model is not None
    if name == "cancel-in-permission":
        wire.hold = True
        tag = cfg.model.register((Tools("shell", 1),), sid)
    else:
        tag = cfg.model.register((Stall(),), sid)
    prompt = wire.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": f"run it {tag_text(tag)}"}]})
    if name == "cancel-in-permission":
        with wire.cond:
            wire.cond.wait_for(lambda: bool(wire.held), timeout=30)
        print(f"# a permission request is {'pending' if wire.held else 'NOT seen'}")
    else:
        deadline = time.monotonic() + 30
        while not cfg.model.stalling(sid) and time.monotonic() < deadline:
            time.sleep(0.1)  # the turn is running: its model request is held open
        print(f"# the model request is {'held' if cfg.model.stalling(sid) else 'NOT seen'}")
    if name == "load-then-cancel":
        wire.wait(wire.request("session/load", {"sessionId": sid, "cwd": cwd,
                                                "mcpServers": []}), 30)
    wire.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
    wire.hold = False
    wire.release()  # the client answers pending permissions cancelled (CANCEL-04)
    answer = wire.wait(prompt, WAIT)
    stop = (answer or {}).get("result", {}).get("stopReason")
    print(f"# the prompt {'ended ' + repr(stop) if answer else 'was not answered'} "
          f"within {WAIT:.0f} s of the cancel")
    if name != "cancel-then-prompt" or stop != "cancelled":
        return stop == "cancelled"
    tag = cfg.model.register((Text(2),), sid)
    again = wire.wait(wire.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": f"again {tag_text(tag)}"}]}), WAIT)
    stop = (again or {}).get("result", {}).get("stopReason")
    served = [s.reply for s in cfg.model.served(tag)]
    print(f"# the next prompt ended {stop!r}; the model served it {served or 'nothing'}")
    return stop == "end_turn" and bool(served)


SCENARIOS = ("load-then-cancel", "cancel", "cancel-then-prompt", "cancel-in-permission")


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        print(__doc__)
        raise SystemExit(2)
    profile = at_version(get(sys.argv[1]), sys.argv[2])
    cfg = profile_config(FuzzConfig(["true"]), profile, 1)
    with backend(cfg, profile) as running:
        proc = subprocess.Popen(running.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=running.env,
                                cwd=running.cwd)
        try:
            ok = scenario(Wire(proc), running, sys.argv[3])
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
    print("# as the spec asks" if ok else "# NOT as the spec asks")


if __name__ == "__main__":
    main()
