"""A profile's tool hints are hints only: real agents fuzzed with their hints removed
(``--no-tool-hints``) still reach permission requests, the scripted model choosing their tools
from what each request offers (the full table: ``benchmarks/bench_tool_hints.py``,
``benchmarks/results/tool-hints.json``)."""

from __future__ import annotations

import dataclasses

import pytest

from acp_model.fuzzing.artifacts import fuzz_report
from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import get

pytestmark = [pytest.mark.slow, pytest.mark.external]  # real agents, up to two minutes each

PERMISSION = frozenset(f"{state}:permission_request"
                       for state in ("unreported", "running", "requires_action", "idle"))


# one of each kind of hint: Python tool names of its own (Shell, WriteFile), and a Rust agent
# whose only changing tool is its command runner (exec_command, with an escalation field)
@pytest.mark.parametrize("name", ["kimi-cli", "zed-codex-acp"])
def test_an_agent_without_its_hints_reaches_permission_requests(name: str) -> None:
    profile = get(name)
    assert profile.prefer_tools, f"{name} has no hints to remove"
    assert profile.installed(), f"run `acp-model agents install {name}` (make test does)"
    cfg = profile_config(FuzzConfig(["true"], seed=5, time_budget=120, max_examples=100_000,
                                    spec="auto", protocol=profile.protocols[0],
                                    replay_runs=1, minimize_budget=2.0,
                                    reproduce_only=frozenset(),
                                    stop_when_reached=(PERMISSION,)), profile,
                         profile.protocols[0])
    cfg = dataclasses.replace(cfg, tool_hints=False)
    with backend(cfg, profile) as running:
        assert running.model is not None and running.model.prefer_tools == ()
        result = run_fuzz(running)
    report = fuzz_report(result)
    assert result.unusable is None, result.unusable
    assert report["reach"]["permission_requests"] > 0, report["reach"]
    assert PERMISSION & set(report["transitions"]), report["transitions"]
