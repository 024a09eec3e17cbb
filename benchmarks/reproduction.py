"""The counterexamples of fuzz runs on real agents, as issue 49's Done-when measures them.

Run: ``python benchmarks/reproduction.py NAME DIR_OR_REPORT... [--title TEXT]``

Reads every fuzz report given (``report.json`` files, or folders searched for them: a
``acp-model matrix --out`` folder holds one per row) and writes
``benchmarks/results/<NAME>.json``: per failure its agent, rule, client actions, whether
minimizing reached its fixpoint (or the stage it stopped at), its reproduction held to the
recorded schedule and free-running, and whether it stands on a fresh process; then the
figures the issue asks for: at most 10 client actions each (median at most 4), minimized to
the fixpoint, and at least 90 % reproducing at least 5 of 6 times held (the free rates
beside them). Failures only a shared process showed (reported as warnings) are counted apart.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.report.text import measured, proven_minimal
from acp_model.spec.levels import Standing, reported_standing
from benchmarks.results import figure, record

LIMIT = 10


def reports(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(label, report) of every fuzz report under ``paths``."""
    out = []
    for given in map(Path, paths):
        files = sorted(given.rglob("*.json")) if given.is_dir() else [given]
        for path in files:
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("command") == "fuzz" \
                    and "counterexamples" in doc:
                label = path.parent.name if path.name == "report.json" else path.stem
                out.append((label, _judged(doc, path)))
    return out


def _judged(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """``doc`` with only the counterexamples its matrix (``matrix.json`` beside the row's
    folder, written by the run or by ``--rejudge``) still calls failures: the current
    oracle's word, not the run's."""
    matrix = path.parent.parent / "matrix.json"
    try:
        rows = json.loads(matrix.read_text(encoding="utf-8"))["rows"]
    except (OSError, ValueError, KeyError, TypeError):
        return doc
    row = next((r for r in rows if r.get("report") == f"{path.parent.name}/{path.name}"),
               None)
    if row is None:
        return doc
    failing = {f["rule"] for cell in (row.get("cells") or {}).values()
               for f in cell.get("failures") or [] if f.get("level") == "fail"}
    # a re-judged report lists only today's failures; the run's shared-process sightings are
    # in the record it keeps of the run (``recorded``, matrix/rejudge.py)
    listed = {ce["rule"] for ce in doc["counterexamples"]}
    shared = [ce for ce in (doc.get("recorded") or {}).get("counterexamples") or []
              if reported_standing(ce) == Standing.SHARED_ONLY and ce["rule"] not in listed]
    return {**doc, "counterexamples": [ce for ce in [*doc["counterexamples"], *shared]
                                       if reported_standing(ce) == Standing.SHARED_ONLY
                                       or ce["rule"] in failing]}


def standing_apart(table: list[dict[str, Any]]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(failures, shared-process sightings) of ``table``'s rows: a counterexample only a
    shared agent process showed, never reproduced fresh, is reported as a warning."""
    shared = [r for r in table if r.get("standing") == Standing.SHARED_ONLY]
    return [r for r in table if r.get("standing") != Standing.SHARED_ONLY], shared


def rows(found: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for label, doc in found:
        info = doc.get("agent_info") or {}
        for ce in doc["counterexamples"]:
            m = ce.get("minimize") or {}
            out.append({
                "run": label, "agent": f"{info.get('name', '?')} {info.get('version', '')}",
                "revision": (doc.get("spec") or {}).get("revision"), "rule": ce["rule"],
                "actions": ce.get("steps", len(ce.get("actions") or [])),
                "fixpoint": bool(m.get("fixpoint")), "stage": m.get("stage"),
                # the fixpoint's own program, reproducing at least half of its replays
                "minimal": bool(proven_minimal(m, ce.get("steps", len(ce.get("actions") or [])),
                                               *measured(ce))),
                "minimize_s": m.get("seconds"), "trials": m.get("trials"),
                "trials_allowed": m.get("trials_allowed"), "cut_by": m.get("cut_by"),
                "held": ce.get("reproduced", 0), "held_runs": ce.get("replays", 0),
                "free": ce.get("free_reproduced", 0), "free_runs": ce.get("free_replays", 0),
                # replays the agent failed on its own (no evidence): beside the rates, which
                # are over conclusive runs (fuzzing/inconclusive.py; 0 in older reports)
                "unsure": ce.get("inconclusive") or 0,
                "free_unsure": ce.get("free_inconclusive") or 0,
                "standing": reported_standing(ce), "verified": ce.get("verified")})
    return out


def before_figures(figures: list[dict[str, Any]], path: str | None) -> None:
    """Each figure gains its value in an earlier results file at ``path`` (``"before"``)."""
    if path is None:
        return
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        before = {f["name"]: f["value"] for f in doc["figures"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--before {path}: not a results file ({exc})") from None
    for f in figures:
        if f["name"] in before:
            f["before"] = before[f["name"]]


def rate(hits: int, runs: int, unsure: int = 0) -> str:
    """``3/6`` (``+2 inconclusive``: replays the agent failed on its own, beside), or "not
    replayed" when no conclusive replay ran (never "0/0")."""
    return (f"{hits}/{runs}" if runs else "not replayed") \
        + (f" (+{unsure} inconclusive)" if unsure else "")



def reproduced_5_of_6(hits: int, runs: int) -> bool:
    """At least 5 of 6 conclusive replays reproduced: the rate, and 5 hits at least (one
    conclusive replay of twelve, the rest inconclusive, is 1/1 but shows no such rate:
    gemini-cli v1's V1-LOAD-01 in s13)."""
    return hits >= 5 and 6 * hits >= 5 * runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", help="results/<NAME>.json")
    p.add_argument("paths", nargs="+")
    p.add_argument("--title", default="Counterexamples on real agents")
    p.add_argument("--before", metavar="OLD.json",
                   help="an earlier results file of this benchmark: each figure gains the "
                        "value it had there (\"before\")")
    args = p.parse_args(argv)
    found = reports(args.paths)
    table = rows(found)
    failures, shared = standing_apart(table)
    for r in table:
        print(f"  {r['run']:28} {r['rule']:16} {r['actions']:4} actions, held "
              f"{rate(r['held'], r['held_runs'], r['unsure'])}, free "
              f"{rate(r['free'], r['free_runs'], r['free_unsure'])}, "
              + ("fixpoint" if r["fixpoint"] else f"cut at {r['stage']}")
              + (" (shared-only: a warning)" if r["standing"] == Standing.SHARED_ONLY else ""))
    sizes = sorted(r["actions"] for r in failures)
    steady = [r for r in failures if reproduced_5_of_6(r["held"], r["held_runs"])]
    held = sum(r["held"] for r in failures), sum(r["held_runs"] for r in failures)
    free = sum(r["free"] for r in failures), sum(r["free_runs"] for r in failures)
    figures = [figure("runs read", len(found)), figure("failures", len(failures)),
               figure("shared-process sightings reported as warnings", len(shared))]
    if sizes:
        figures += [
            figure("client actions per failure, median", statistics.median(sizes),
                   target="at most 4", met=statistics.median(sizes) <= 4),
            figure("client actions per failure, max", sizes[-1], target=f"at most {LIMIT}",
                   met=sizes[-1] <= LIMIT),
            figure("minimized to the fixpoint",
                   f"{sum(r['fixpoint'] for r in failures)}/{len(failures)}",
                   target="all", met=all(r["fixpoint"] for r in failures)),
            figure("proven minimal: the fixpoint's program, reproducing at least half of its "
                   "replays", f"{sum(r['minimal'] for r in failures)}/{len(failures)}"),
            figure("reproduced at least 5 of 6 times held",
                   f"{len(steady)}/{len(failures)}", target="at least 90 %",
                   met=len(steady) >= 0.9 * len(failures)),
            figure("replays reproducing, held to the recorded schedule",
                   f"{held[0]}/{held[1]} ({100 * held[0] / max(held[1], 1):.0f}%)"),
            figure("replays reproducing, free-running",
                   f"{free[0]}/{free[1]} ({100 * free[0] / max(free[1], 1):.0f}%)"),
            figure("inconclusive replays beside (held, free): the agent failed on its own",
                   f"{sum(r['unsure'] for r in failures)}, "
                   f"{sum(r['free_unsure'] for r in failures)}")]
    before_figures(figures, args.before)
    for f in figures:
        print(f"{f['name']}: {f['value']}"
              + (f" (before: {f['before']})" if "before" in f else "")
              + (f" (target {f['target']}: "
                                               f"{'met' if f['met'] else 'NOT met'})"
                                               if f.get("target") else ""))
    record(args.name, args.title, figures, table={
        "columns": ["run", "agent", "rule", "actions", "minimizing", "held", "free",
                    "standing"],
        "rows": [[r["run"], r["agent"], r["rule"], r["actions"],
                  ("fixpoint" if r["minimal"] else "fixpoint, not proven: reproduces rarely")
                  if r["fixpoint"] else f"cut at {r['stage']}",
                  rate(r["held"], r["held_runs"], r["unsure"]),
                  rate(r["free"], r["free_runs"], r["free_unsure"]),
                  r["standing"]] for r in table]},
        parameters={"paths": args.paths, "before": args.before})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
