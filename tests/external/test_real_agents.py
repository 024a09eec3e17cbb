"""The real agents, fuzzed offline behind the scripted model (`make test` installs them).

Each profiled agent is fuzzed under v2 for a short budget: the permission path and cancels
during a permission request must be exercised (the model transitions the report lists), and
every failure and warning must be one `docs/real-agents.md` documents for that agent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.artifacts import fuzz_report, write_out_dir
from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import PROFILES, get

pytestmark = [pytest.mark.slow, pytest.mark.external]  # a real agent, a minute each

DOC = Path(__file__).resolve().parents[2] / "docs" / "real-agents.md"
VERDICT = re.compile(r"<!-- verdict (\S+) v(\d): fail=([^;]*); warn=(.*?) -->")


def documented() -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    out = {}
    for m in VERDICT.finditer(DOC.read_text(encoding="utf-8")):
        rules = [{r.strip() for r in part.split(",") if r.strip()} for part in (m[3], m[4])]
        out[(m[1], int(m[2]))] = (rules[0], rules[1])
    return out


def test_every_documented_verdict_names_a_profile() -> None:
    """The verdicts name profiles that exist (docs/agents-profiles.md describes every profile;
    the agents fuzzed here are the ones with a verdict)."""
    assert {name for name, _ in documented()} <= set(PROFILES)


def _fuzz(name: str, protocol: int, seconds: float, out: Path,
          reach: tuple[frozenset[str], ...]) -> dict[str, Any]:
    """A run of the profiled agent offered ``protocol``: its report (a usable, whole run);
    its counterexamples go to ``out`` (an unexpected one is printed by the assertion with its
    program and transcript). The documented ones are not read here, and each failure's
    minimizing and replays cost fresh agent processes: two seconds of minimizing and no
    replay (``acp-model replay`` on its replay.json measures an unexpected one). The run ends
    once it has reached each group of ``reach`` (model transitions the test asserts),
    ``seconds`` at most: a loaded machine gets the time it needs, an idle one stops early."""
    profile = get(name)
    assert profile.installed(), f"run `acp-model agents install {name}` (make test does)"
    cfg = profile_config(FuzzConfig(["true"], seed=3, time_budget=seconds, max_examples=100_000,
                                    replay_runs=0, minimize_budget=2.0, spec="auto",
                                    protocol=protocol, stop_when_reached=reach),
                          profile, protocol)
    with backend(cfg, profile) as running:
        result = run_fuzz(running)
    assert result.judged and not result.interrupted, (result.unusable, result.problem)
    return fuzz_report(result, write_out_dir(result, out))


def _only_documented(report: dict[str, Any], name: str, protocol: int, out: Path) -> None:
    """The run shows no failure or warning its documented verdict line does not list (an
    undocumented failure prints its counterexample, an undocumented warning its first
    sighting: the transcript and the proof, so a CI log alone says whether it is the agent's
    bug or ours)."""
    fail, warn = documented()[(name, protocol)]
    failed = {v["rule"] for v in report["violations"] if v["level"] == "fail"}
    warned = {v["rule"] for v in report["violations"] if v["level"] != "fail"}
    assert failed <= fail, "\n\n".join(
        (out / rule / "counterexample.txt").read_text(encoding="utf-8")
        if (out / rule / "counterexample.txt").is_file() else rule for rule in failed - fail)
    # a documented failure seen on a shared process only, not reproduced fresh, is reported
    # as a warning (docs/reports.md, standing "shared-only")
    warn = warn | fail
    assert warned <= warn, "\n\n".join(  # its first sighting, or at least the message
        Path(v["files"]["warning.txt"]).read_text(encoding="utf-8")
        if v.get("files") else f"{v['rule']}: {v['message']}"
        for v in report["violations"] if v["rule"] in warned - warn)


# what each test asserts the run reached: a permission request, its answer, a cancel during
# work (v2); a turn ended, a cancel during a turn (v1)
V2_REACH = (frozenset({"requires_action:permission_request", "running:permission_request"}),
            frozenset({"requires_action:permission_answer"}),
            frozenset({"running:cancel", "requires_action:cancel"}))
V1_REACH = (frozenset({"running:idle_reported"}),
            frozenset({f"{state}:cancel" for state in ("unreported", "running",
                                                        "requires_action")}))


@pytest.mark.parametrize("name", sorted(n for n, v in documented() if v == 2))
def test_a_real_agent_under_v2(name: str, tmp_path: Path) -> None:
    report = _fuzz(name, 2, seconds=120, out=tmp_path, reach=V2_REACH)
    assert report["spec"]["revision"] == "sdk-2.4.0", report["spec"]
    transitions = report["transitions"]
    assert transitions.get("requires_action:permission_request", 0) \
        + transitions.get("running:permission_request", 0) > 0, transitions
    assert transitions.get("requires_action:permission_answer", 0) > 0, transitions
    # cancels during work (during a permission wait too, in most runs)
    assert transitions.get("running:cancel", 0) + transitions.get("requires_action:cancel", 0) \
        > 0, transitions
    _only_documented(report, name, 2, tmp_path)


@pytest.mark.parametrize("name", sorted(n for n, v in documented() if v == 1))
def test_a_real_agent_under_v1(name: str, tmp_path: Path) -> None:
    """The same agent asked for v1 (--protocol v1): judged under the v1 revision, its turns
    ended by their prompt responses, only the documented v1 verdicts."""
    report = _fuzz(name, 1, seconds=90, out=tmp_path, reach=V1_REACH)
    assert report["spec"]["revision"] == "v1", report["spec"]
    transitions = report["transitions"]
    assert transitions.get("running:idle_reported", 0) > 0, transitions  # turns ended
    # cancels during a turn: a v1 turn is open from its prompt, so a cancel before its first
    # update counts (a clean-clone run's claude-agent-acp, slow to start its turns, had no
    # cancel after a turn's first update in 25 s)
    assert sum(transitions.get(f"{state}:cancel", 0)
               for state in ("unreported", "running", "requires_action")) > 0, transitions
    _only_documented(report, name, 1, tmp_path)
