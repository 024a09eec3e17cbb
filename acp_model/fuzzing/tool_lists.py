"""The tools each profiled agent offers its model, recorded from the agent itself.

``acp-model agents tools NAME`` starts the installed agent behind the scripted model as a fuzz
run would (its profile's environment, files and session configuration), sends one prompt whose
turn the model answers with a line of text, and keeps the tool list of that turn's first model
request: names, descriptions and JSON schemas, exactly as the agent sent them. The lists are
the fixtures of the chooser's test (``tests/data/tools/NAME.json``): the tool the scripted model
calls for a shell command, a file edit and a long-running command is checked on every one of
them, with the profile's hints and without.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.login import log_in
from acp_model.fuzzing.transport import AgentExited, AgentProcess, RpcError, is_response_to
from acp_model.llm.script import TOOL_KINDS, Text
from acp_model.llm.server import tag_text
from acp_model.llm.tools import OfferedTool, choose, classify, offered_tools
from acp_model.model.wire_shapes import SHAPES
from acp_model.profiles import Profile
from acp_model.trace import dialect

FORMAT = "acp-model-tools/1"
INFO = {"name": "acp-model-tools", "version": "1"}
PROMPT = "List the tools you have (acp-model records them)."


class RecordingFailed(Exception):
    """The agent gave no tool list: it did not start, or its turn never asked its model."""


def record(profile: Profile, *, wait: float = 60.0) -> dict[str, Any]:
    """The tool list ``profile``'s installed agent offers its model, as a fixture document.
    v1 is spoken (every profiled agent speaks it): the prompt's answer comes after the model
    request that carries the list, the proof that the list was read."""
    if 1 not in profile.protocols:
        raise RecordingFailed(f"{profile.name} does not speak v1")
    protocol = 1
    cfg = profile_config(FuzzConfig(["true"], protocol=protocol), profile, protocol)
    with backend(cfg, profile) as running:
        model = running.model
        assert model is not None and running.cwd is not None
        try:
            proc = AgentProcess(running.argv, cwd=running.cwd, env=running.env)
        except OSError as exc:
            raise RecordingFailed(f"cannot start the agent: {exc}") from None
        try:
            tag = _one_turn(proc, running, wait)
        except (AgentExited, RpcError, TimeoutError) as exc:
            tail = proc.stderr_text()[-300:].strip()
            raise RecordingFailed(f"{type(exc).__name__}: {exc}"
                                  + (f"; stderr ends with: {tail}" if tail else "")) from None
        finally:
            proc.close(grace=2.0)
        tools = model.offered(tag)
    if not tools:
        raise RecordingFailed("the agent's turn made no model request offering tools")
    return {
        "format": FORMAT, "agent": profile.name, "package": profile.package,
        "version": profile.version, "model_api": profile.model_api, "protocol": protocol,
        "session_config": [[m, p] for m, p in running.session_config],
        "recorded": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "tools": [{"name": t.name, "description": t.description, "schema": t.schema}
                  for t in tools],
    }


def _one_turn(proc: AgentProcess, cfg: FuzzConfig, wait: float) -> str:
    """Initialize (v1), a session configured as the profile says, one prompt answered by its
    model with text, awaited; the turn's tag."""
    assert cfg.model is not None
    init = proc.calls.call("initialize", dialect.initialize_params(1, INFO),
                     timeout=cfg.startup_deadline)
    if cfg.auth_method is not None and isinstance(init, dict):
        log_in(proc, init.get("authMethods"), cfg.auth_method, SHAPES[1], wait)
    new = proc.calls.call("session/new", {"cwd": cfg.cwd, "mcpServers": []}, timeout=wait)
    sid = new.get("sessionId") if isinstance(new, dict) else None
    if not isinstance(sid, str):
        raise RecordingFailed(f"session/new gave no sessionId: {new!r}")
    for method, params in cfg.session_config:
        proc.calls.call(method, {"sessionId": sid, **params}, timeout=wait)
    tag = cfg.model.register((Text(1),), sid)
    rid = proc.calls.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": f"{PROMPT} {tag_text(tag)}"}]})
    if proc.calls.wait_for(lambda m: is_response_to(m, rid), timeout=wait) is None:
        raise RecordingFailed(f"the prompt's turn did not end within {wait:g} s")
    return tag


def tools_of(doc: Mapping[str, Any]) -> tuple[OfferedTool, ...]:
    """The recorded tools of a fixture document."""
    return offered_tools([(t.get("name"), t.get("description", ""), t.get("schema"))
                          for t in doc.get("tools") or [] if isinstance(t, Mapping)])


def choices(tools: tuple[OfferedTool, ...], prefer: tuple[str, ...] = ()) -> dict[str, str]:
    """The tool the scripted model calls for each kind of ``Tools`` reply."""
    out = {}
    for want in TOOL_KINDS:
        chosen = choose(tools, want, prefer)
        out[want] = chosen.name if chosen is not None else ""
    return out


def summary(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(tool, kind) for every recorded tool, in the agent's order."""
    return [(t.name, str(classify(t))) for t in tools_of(doc)]


def write(doc: Mapping[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{doc['agent']}.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


__all__ = ["FORMAT", "RecordingFailed", "choices", "record", "summary", "tools_of", "write"]
