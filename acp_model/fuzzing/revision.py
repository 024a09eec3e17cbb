"""``--spec auto`` for a live agent: one probe prompt decides the revision before fuzzing.

The monitor must know the revision from the first message it judges (schemas, rules and the
client's own obligations differ), so the decision cannot wait for the first generated prompt.
A throwaway agent process is initialized, gets one session and one text prompt, and its
answer decides (:func:`acp_model.spec.revisions.from_prompt_result`); the process is then
stopped. The probe's own messages are not judged: its only output is the decision and its
evidence, which every report states.
"""

from __future__ import annotations

import dataclasses
import os

from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.transport import AgentExited, AgentProcess, RpcError, is_response_to
from acp_model.spec import revisions
from acp_model.spec.readings import ReadingError

PROBE_TEXT = "Say hello (acp-model is deciding which spec revision this agent follows)."


class SpecUndecidable(Exception):
    """The probe could not decide (the agent cannot be started or prompted); a usage-level
    problem the front-end reports like an unusable agent."""


def probe(cfg: FuzzConfig) -> revisions.Decision:
    """Start the agent once, prompt it, and read the revision off its prompt response."""
    try:
        proc = AgentProcess(cfg.argv, cwd=cfg.cwd, env=cfg.env)
    except OSError as exc:
        raise SpecUndecidable(f"cannot start {cfg.argv[0]!r}: {exc.strerror or exc}") from None
    with proc:
        try:
            proc.call("initialize", {"protocolVersion": 2, "capabilities": {},
                                     "info": {"name": "acp-model-probe", "version": "1"}},
                      timeout=cfg.startup_deadline)
            new = proc.call("session/new", {"cwd": cfg.cwd or os.getcwd(), "mcpServers": []},
                            timeout=cfg.deadline)
            sid = new.get("sessionId") if isinstance(new, dict) else None
            if not isinstance(sid, str):
                raise SpecUndecidable("session/new gave no sessionId")
            rid = proc.request("session/prompt", {
                "sessionId": sid, "prompt": [{"type": "text", "text": PROBE_TEXT}]})
            record = proc.wait_for(lambda m: is_response_to(m, rid), timeout=cfg.deadline)
        except (TimeoutError, AgentExited, RpcError) as exc:
            raise SpecUndecidable(f"the probe got no usable answer ({exc or 'timeout'})"
                                  ) from None
        if record is None:
            raise SpecUndecidable(f"the probe prompt was not answered within "
                                  f"{cfg.deadline:g} s")
    msg = record.get("msg") if isinstance(record, dict) else None
    if isinstance(msg, dict) and "error" in msg:
        raise SpecUndecidable(f"the probe prompt was rejected: {msg['error']}")
    result = msg.get("result") if isinstance(msg, dict) else None
    decision = revisions.from_prompt_result(result, None, rid)
    return dataclasses.replace(decision, evidence=f"probe: {decision.evidence}")


def resolve(cfg: FuzzConfig) -> FuzzConfig:
    """The configuration with its revision decided (``spec`` None: the readings' own)."""
    if cfg.decision is not None:
        return cfg
    if cfg.spec is None:
        rev = cfg.readings.revision
        return dataclasses.replace(cfg, decision=revisions.Decision(
            rev, rev, f"spec revision {rev} chosen"))
    decision = probe(cfg) if cfg.spec == revisions.AUTO else revisions.chosen(cfg.spec)
    try:
        readings = cfg.readings.parse([f"SPEC={decision.revision}"])
    except ReadingError as exc:
        raise SpecUndecidable(str(exc)) from None
    return dataclasses.replace(cfg, readings=readings, decision=decision)
