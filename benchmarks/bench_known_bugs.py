"""Published bugs of real agents: does the fuzzer find them, how fast, how small (prints a table).

Run: ``python benchmarks/bench_known_bugs.py [--only ID ...] [--budget 90] [--lock PATH]``.
The data is ``benchmarks/known_bugs.toml``: each entry a published report (an issue or pull
request of the agent's own repository), the profiled agent, the release that carries the bug
(and the one that fixed it, where there is one), the protocol and the catalogued rule the bug
breaks. For every entry that can run here the benchmark

1. installs the pinned release (``acp_model.profiles.versions``: npm, dependencies as of its
   publication) and fuzzes it behind the scripted model for ``--budget`` seconds with a fixed
   seed, stopping once the entry's rule fails;
2. prints found / not found, the seconds to the first failure of that rule, and the size of
   its minimal counterexample (client actions);
3. for a fixed release, fuzzes that one with the same budget and seed, and replays the pinned
   release's counterexample against it: the rule should neither fail nor reproduce there.

Figures go to ``benchmarks/results/known_bugs.json`` (machine, date, commit, per entry). Each
miss is explained in ``docs/known-bugs.md``. ``--lock PATH`` holds ``flock PATH`` (a shared
machine's lock) for each phase of an entry (an install, a fuzz run, a replay: a few minutes
each), never the whole benchmark; the benchmark is not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from acp_model.spec.readings import DEFAULT
from acp_model.spec.rules import RULES
from benchmarks import results

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "known_bugs.toml"
RESULTS = ROOT / "benchmarks" / "results" / "known_bugs.json"
SPECS = {"v1": "v1", "v2": "auto"}  # the protocol an entry names -> the fuzzer's --spec
REQUIRED = ("id", "report", "title", "agent", "version", "protocol", "rule", "verified",
            "verification")
OPTIONAL = ("package", "fixed", "fixed_package", "unavailable", "notes", "reading")


@dataclasses.dataclass(frozen=True)
class KnownBug:
    """One published report: where it is, which release carries it, which rule it breaks."""

    id: str
    report: str
    title: str
    agent: str  # a profile name (acp_model/profiles/data)
    version: str
    protocol: str  # "v1" or "v2"
    rule: str  # a rule ID of acp_model/spec/rules.py
    verified: bool  # seen by hand on the pinned release
    verification: str  # how (or, when not verified, why not)
    package: str = ""  # the package it was published under, when not the profile's
    fixed: str = ""  # the release that fixed it ("" when open)
    fixed_package: str = ""
    unavailable: str = ""  # why this benchmark cannot run it here ("" when it can)
    notes: str = ""
    reading: tuple[str, ...] = ()  # readings the rule needs (e.g. a named strict reading)

    def spec(self, package: str, version: str) -> str:
        return f"{package}@{version}" if package else version

    @property
    def pinned(self) -> str:
        return self.spec(self.package, self.version)

    @property
    def fixed_spec(self) -> str:
        return self.spec(self.fixed_package or self.package, self.fixed) if self.fixed else ""


class DataError(ValueError):
    """An entry of the data file that is malformed."""


def load(path: Path = DATA) -> list[KnownBug]:
    """Every entry of the data file, checked for shape (not for the catalogue: see the test)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for raw in data.get("bug", []):
        missing = [k for k in REQUIRED if k not in raw]
        unknown = set(raw) - set(REQUIRED) - set(OPTIONAL)
        if missing or unknown:
            raise DataError(f"{raw.get('id', '?')}: missing {missing}, unknown {sorted(unknown)}")
        if raw["protocol"] not in SPECS:
            raise DataError(f"{raw['id']}: protocol {raw['protocol']!r} is not v1 or v2")
        raw = {**raw, "reading": tuple(raw.get("reading", ()))}
        out.append(KnownBug(**raw))
    ids = [b.id for b in out]
    if len(set(ids)) != len(ids):
        raise DataError("duplicate entry IDs")
    return out


# --- running one release ------------------------------------------------------------------
def profile_at(bug: KnownBug, spec: str) -> Any:
    from acp_model.profiles import get
    from acp_model.profiles.versions import at_version

    return at_version(get(bug.agent), spec)


def install(bug: KnownBug, spec: str) -> Any:
    from acp_model.profiles.versions import install_version

    profile = profile_at(bug, spec)
    if not profile.installed():
        install_version(profile)
        profile = profile_at(bug, spec)
    return profile


def fuzz(bug: KnownBug, profile: Any, budget: float, seed: int, *, fixed: bool = False
         ) -> dict[str, Any]:
    """One fuzz run of ``profile`` (in this process), stopping once ``bug.rule`` fails. On a
    fixed release other failures are only noted (minimized briefly, replayed once): the run
    is there to show the rule holds."""
    from acp_model.fuzzing.artifacts import fuzz_report
    from acp_model.fuzzing.backend import backend, profile_config
    from acp_model.fuzzing.config import FuzzConfig
    from acp_model.fuzzing.run import run_fuzz

    spec = SPECS[bug.protocol]
    readings = DEFAULT.parse([f"SPEC={'seed' if spec == 'auto' else spec}", *bug.reading])
    cfg = FuzzConfig(["true"], seed=seed, time_budget=budget, max_examples=100_000,
                     spec=spec, readings=readings, replay_runs=1 if fixed else 2,
                     # the run stops once the rule fails, and Hypothesis' own shrinking with
                     # it: the counterexample's size is what fresh-process minimizing reaches
                     minimize_budget=5.0 if fixed else 45.0,
                     stop_on=frozenset({bug.rule}),
                     protocol=1 if bug.protocol == "v1" else profile.protocols[0])
    cfg = profile_config(cfg, profile, cfg.protocol)
    with backend(cfg, profile) as running:
        return fuzz_report(run_fuzz(running))


def replay(bug: KnownBug, profile: Any, actions: list[dict[str, Any]], runs: int
           ) -> tuple[int, int]:
    """Replay a counterexample's client actions against ``profile``: (reproduced, runs)."""
    doc = {"format": "acp-model-replay/1", "rule": bug.rule, "actions": actions,
           "readings": {"SPEC": SPECS[bug.protocol] if bug.protocol == "v1" else "seed"},
           "profile": bug.agent, "profile_package": f"{profile.package}@{profile.version}"}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replay.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "acp_model", "replay", str(path),
                               "--runs", str(runs)], capture_output=True, text=True,
                               check=False, timeout=600)
    hits = sum(1 for line in done.stdout.splitlines()
               if line.startswith("run ") and ": reproduced" in line)
    return hits, runs


def verdict(report: dict[str, Any], rule: str) -> dict[str, Any]:
    """What a run says about ``rule``: failed (with its counterexample), warned, passed after
    being exercised, or never exercised."""
    found = next((c for c in report.get("counterexamples", []) if c["rule"] == rule), None)
    warned = any(v.get("rule") == rule for v in report.get("violations", []))
    stats = next((r for r in report.get("rules") or [] if r.get("id") == rule), {})
    exercised = int(stats.get("exercised", 0))
    out: dict[str, Any] = {
        "status": "fail" if found else "warn" if warned else "pass" if exercised else
        "not exercised",
        "exercised": exercised, "seconds": report.get("summary", {}).get("seconds"),
        "examples": report.get("summary", {}).get("examples"),
        "reach": report.get("reach"),  # how far the run got: a miss needs it read with it
        "other_failures": sorted(c["rule"] for c in report.get("counterexamples", [])
                                 if c["rule"] != rule)}
    if found:
        out.update(first_failure_s=found["first_seen_s"], steps=found["steps"],
                   reproduction=found["reproduction"], actions=found["actions"])
    return out


def run_entry(bug: KnownBug, budget: float, seed: int, lock: str | None,
              console: Console) -> dict[str, Any]:
    from acp_model.profiles import ProfileError

    row: dict[str, Any] = {"id": bug.id, "agent": bug.agent, "version": bug.version,
                           "fixed": bug.fixed, "rule": bug.rule, "protocol": bug.protocol,
                           "verified": bug.verified}
    if bug.unavailable:
        row["status"] = "unavailable"
        row["why"] = bug.unavailable
        return row
    def step(what: str) -> Any:
        """A phase of the entry under the lock (each a few minutes at most, so other work on
        a shared machine interleaves), with a spinner saying what runs."""
        return _step(lock, console, f"{bug.id}: {what}")

    try:
        with step(f"installing {bug.pinned}"):
            pinned = install(bug, bug.pinned)
        with step(f"fuzzing {bug.pinned} for {budget:.0f} s"):
            row["pinned"] = verdict(fuzz(bug, pinned, budget, seed), bug.rule)
        if bug.fixed:
            with step(f"installing {bug.fixed_spec}"):
                fixed = install(bug, bug.fixed_spec)
            with step(f"fuzzing {bug.fixed_spec} for {budget:.0f} s"):
                row["fixed_run"] = verdict(fuzz(bug, fixed, budget, seed, fixed=True),
                                           bug.rule)
            actions = row["pinned"].get("actions")
            if actions:
                with step(f"replaying its counterexample on {bug.fixed}"):
                    hits, runs = replay(bug, fixed, actions, 3)
                row["fixed_run"]["counterexample_reproduced"] = f"{hits}/{runs}"
    except ProfileError as exc:
        row["status"] = "error"
        row["why"] = str(exc)
        return row
    row["status"] = "found" if row["pinned"]["status"] in ("fail", "warn") else "missed"
    return row


@contextlib.contextmanager
def _step(lock: str | None, console: Console, what: str) -> Iterator[None]:
    """The shared machine's lock and a spinner, for one phase of an entry."""
    with results.locked(lock), console.status(what):
        yield


# --- the table ------------------------------------------------------------------------------
def _fixed_cell(row: dict[str, Any]) -> str:
    run = row.get("fixed_run")
    if run is None:
        return "-" if not row.get("fixed") else "not run"
    said = {"pass": "passes", "not exercised": "not exercised"}.get(run["status"], "FAILS")
    replayed = run.get("counterexample_reproduced")
    return f"{row['fixed']}: {said}" + (f", replay {replayed}" if replayed else "")


def table(rows: list[dict[str, Any]]) -> Table:
    out = Table(title="published bugs: found by acp-model fuzz?", pad_edge=False)
    for column in ("report", "agent@version", "rule", "verified", "found", "first failure s",
                   "steps", "fixed release"):
        out.add_column(column, overflow="fold")
    for row in rows:
        pinned = row.get("pinned") or {}
        found = row["status"] if row["status"] in ("unavailable", "error") else (
            "found" if row["status"] == "found" else f"missed ({pinned.get('status')})")
        out.add_row(row["id"], f"{row['agent']}@{row['version']}", row["rule"],
                    "yes" if row["verified"] else "no", found,
                    str(pinned.get("first_failure_s", "-")), str(pinned.get("steps", "-")),
                    _fixed_cell(row))
    return out


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", metavar="ID", help="entries to run (default: all)")
    parser.add_argument("--budget", type=float, default=90.0, help="fuzz seconds per release")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lock", metavar="PATH", help="hold flock PATH for each entry")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--merge", action="store_true",
                        help="keep the entries of an earlier results file not run now")
    args = parser.parse_args()
    console = Console()
    bugs = load()
    unknown = set(args.only or ()) - {b.id for b in bugs}
    if unknown:
        console.print(f"unknown entries: {', '.join(sorted(unknown))}")
        raise SystemExit(2)
    chosen = [b for b in bugs if not args.only or b.id in args.only]
    start = time.monotonic()
    rows = [run_entry(bug, args.budget, args.seed, args.lock, console) for bug in chosen]
    console.print(table(rows))
    ran = [r for r in rows if r["status"] in ("found", "missed")]
    console.print(f"found {sum(r['status'] == 'found' for r in ran)} of {len(ran)} run "
                  f"({len(rows) - len(ran)} unavailable or not installable); "
                  f"{time.monotonic() - start:.0f} s")
    previous: dict[str, Any] = {}
    if args.merge and args.out.is_file():
        previous = {r["id"]: r for r in json.loads(args.out.read_text())["entries"]}
    merged = {**previous, **{r["id"]: r for r in rows}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    entries = [merged[b.id] for b in bugs if b.id in merged]
    ran_all = [e for e in entries if e["status"] in ("found", "missed")]
    head = results.stamp(
        "known_bugs", "Published bugs of real agents", [
            results.figure("found", sum(e["status"] == "found" for e in ran_all),
                           f"of {len(ran_all)} run")],
        table={"columns": ["report", "agent", "version", "rule", "status", "first failure s",
                           "counterexample steps"],
               "rows": [[e["id"], e["agent"], e["version"], e["rule"], e["status"],
                         (e.get("pinned") or {}).get("first_failure_s"),
                         (e.get("pinned") or {}).get("steps")] for e in entries]},
        command=f"python benchmarks/bench_known_bugs.py --budget {args.budget:g}")
    args.out.write_text(json.dumps({
        **head, "budget_s": args.budget, "seed": args.seed, "rules_known": len(RULES),
        "entries": entries,
    }, indent=1) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
