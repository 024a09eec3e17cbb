"""Long fuzz campaign for any ACP v2 agent, sharded over cores with pytest-xdist.

    ACP_AGENT="node my-agent.js --stdio" pytest -n auto fuzz/test_agent.py
    ACP_AGENT="..." ACP_BUDGET=3600 ACP_SHARDS=8 pytest -n 8 fuzz/test_agent.py

One test per shard (``test_agent_campaign[shard-0]`` ...): each shard is an independent fuzz run
with its own agent processes for ``ACP_BUDGET`` seconds of generation, and fails with the
conformance text of what it found (rule, message, minimal client program, reproduction rate).

Example database: every shard uses Hypothesis' directory database under ``ACP_DB`` (default
``.hypothesis/acp-model`` in the rootdir, the plugin's default too), in the subdirectory of this
agent command line, readings and session limit. A failure found by any shard is stored there and
replayed first by every later run on that agent: the next campaign, and an ordinary
``pytest --acp-agent "..."`` run with the quick or deep profile (the ci profile uses no
database). What the database holds is Hypothesis' choice sequence of the shrunk program, not our
side-channel record: the failure, its shortest program and the fresh-process counterexample
live in the shard's report and ``replay.json`` under ``ACP_OUT``, and do not depend on the
database. A seed (``ACP_SEED``) fixes what is generated after the replayed entries; it does not
switch the database off.

Environment:

=============  =====================================================================
ACP_AGENT      the agent command line, split like a shell (required: skipped without)
ACP_BUDGET     seconds of generation per shard (default 600)
ACP_SHARDS     number of shards (default: the number of xdist workers, else 1)
ACP_STEPS      client actions per example, at most (default 30)
ACP_DEADLINE   seconds to wait for what the agent owes (default 3)
ACP_READINGS   comma-separated NAME=VALUE readings (default: the defaults)
ACP_SEED       base seed; shard i uses ACP_SEED + 1000 * i (default: unseeded)
ACP_DB         example database: a directory, redis://HOST:PORT/N, both comma-separated,
               or ``none`` (default .hypothesis/acp-model)
ACP_DB_RO      1: replay from the Redis stores, save nothing there
ACP_OUT        per-shard report.json and counterexample files (default acp-campaign-out)
ACP_REPLAYS    fresh-process replays per counterexample (default 10)
ACP_STOP_ON    comma-separated rule IDs: a shard stops generating once all of them have
               failed, then minimizes and replays as usual (``--stop-on``; default: none)
=============  =====================================================================
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_model.argtypes import int_at_least, positive_float, rule_ids
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import locations
from acp_model.pytest_plugin.items import describe_failures, emit_warnings
from acp_model.spec.readings import DEFAULT, ReadingError

COMMAND = os.environ.get("ACP_AGENT", "").strip()
if not COMMAND:
    pytest.skip("set ACP_AGENT to the agent's command line to run this campaign",
                allow_module_level=True)


def _env(name: str, default: str, cast: Callable[[str], Any]) -> Any:
    """An environment setting, or a usage error naming it."""
    value = os.environ.get(name) or default
    try:
        return cast(value)
    except (ValueError, argparse.ArgumentTypeError, ReadingError) as exc:
        raise pytest.UsageError(f"{name}={value!r}: {exc}") from None


BUDGET = _env("ACP_BUDGET", "600", positive_float)
SHARDS = _env("ACP_SHARDS", os.environ.get("PYTEST_XDIST_WORKER_COUNT") or "1",
              int_at_least(1))
STEPS = _env("ACP_STEPS", "30", int_at_least(1))
DEADLINE = _env("ACP_DEADLINE", "3", positive_float)
REPLAYS = _env("ACP_REPLAYS", "10", int_at_least(1))
SEED = _env("ACP_SEED", "", lambda v: int(v) if v else None)
READINGS = _env("ACP_READINGS", "", lambda v: DEFAULT.parse([r for r in v.split(",")
                                                            if r.strip()]))
STOP_ON = _env("ACP_STOP_ON", "", lambda v: rule_ids(v) if v else frozenset())
HAS_TIMEOUT = importlib.util.find_spec("pytest_timeout") is not None


def shard_config(shard: int, rootdir: Path) -> FuzzConfig:
    """The fuzz configuration of one shard, from the environment."""
    db = os.environ.get("ACP_DB", ".hypothesis/acp-model")
    directory, shared = (None, ()) if db.lower() == "none" else locations([db], rootdir)
    return FuzzConfig(
        argv=shlex.split(COMMAND), max_examples=10_000_000, steps=STEPS,
        seed=None if SEED is None else SEED + 1000 * shard, time_budget=BUDGET,
        deadline=DEADLINE, readings=READINGS, replay_runs=REPLAYS, max_rounds=20,
        shrink_budget=60.0, cwd=str(rootdir), stop_on=STOP_ON,
        database=directory, shared_databases=shared,
        database_readonly=os.environ.get("ACP_DB_RO", "") not in ("", "0"))


def _marks() -> list[pytest.MarkDecorator]:
    # Generation, then up to 20 rounds of shrinking and the replays: well past the 600 s
    # default of the repository's pytest-timeout setting.
    return [pytest.mark.timeout(BUDGET * 2 + 1800)] if HAS_TIMEOUT else []


@pytest.mark.parametrize("shard", [pytest.param(n, id=f"shard-{n}", marks=_marks())
                                   for n in range(SHARDS)])
def test_agent_campaign(shard: int, request: pytest.FixtureRequest) -> None:
    from acp_model.fuzzing.orchestrator import FuzzRun, Outputs

    rootdir = request.config.rootpath
    out = rootdir / os.environ.get("ACP_OUT", "acp-campaign-out") / f"shard-{shard}"
    outcome = FuzzRun(shard_config(shard, rootdir)).run(Outputs(out=out,
                                                                report=out / "report.json"))
    result, files = outcome.result, outcome.files
    emit_warnings(result.recorder)
    rec = result.recorder
    head = (f"shard {shard}: {rec.examples} examples, {rec.actions} client actions in "
            f"{result.seconds:.0f} s against {COMMAND} (report: {out / 'report.json'})")
    if result.unusable is not None or result.problem is not None:
        pytest.fail(f"{head}\nthe agent could not be fuzzed: {result.unusable or result.problem}",
                    pytrace=False)
    if rec.found:
        pytest.fail(f"{head}\n\n{describe_failures(rec.found, files=files)}", pytrace=False)
