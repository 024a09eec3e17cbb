"""``--spec auto`` for a live agent: one probe prompt decides the revision before fuzzing.

The monitor must know the revision from the first message it judges (schemas, rules and the
client's own obligations differ), so the decision cannot wait for the first generated prompt.
A throwaway agent process is initialized, gets one session and one text prompt, and its
answer decides (:func:`acp_model.trace.dialect.from_prompt_result`); the process is then
stopped. The probe's own messages are not judged: its only output is the decision and its
evidence, which every report states.

The probe never decides a run's fate. An agent that cannot answer it (it hangs, exits, rejects
the prompt) is judged by the run that follows, under the default revision, and the report says
so: an agent that never answers ``session/prompt`` is then a PROMPT-04 failure with a proof of
its own, not a usage error that hides it.
"""

from __future__ import annotations

import dataclasses
import os
import time

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.stop import Stop
from acp_model.fuzzing.transport import (
    STOP_GRACE,
    AgentExited,
    AgentProcess,
    RpcError,
    is_response_to,
)
from acp_model.model.wire_shapes import shape
from acp_model.spec import revisions
from acp_model.spec.readings import ReadingError
from acp_model.trace import dialect

PROBE_TEXT = "Say hello (acp-model is deciding which spec revision this agent follows)."
# A real agent's first answers cost a process start and a model round trip: the probe waits
# this long at least for its prompt's response, whatever --deadline says, and as many times
# longer as the agent's patience (a profiled agent's 5: its first round trip on a loaded
# machine). Its session/new is a fresh process's first session: it waits the start-up
# deadline, as the run's own first session/new does.
PROBE_DEADLINE = 10.0


class SpecUndecidable(Exception):
    """The revision cannot be used: the readings contradict it (a usage error)."""


class ProbeFailed(Exception):
    """The probe got no usable answer; the run falls back to the default revision."""


def probe_deadline(cfg: FuzzConfig) -> float:
    """How long the probe waits for its prompt's response (see :data:`PROBE_DEADLINE`)."""
    return max(cfg.deadline, PROBE_DEADLINE * cfg.patience)


class _Waits:
    """The probe's waits: each its own deadline, none past ``until`` (the run's time budget
    end, a ``time.monotonic()`` instant): the probe counts against ``--time-budget``, and a
    slow-starting agent must not carry the run past it."""

    def __init__(self, until: float | None) -> None:
        self.until = until
        self.cut = False  # a wait was shortened by the budget's end

    def __call__(self, seconds: float) -> float:
        if self.until is None:
            return seconds
        left = max(0.0, self.until - time.monotonic())
        if left < seconds:
            self.cut = True
        return min(seconds, left)

    def failed(self, seconds: float, what: str = "no answer") -> ProbeFailed:
        if self.cut:
            return ProbeFailed(f"{what} before the time budget's end")
        return ProbeFailed(f"{what} within {seconds:g} s")


def probe(cfg: FuzzConfig, stop: Stop | None = None,
          until: float | None = None) -> revisions.Decision:
    """Start the agent once, prompt it, and read the revision off its initialize response
    (protocol version 1: v1) or its prompt response (v2: receipt or not). No wait runs past
    ``until`` (a ``time.monotonic()`` instant: the time budget's end).

    Raises :class:`ProbeFailed` when the agent gives no usable answer (or none before
    ``until``), and :class:`~acp_model.fuzzing.stop.Interrupted` on a stop request (within
    0.1 s).
    """
    stop = stop or Stop()
    stop.check()
    wait = probe_deadline(cfg)
    waits = _Waits(until)
    if waits(wait) <= 0:
        raise waits.failed(wait, "no time left")
    try:
        proc = AgentProcess(cfg.argv, cwd=cfg.cwd, env=cfg.env, stop=stop.event)
    except OSError as exc:
        raise ProbeFailed(f"cannot start {cfg.argv[0]!r}: {exc.strerror or exc}") from None
    try:
        try:
            params = dialect.initialize_params(  # the run's client, capabilities and all
                cfg.protocol, {"name": "acp-model-probe", "version": "1"},
                cfg.client.capabilities(cfg.protocol) if cfg.client is not None else None)
            start = max(cfg.startup_deadline, wait)
            try:
                init = proc.calls.call("initialize", params, timeout=waits(start))
            except TimeoutError:
                raise waits.failed(start) from None
            decided = dialect.from_initialize(init, None, cfg.protocol)
            if decided is not None:  # v1: no prompt needed, and a v2 prompt would be wrong
                return dataclasses.replace(decided, evidence=f"probe: {decided.evidence}")
            cwd = cfg.workspace or cfg.cwd or os.getcwd()
            try:
                new = proc.calls.call("session/new", {"cwd": cwd, "mcpServers": []},
                                      timeout=waits(start))
            except TimeoutError:
                raise waits.failed(start, "session/new was not answered") from None
            sid = new.get("sessionId") if isinstance(new, dict) else None
            if not isinstance(sid, str):
                raise ProbeFailed("session/new gave no sessionId")
            rid = proc.calls.request("session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": PROBE_TEXT}]})
            record = proc.calls.wait_for(lambda m: is_response_to(m, rid), timeout=waits(wait))
        except TimeoutError:
            raise waits.failed(wait) from None
        except (AgentExited, RpcError) as exc:
            raise ProbeFailed(f"no usable answer ({exc})") from None
        if record is None:
            raise waits.failed(wait, "the probe prompt was not answered")
    finally:
        # the budget's end is a stop: the agent gets a moment, not the polite grace
        proc.close(grace=STOP_GRACE if waits.cut else None)
    msg = record.get("msg") if isinstance(record, dict) else None
    if isinstance(msg, dict) and "error" in msg:
        raise ProbeFailed(f"the probe prompt was rejected: {msg['error']}")
    result = msg.get("result") if isinstance(msg, dict) else None
    decision = dialect.from_prompt_result(result, None, rid)
    return dataclasses.replace(decision, evidence=f"probe: {decision.evidence}")


def fallback(why: str) -> revisions.Decision:
    """The revision a run uses when the probe could not decide: the default one, said so."""
    rev = revisions.SEED
    return revisions.Decision(rev, revisions.AUTO, f"the probe could not decide ({why}); "
                              f"judged under the default revision {rev}, and the run itself "
                              "judges what the probe met", fallback=True)


def sends_batches(cfg: FuzzConfig) -> bool:
    """Whether the fuzzer probes the agent with JSON-RPC batches: asked for, and the revision
    judging is a v2 one (v1 states no batch rules: its agents are not probed with them)."""
    return cfg.batches and shape(cfg.readings.revision).batches


def resolve(cfg: FuzzConfig, stop: Stop | None = None,
            until: float | None = None) -> FuzzConfig:
    """The configuration with its revision decided (``spec`` None: the readings' own); a
    probe waits for nothing past ``until`` (the time budget's end).

    Raises :class:`SpecUndecidable` only for a contradiction between the revision and the
    readings the user chose; a probe that fails falls back (:func:`fallback`).
    """
    if cfg.decision is not None:
        return cfg
    if cfg.spec is None:
        rev = cfg.readings.revision
        return dataclasses.replace(cfg, decision=revisions.Decision(
            rev, rev, f"spec revision {rev} chosen"))
    if cfg.spec == revisions.AUTO:
        try:
            decision = probe(cfg, stop, until)
        except ProbeFailed as exc:
            decision = fallback(str(exc))
    else:
        decision = revisions.chosen(cfg.spec)
    try:
        readings = cfg.readings.parse([f"SPEC={decision.revision}"])
    except ReadingError as exc:
        raise SpecUndecidable(str(exc)) from None
    return dataclasses.replace(cfg, readings=readings, decision=decision)
