"""A small scripted ACP client on top of :mod:`acp_model.fuzzing.transport`, for scenario tests.

Scenarios are written as explicit steps (initialize, new session, prompt, cancel at a chosen
point, answer a permission in a chosen way, wait for idle) and every message is recorded in the
transport's transcript, which :meth:`ScriptedClient.save` writes as a JSONL trace.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_model.agents import mutants as zoo
from acp_model.agents.reference.prompts import plan_for as agent_plan_for
from acp_model.agents.turns import StepOutput, TurnPlan
from acp_model.fuzzing.transport import AgentProcess, Record, is_response_to

AGENT_MODULE = "acp_model.agents.reference"
QUIESCE = "_acp_model/quiesce"  # the reference agent's test-only extension request
DEFAULT_CWD = "/tmp/acp-model-project"
Msg = dict[str, Any]


def agent_argv(mutant: str | None = None, timing: str = "fast", seed: int = 0,
               design: str = "") -> list[str]:
    argv = [sys.executable, "-m", AGENT_MODULE, "--timing", timing, "--seed", str(seed)]
    if mutant:
        argv += ["--mutant", mutant]
    if design:
        argv += ["--design", design]
    return argv


def plan_for(text: str, mutant: str | None = None, seed: int = 0) -> TurnPlan:
    """The script the agent (or mutant) will run for ``text``: the agent's own function."""
    m = zoo.get(mutant)
    forced = {k: getattr(m, k) for k in ("force_tool", "force_permission", "force_plan",
                                         "force_usage")} if m else {}
    return agent_plan_for(text, seed, forced)


def find_prompt(
    want: Callable[[TurnPlan], bool], *, mutant: str | None = None, seed: int = 0, tag: str = "task"
) -> str:
    """A prompt text whose turn script satisfies ``want`` (deterministic search)."""
    for n in itertools.count():
        text = f"{tag} {n}: please look at the code"
        if want(plan_for(text, mutant, seed)):
            return text
        if n > 5000:
            raise LookupError("no prompt with the wanted shape")
    raise AssertionError("unreachable")


def with_permission(plan: TurnPlan) -> bool:
    return plan.permissions == 1 and plan.stop_reason == "end_turn"


def without_permission(plan: TurnPlan) -> bool:
    return plan.permissions == 0 and plan.stop_reason == "end_turn"


def two_permissions(plan: TurnPlan) -> bool:
    """Exactly two permission requests, sent together in one tool step (PERM-13)."""
    groups = [s for s in plan.steps if s.output == StepOutput.TOOLS]
    return (
        plan.permissions == 2
        and plan.stop_reason == "end_turn"
        and any(sum(t.needs_permission for t in g.tools) == 2 for g in groups)
    )


# ------------------------------------------------------------------------ predicates


def is_update(msg: Any, sid: str | None = None, kind: str | None = None) -> bool:
    if not isinstance(msg, dict) or msg.get("method") != "session/update":
        return False
    params = msg.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("update"), dict):
        return False
    if sid is not None and params.get("sessionId") != sid:
        return False
    return kind is None or params["update"].get("sessionUpdate") == kind


def is_state(msg: Any, sid: str | None = None, state: str | None = None) -> bool:
    if not is_update(msg, sid, "state_update"):
        return False
    return state is None or msg["params"]["update"].get("state") == state


def is_idle(msg: Any, sid: str | None = None) -> bool:
    return is_state(msg, sid, "idle")


def is_permission_request(msg: Any, sid: str | None = None) -> bool:
    return (
        isinstance(msg, dict)
        and msg.get("method") == "session/request_permission"
        and "id" in msg
        and (sid is None or (msg.get("params") or {}).get("sessionId") == sid)
    )


def update_of(msg: Msg) -> Msg:
    return msg["params"]["update"]


def flatten(records: list[Record], direction: str = "a2c") -> list[Msg]:
    """Messages of one direction in wire order, batch arrays unpacked."""
    out: list[Msg] = []
    for record in records:
        if record.get("dir") != direction or "msg" not in record:
            continue
        msg = record["msg"]
        for item in msg if isinstance(msg, list) else [msg]:
            if isinstance(item, dict):
                out.append(item)
    return out


# -------------------------------------------------------------------------- client

ANSWERS = {
    "allow": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
    "allow_always": {"outcome": {"outcome": "selected", "optionId": "allow-always"}},
    "reject": {"outcome": {"outcome": "selected", "optionId": "reject-once"}},
    "reject_always": {"outcome": {"outcome": "selected", "optionId": "reject-always"}},
    "unknown_option": {"outcome": {"outcome": "selected", "optionId": "no-such-option"}},
    "cancelled": {"outcome": {"outcome": "cancelled"}},
    "custom": {"outcome": {"outcome": "_acp_model_defer", "reason": "later"}},
}
ERRORS = {
    "error": {"code": -32603, "message": "client failed to show the prompt"},
    "error_cancelled": {"code": -32800, "message": "request cancelled"},
}


class ScriptedClient:
    """Drives one agent process step by step; all waits are bounded by ``timeout``."""

    def __init__(self, proc: AgentProcess, *, timeout: float = 10.0, cwd: str = DEFAULT_CWD):
        self.proc = proc
        self.timeout = timeout
        self.cwd = cwd
        self.mutant: str | None = None
        self.seed = 0
        self.timing = "fast"
        self.answered: set[Any] = set()

    @classmethod
    def spawn(
        cls, mutant: str | None = None, timing: str = "fast", seed: int = 0, design: str = "",
        **kwargs: Any
    ) -> ScriptedClient:
        client = cls(AgentProcess(agent_argv(mutant, timing, seed, design)), **kwargs)
        client.mutant, client.timing, client.seed = mutant, timing, seed
        return client

    def __enter__(self) -> ScriptedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> int | None:
        return self.proc.close(grace=2.0)

    # ---------------------------------------------------------------- recording

    @property
    def records(self) -> list[Record]:
        return self.proc.records()

    def a2c(self, start: int = 0) -> list[Msg]:
        return flatten(self.records[start:], "a2c")

    def save(self, path: str | Path) -> Path:
        return self.proc.write_trace(path)

    def mark(self) -> int:
        return self.proc.mark()

    def plan(self, text: str) -> TurnPlan:
        return plan_for(text, self.mutant, self.seed)

    def prompt_text(self, want: Callable[[TurnPlan], bool], tag: str = "task") -> str:
        return find_prompt(want, mutant=self.mutant, seed=self.seed, tag=tag)

    # -------------------------------------------------------------------- waits

    def wait(
        self, predicate: Callable[[Any], bool], start: int, timeout: float | None = None
    ) -> Msg:
        """The first a2c message at or after ``start`` (batches unpacked) matching, or fail."""
        found: list[Msg] = []

        def match(msg: Any) -> bool:
            for item in msg if isinstance(msg, list) else [msg]:
                if predicate(item):
                    found.append(item)
                    return True
            return False

        index = self.proc.calls.wait_for_index(match, timeout or self.timeout, start=start)
        if index is None:
            raise AssertionError(
                f"timed out waiting ({'agent gone' if not self.proc.alive else 'alive'}); "
                f"stderr: {self.proc.stderr_text()[-2000:]}"
            )
        return found[-1]

    def index_of(self, predicate: Callable[[Any], bool], start: int = 0) -> int | None:
        for i, record in enumerate(self.records[start:], start):
            msg = record.get("msg")
            if record.get("dir") == "a2c" and any(
                predicate(m) for m in (msg if isinstance(msg, list) else [msg])
            ):
                return i
        return None

    def wait_response(self, request_id: int, start: int = 0, timeout: float | None = None) -> Msg:
        return self.wait(lambda m: is_response_to(m, request_id), start, timeout)

    def wait_idle(self, sid: str, start: int, timeout: float | None = None) -> Msg:
        return update_of(self.wait(lambda m: is_idle(m, sid), start, timeout))

    def wait_permission(self, sid: str, start: int, timeout: float | None = None) -> Msg:
        return self.wait(lambda m: is_permission_request(m, sid), start, timeout)

    def quiesce(self) -> int:
        """Await the agent's answer to ``_acp_model/quiesce``: it has read everything sent
        before, and whatever it sends without new input is in the transcript. Returns the
        record index of the answer."""
        start = self.mark()
        rid = self.proc.calls.request(QUIESCE, {})
        self.wait(lambda m: is_response_to(m, rid), start)
        return self.index_of(lambda m: is_response_to(m, rid), start) or start

    def barrier(self) -> None:
        """Everything the agent sends in answer to what came before is now recorded."""
        self.quiesce()

    def pause(self, seconds: float) -> None:
        """Hold the next message back for ``seconds``: a scenario's deliberately late client
        (never a wait for something that should not come: that is :meth:`quiesce`)."""
        self.proc.calls.wait_for_index(lambda m: False, seconds, start=self.mark())

    def wait_or_quiesce(self, predicate: Callable[[Any], bool], start: int) -> Msg | None:
        """The first a2c message at or after ``start`` matching ``predicate``, or None once
        the agent is quiescent without having sent one (the proof that it never will)."""
        rid = self.proc.calls.request(QUIESCE, {})
        found = self.wait(lambda m: predicate(m) or is_response_to(m, rid), start)
        return None if is_response_to(found, rid) else found

    def settle_drive(
        self, sid: str, start: int, how: str = "allow", prompt_id: int | None = None
    ) -> Msg | None:
        """Like :meth:`drive`, but None once the agent is quiescent without an idle for
        ``sid`` (or, given ``prompt_id``, as soon as that prompt is answered with an error)."""
        while True:  # answered requests are skipped, so each round may scan from ``start``
            rid = self.proc.calls.request(QUIESCE, {})
            hit = self.wait(
                lambda m, rid=rid: (
                    is_response_to(m, rid)
                    or is_idle(m, sid)
                    or (is_permission_request(m, sid) and m["id"] not in self.answered)
                    or (prompt_id is not None and is_response_to(m, prompt_id) and "error" in m)
                ),
                start,
            )
            if is_idle(hit, sid):
                return update_of(hit)
            if "method" not in hit:  # the quiesce answer, or the prompt's error
                return None
            self.answer(hit, how)

    # -------------------------------------------------------------------- steps

    def initialize(self, version: int = 2, capabilities: dict[str, Any] | None = None) -> Msg:
        return self.proc.calls.call(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "info": {"name": "acp-model-scripted-client", "version": "0.1.0"},
            },
            timeout=self.timeout,
        )

    def new_session(self, cwd: str | None = None) -> str:
        result = self.proc.calls.call(
            "session/new", {"cwd": cwd or self.cwd, "mcpServers": []}, timeout=self.timeout
        )
        return result["sessionId"]

    def send_prompt(self, sid: str, text: str) -> int:
        """Send session/prompt without waiting; returns the request id."""
        return self.proc.calls.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
        )

    def prompt(self, sid: str, text: str) -> tuple[int, Msg]:
        """Send a prompt and wait for its response (acceptance, not completion)."""
        start = self.mark()
        rid = self.send_prompt(sid, text)
        return rid, self.wait_response(rid, start)

    def cancel(self, sid: str) -> None:
        self.proc.calls.notify("session/cancel", {"sessionId": sid})

    def prompt_then_cancel(self, sid: str, text: str) -> int:
        """Prompt and cancel in one write, so the agent reads both before accepting."""
        rid = self.proc.calls._new_id()
        self.proc.send_many(
            [
                {"jsonrpc": "2.0", "id": rid, "method": "session/prompt",
                 "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}},
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}},
            ]
        )  # fmt: skip
        return rid

    def answer(self, request: Msg, how: str = "allow") -> None:
        """Answer a permission request: allow/reject/... (see ANSWERS) or error/error_cancelled."""
        self.answered.add(request["id"])
        if how in ERRORS:
            self.proc.calls.respond(request["id"], error=ERRORS[how])
        else:
            self.proc.calls.respond(request["id"], result=ANSWERS[how])

    def run_turn(self, sid: str, text: str, how: str = "allow") -> Msg:
        """Prompt, answer every permission request with ``how``, wait for the idle update."""
        start = self.mark()
        rid = self.send_prompt(sid, text)
        self.wait_response(rid, start)
        return self.drive(sid, start, how)

    def drive(self, sid: str, start: int, how: str = "allow", prompt_id: int | None = None) -> Msg:
        """Answer permission requests of ``sid`` from ``start`` on until an idle arrives.

        Requests this client already answered are skipped, so ``start`` may lie before them.
        """
        cursor = start
        while True:
            hit: list[Msg] = []

            def match(msg: Any, hit: list[Msg] = hit) -> bool:
                for item in msg if isinstance(msg, list) else [msg]:
                    if (
                        is_idle(item, sid)
                        or (is_permission_request(item, sid) and item["id"] not in self.answered)
                        or (is_response_to(item, prompt_id) and "error" in item)
                    ):
                        hit.append(item)
                        return True
                return False

            index = self.proc.calls.wait_for_index(match, self.timeout, start=cursor)
            if index is None:
                raise AssertionError(
                    f"no idle for {sid}; stderr: {self.proc.stderr_text()[-2000:]}"
                )
            cursor = index + 1
            if is_idle(hit[-1], sid):
                return update_of(hit[-1])
            if "method" not in hit[-1]:
                raise AssertionError(f"prompt {prompt_id} rejected: {hit[-1]['error']}")
            self.answer(hit[-1], how)
