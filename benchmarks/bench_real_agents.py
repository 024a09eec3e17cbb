"""Throughput of the fuzzer on a real agent behind the scripted model (prints a table).

Run: ``python benchmarks/bench_real_agents.py [--agent claude-agent-acp] [--seconds 60]``
(install the agent first: ``acp-model agents install claude-agent-acp``).

Configurations, each a fuzz run of ``--seconds`` of generation with the same seed:

* ``before``: every example makes its sessions when it needs them and abandons them (what the
  fuzzer did before real agents were profiled: a session costs claude-agent-acp about a second);
* ``after``: sessions made ahead of need, quiet ones taken over by later examples, the rest
  closed (the profile's defaults);
* ``after, --jobs 2``: the same in two workers, one agent process each.

For each: examples, client actions, actions/s, and when the model transitions that matter first
showed (the first permission request, the first cancel during one), in seconds into the run,
at the end of the example that showed them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.fuzzing.artifacts import fuzz_report
from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import get
from benchmarks.results import figure, record

FIRST_PERMISSION = ("running:permission_request", "requires_action:permission_request",
                    "idle:permission_request", "unreported:permission_request")
CANCEL_IN_PERMISSION = ("requires_action:cancel",)


def _first(report: dict[str, Any], keys: tuple[str, ...]) -> str:
    seen = (report.get("coverage") or {}).get("first_seen") or {}
    times = [seen[k] for k in keys if k in seen]
    return f"{min(times):.1f}" if times else "-"


def in_process(name: str, seconds: float, seed: int, **overrides: Any) -> dict[str, Any]:
    profile = get(name)
    cfg = profile_config(FuzzConfig(["true"], seed=seed, time_budget=seconds,
                                    max_examples=100_000, spec="sdk-2.4.0",
                                    replay_runs=1, minimize_budget=5), profile)
    cfg = dataclasses.replace(cfg, **overrides)
    with backend(cfg, profile) as running:
        result = run_fuzz(running)
    return fuzz_report(result)


def with_jobs(name: str, seconds: float, seed: int, jobs: int) -> dict[str, Any]:
    report = Path(tempfile.mkdtemp()) / "merged.json"
    subprocess.run([sys.executable, "-m", "acp_model", "fuzz", "--agent", name, "--jobs",
                    str(jobs), "--time-budget", str(seconds), "--seed", str(seed),
                    "--spec", "sdk-2.4.0", "--replay-runs", "1", "--minimize-budget", "5",
                    "--report", str(report)], capture_output=True, text=True, check=False)
    return json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="claude-agent-acp")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rows = [
        ("before", in_process(args.agent, args.seconds, args.seed, sessions_ahead=0,
                              reuse_sessions=0, close_sessions=False)),
        ("after", in_process(args.agent, args.seconds, args.seed)),
        ("after, --jobs 2", with_jobs(args.agent, args.seconds, args.seed, 2)),
    ]
    print(f"{args.agent}, {args.seconds:g} s of generation, seed {args.seed}, sdk-2.4.0")
    print(f"{'configuration':18} {'examples':>9} {'actions':>8} {'actions/s':>10} "
          f"{'1st permission (s)':>19} {'1st cancel in permission (s)':>29}")
    table: list[list[Any]] = []
    for label, report in rows:
        s = report["summary"]
        seconds = s.get("seconds_longest") or s.get("seconds") or 1
        print(f"{label:18} {s.get('examples', 0):>9} {s.get('actions', 0):>8} "
              f"{s.get('actions', 0) / seconds:>10.1f} {_first(report, FIRST_PERMISSION):>19} "
              f"{_first(report, CANCEL_IN_PERMISSION):>29}")
        table.append([label, s.get("examples", 0), s.get("actions", 0),
                      round(s.get("actions", 0) / seconds, 1), _first(report, FIRST_PERMISSION),
                      _first(report, CANCEL_IN_PERMISSION)])
    version = get(args.agent).version
    record(f"real-agents-{args.agent}", f"A real agent: {args.agent} {version}", [
        figure(f"{label}: client actions/s", row[3], target=">= 30" if label == "after" else "",
               met=row[3] >= 30 if label == "after" else None)
        for label, row in zip((r[0] for r in rows), table, strict=True)
    ], table={"columns": ["configuration", "examples", "client actions", "actions/s",
                          "first permission request (s)", "first cancel during one (s)"],
              "rows": table},
       parameters={"agent": args.agent, "version": version, "seconds": args.seconds,
                   "seed": args.seed, "spec": "sdk-2.4.0"})


if __name__ == "__main__":
    main()
