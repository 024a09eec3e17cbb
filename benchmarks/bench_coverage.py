"""Does coverage guidance reach more of an agent's ACP layer? Each agent fuzzed with
``--coverage`` for ``--seconds``, guided (``target()`` on new agent lines, new transitions and
rules, distinct transitions) and unguided, for each seed; the lines of its ACP layer reached
``--marks`` seconds into the run (read off the run's own curve: one run per seed and mode).

Run: ``python benchmarks/bench_coverage.py [--seconds 300] [--marks 60 300] [--seeds 1 2 3]
[--lock PATH] [--merge] [AGENT ...]`` (install the agents first: ``make agents-all``). Writes
``benchmarks/results/coverage.json``; with ``--merge`` the agents measured replace their own
rows in that file and the others' are kept (one agent at a time on a shared machine), the
summary recomputed over every agent the file then holds. Failures found are neither minimized
nor replayed (the time is generation's), so both modes spend the same budget on reaching code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.agentcov.scope import module_regions, read_source
from acp_model.fuzzing.backend import backend, profile_config
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.profiles import get, load
from benchmarks.results import RESULTS, commit, figure, locked, record

AGENTS = ("claude-agent-acp", "gemini-cli", "kimi-cli", "mistral-vibe")  # two Node, two Python
WANT = {"node": 2, "python": 2}  # the agents the target asks for, by runtime
TITLE = "Coverage guidance on real agents (their ACP layer)"
COLUMNS_AFTER_MARKS = ["layer lines", "functions reached", "examples", "run (s)",
                       "how it ended"]
GUIDANCE = "coverage guidance:"  # the run's note on its corpus (fuzzing/run.py)
SATURATED = 0.01  # a mean curve that grows by less than this share over its last 40%: flat


def fuzz(name: str, seconds: float, seed: int, guided: bool, lock: str | None
         ) -> dict[str, Any]:
    """One run: its curve of agent lines over time, examples, rounds and how it ended."""
    profile = get(name)
    protocol = 1 if 1 in profile.protocols else profile.protocols[0]
    cfg = profile_config(FuzzConfig(["true"], seed=seed, time_budget=seconds, spec="auto",
                                    protocol=protocol, max_examples=100_000, replay_runs=1,
                                    minimize_budget=1.0, coverage=True, guided=guided,
                                    reproduce_only=frozenset()), profile, protocol)
    with locked(lock), backend(cfg, profile) as running:
        result = run_fuzz(running)
    cov = result.agent_coverage
    assert cov is not None
    lines, functions = cov.totals()
    files = {f.path: (f.reached, f.lines) for f in cov.files if f.counted}
    return {"samples": cov.samples, "total": lines["total"], "reached": lines["reached"],
            "functions": (functions["reached"], functions["total"]), "files": files,
            "examples": result.recorder.examples, "seconds": round(result.seconds, 1),
            "notes": [n for n in result.notes
                      if "round" in n or "budget" in n or n.startswith(GUIDANCE)],
            "failures": sorted(result.recorder.found), "runtimes": cov.runtimes}


def at(samples: list[dict[str, Any]], mark: float) -> int:
    """Lines reached ``mark`` seconds into the run (the last sample before it)."""
    return max((s["lines"] for s in samples if s["seconds"] <= mark), default=0)


def _short(path: str, root: str) -> str:
    return str(Path(path).relative_to(root)) if path.startswith(root + "/") else path


def _by_file(counts: dict[str, int], root: str, top: int = 5) -> str:
    left = sorted(((n, p) for p, n in counts.items() if n), reverse=True)[:top]
    return ", ".join(f"{_short(p, root)} {n}" for n, p in left) or "none"


def by_module(lines: dict[str, set[int]], root: str) -> dict[str, int]:
    """Lines counted per bundled module where a file is a bundle (its bundler markers), else
    per file: a bundle's count alone says nothing a maintainer can look up."""
    out: dict[str, int] = {}
    for path, ls in lines.items():
        regions = list(module_regions(read_source(path) or ""))
        for n in ls:
            module = next((name for name, first, last in regions if first <= n <= last), None)
            key = path if module is None else f"{_short(path, root)} ({module})"
            out[key] = out.get(key, 0) + 1
    return out


def ranges(lines: set[int]) -> list[tuple[int, int]]:
    """``{3, 4, 5, 9}`` as ``[(3, 5), (9, 9)]``."""
    out: list[tuple[int, int]] = []
    for n in sorted(lines):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def places(missed: dict[str, set[int]], root: str, top: int = 6) -> str:
    """The largest runs of ``missed`` lines, each as file:lines, the bundled module holding
    it (a bundle's marker) and its first line of source: what a maintainer looks up."""
    spans = sorted(((b - a + 1, p, a, b) for p, ls in missed.items() for a, b in ranges(ls)),
                   key=lambda x: (-x[0], x[1], x[2]))[:top]
    out = []
    for _, path, a, b in spans:
        text = read_source(path) or ""
        module = next((name for name, first, last in module_regions(text)
                       if first <= a <= last), None)
        src = text.splitlines()[a - 1].strip() if a <= text.count("\n") + 1 else ""
        src = src if len(src) <= 60 else src[:57] + "..."
        out.append(f"{_short(path, root)}:{a}" + (f"-{b}" if b > a else "")
                   + (f" ({module})" if module else "") + (f" `{src}`" if src else ""))
    return "; ".join(out)


def continued(run: dict[str, Any]) -> int:
    """How many of a run's examples continued its corpus (0: unguided, or none kept)."""
    note = next((n for n in run["notes"] if n.startswith(GUIDANCE)), "")
    found = re.search(r"(\d+) examples continued", note)
    return int(found.group(1)) if found else 0


def examples(runs: dict[bool, list[dict[str, Any]]]) -> str:
    """Examples per run in each mode, and the guided runs' share continuing the corpus: a
    guided run that ran fewer examples lost on breadth before guidance could help."""
    g = statistics.mean(r["examples"] for r in runs[True])
    u = statistics.mean(r["examples"] for r in runs[False])
    c = statistics.mean(continued(r) for r in runs[True])
    return (f"examples per run (mean): guided {g:.0f} ({c:.0f} of them continuing the corpus) "
            f"vs unguided {u:.0f}")


def why_not(runs: dict[bool, list[dict[str, Any]]], marks: list[float], seconds: float,
            root: str) -> str:
    """The profile of a guided run that did not beat unguided: the mean curves, whether both
    flatten (the layer's reachable part saturated), the lines some unguided run reached and
    no guided one did, and where the lines no run reached are."""
    def curve(rs: list[dict[str, Any]], t: float) -> float:
        return statistics.mean(at(r["samples"], t) for r in rs)

    last = marks[-1]
    points = [t for t in (5, 15, 30, 60, 120, 300, 600) if t <= seconds]
    flat = []
    for guided in (True, False):
        end, before = curve(runs[guided], seconds), curve(runs[guided], 0.6 * seconds)
        flat.append(end == 0 or (end - before) / end < SATURATED)
    hit: dict[bool, dict[str, set[int]]] = {True: {}, False: {}}
    lines: dict[str, set[int]] = {}
    for guided, rs in runs.items():
        for run in rs:
            for path, (reached, all_) in run["files"].items():
                hit[guided].setdefault(path, set()).update(reached)
                lines[path] = set(all_)
    missed = {p: r - hit[True].get(p, set()) for p, r in hit[False].items()}
    only_unguided = {p: len(r) for p, r in missed.items()}
    never = {p: all_ - hit[True].get(p, set()) - hit[False].get(p, set())
             for p, all_ in lines.items()}
    saturation = ("both mean curves are flat over the last 40% of the run (growth < "
                  f"{SATURATED:.0%}): each mode has reached what it reaches at this budget"
                  if all(flat) else
                  "still growing at the end: " + ", ".join(
                      mode for mode, f in zip(("guided", "unguided"), flat, strict=True)
                      if not f))
    return (f"guided {curve(runs[True], last):.0f} vs unguided {curve(runs[False], last):.0f} "
            f"lines at {last:g} s; mean curve (s: guided/unguided) "
            + ", ".join(f"{t}: {curve(runs[True], t):.0f}/{curve(runs[False], t):.0f}"
                        for t in points)
            + f"; {examples(runs)}; {saturation}; lines some unguided run reached and no "
            f"guided run did: {sum(only_unguided.values())} ({_by_file(only_unguided, root)}"
            + (f"; where: {places(missed, root)}" if any(missed.values()) else "")
            + f"); lines no run reached, by module or file: "
            f"{_by_file(by_module(never, root), root)}; the largest spans no run reached: "
            f"{places(never, root, top=4)}")


def measure(name: str, seconds: float, marks: list[float], seeds: list[int],
            lock: str | None) -> dict[str, Any]:
    """One agent, every seed guided and unguided: its table rows, mean lines at each mark
    per mode, and (where guided does not win at the last mark) the profile of why not."""
    measured_at = commit()  # the code that runs (a tree edited meanwhile is not it)
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    rows: list[list[Any]] = []
    for seed in seeds:
        for guided in (True, False):
            run = fuzz(name, seconds, seed, guided, lock)
            runs[guided].append(run)
            row = [name, "+".join(run["runtimes"]), seed, "guided" if guided else "unguided",
                   *(at(run["samples"], m) for m in marks), run["total"],
                   "{}/{}".format(*run["functions"]), run["examples"], run["seconds"],
                   "; ".join(run["notes"])]
            rows.append(row)
            print(" | ".join(str(c) for c in row), flush=True)
    means = {mode: {f"{m:g}": round(statistics.mean(at(r["samples"], m) for r in runs[g]), 1)
                    for m in marks}
             for mode, g in (("guided", True), ("unguided", False))}
    last = f"{marks[-1]:g}"
    why = None
    if means["guided"][last] <= means["unguided"][last]:
        why = why_not(runs, marks, seconds, str(get(name).install_dir()))
    runtime = "+".join(sorted({rt for r in runs[True] + runs[False] for rt in r["runtimes"]}))
    return {"runtime": runtime, "parameters": {"seconds": seconds, "marks": marks,
                                               "seeds": seeds},
            "means": means, "why": why, "rows": rows, "commit": measured_at,
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def previous(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The agents a results file holds (``detail.agents``; a file written before the detail
    was kept: rebuilt from its table and parameters, without a profile of why)."""
    if "agents" in doc.get("detail", {}):
        return dict(doc["detail"]["agents"])
    params = doc.get("parameters", {})
    marks = params.get("marks", [])
    columns = doc.get("table", {}).get("columns", [])
    agents: dict[str, dict[str, Any]] = {}
    for row in doc.get("table", {}).get("rows", []):
        cells = dict(zip(columns, row, strict=False))
        agent = agents.setdefault(row[0], {"runtime": cells.get("runtime", ""),
                                           "parameters": params, "why": None, "rows": [],
                                           "commit": doc.get("commit", ""),
                                           "date": doc.get("date", "")})
        agent["rows"].append(row)
    for agent in agents.values():
        agent["means"] = {mode: {f"{m:g}": round(statistics.mean(
            r[4 + i] for r in agent["rows"] if r[3] == mode), 1)
            for i, m in enumerate(marks)} for mode in ("guided", "unguided")}
        if "functions reached" not in columns:  # the first table had no functions column
            for r in agent["rows"]:
                r.insert(columns.index("layer lines") + 1, "")
    return agents


def merged(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]
           ) -> dict[str, dict[str, Any]]:
    """The file's agents with the new measurements replacing their own (others kept), in
    the order first measured."""
    return {**old, **new}


def summary(agents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The figures, table, notes and parameters for every agent held, recomputed: the target
    (guided ahead at the last mark on at least three of four agents, two Node and two Python)
    is judged only once the file holds that many of each runtime."""
    marks_of = {json.dumps(a["parameters"]["marks"]) for a in agents.values()}
    if len(marks_of) > 1:
        raise ValueError("the agents were measured at different marks "
                         f"({', '.join(sorted(marks_of))}); measure them again at the same "
                         "ones (--marks) or start a new file (no --merge)")
    marks = next(iter(agents.values()))["parameters"]["marks"]
    last = f"{marks[-1]:g}"
    wins = [n for n, a in agents.items() if a["means"]["guided"][last]
            > a["means"]["unguided"][last]]
    have = {rt: sum(a["runtime"] == rt for a in agents.values()) for rt in WANT}
    complete = all(have[rt] >= n for rt, n in WANT.items())
    want = 3
    figures = [figure(f"agents where guided reaches more lines than unguided at {last} s "
                      "(mean over seeds)", f"{len(wins)}/{len(agents)}",
                      target=f">= {want} of 4 (two Node, two Python)",
                      met=len(wins) >= want if complete else None)]
    for name, agent in agents.items():
        for m in marks:
            g, u = agent["means"]["guided"][f"{m:g}"], agent["means"]["unguided"][f"{m:g}"]
            figures.append(figure(f"{name} ({agent['runtime']}): lines at {m:g} s, guided / "
                                  "unguided (mean)", f"{g:.1f} / {u:.1f}"))
        n = 4 + len(marks) + COLUMNS_AFTER_MARKS.index("examples")
        per = {mode: statistics.mean(r[n] for r in agent["rows"] if r[3] == mode)
               for mode in ("guided", "unguided")}
        figures.append(figure(f"{name}: examples per run, guided / unguided (mean)",
                              f"{per['guided']:.0f} / {per['unguided']:.0f}"))
    params = [a["parameters"] for a in agents.values()]
    same = all(p == params[0] for p in params)
    parameters = params[0] if same else {
        "per agent": {n: a["parameters"] for n, a in agents.items()}}
    notes = ("Lines of each agent's ACP layer (its profile's [coverage] layer) reached, read "
             "off one run's curve at each mark. Each run measures its agent with --coverage; "
             "both modes run rounds of 20 examples until the time budget is spent, the same "
             "seed drawing the same first round in both; guided runs keep the examples that "
             "reached new agent lines, model transitions or rules and, after each round, "
             "continue up to 10 of them in a corpus round (a run of fewer than 20 examples "
             "has none). Agents measured: "
             + ", ".join(f"{n} ({a['runtime']}, {a['date'][:10]} at {a['commit'] or '?'})"
                         for n, a in agents.items()) + ".")
    if not same:
        notes += (" Not every agent was measured with the same parameters: "
                  + "; ".join(f"{n}: {a['parameters']['seconds']:g} s, seeds "
                              f"{' '.join(map(str, a['parameters']['seeds']))}"
                              for n, a in agents.items()) + ".")
    if not complete:
        notes += (f" Partial: {have['node']} Node and {have['python']} Python agent(s) of the "
                  "two of each the target asks for; the target is not judged yet.")
    why = [f"- **{n}**: {a['why']}" for n, a in agents.items() if a.get("why")]
    if why:
        notes += "\n\nWhere guidance did not win, the profile of why:\n\n" + "\n".join(why)
    rows = [row for a in agents.values() for row in a["rows"]]
    columns = ["agent", "runtime", "seed", "mode", *(f"lines at {m:g} s" for m in marks),
               *COLUMNS_AFTER_MARKS]
    return {"figures": figures, "table": {"columns": columns, "rows": rows},
            "parameters": parameters, "notes": notes}


def before_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A results file's measurements kept as the "before" of a new one: its commit, its
    parameters and each agent's mean lines per mode (a file that already keeps a "before"
    passes that one on: it is what a merge adds to)."""
    if "before" in doc.get("detail", {}):
        return dict(doc["detail"]["before"])
    agents = previous(doc)
    return {"commit": doc.get("commit", ""), "date": doc.get("date", ""),
            "parameters": doc.get("parameters", {}),
            "means": {n: a["means"] for n, a in agents.items()},
            "commits": {n: a.get("commit", "") for n, a in agents.items()}}


def before_notes(before: dict[str, Any], marks: list[float] | None = None) -> str:
    """The "before" figures, as the notes state them, and the marks it had that the new
    measurement (at ``marks``) has not: those are not measured again."""
    had = before["parameters"].get("marks") or []
    per = "; ".join(
        f"{n}: " + ", ".join(f"{m:g} s {means['guided'][f'{m:g}']:.1f} / "
                             f"{means['unguided'][f'{m:g}']:.1f}" for m in had)
        for n, means in before["means"].items())
    return ("\n\nBefore (guided / unguided mean lines, measured at "
            + ", ".join(sorted({c for c in before.get("commits", {}).values() if c}))
            + f" with {before['parameters'].get('seconds', 0):g} s runs, seeds "
            + " ".join(map(str, before["parameters"].get("seeds", [])))
            + ", when guidance was target() on the lines each example reached first): "
            + per + "."
            + ("" if marks is None or not (gone := [m for m in had if m not in marks]) else
               " Not measured again at " + ", ".join(f"{m:g} s" for m in gone)
               + ": for these marks the figures above are the only ones."))


def write(agents: dict[str, dict[str, Any]], before: dict[str, Any] | None = None) -> None:
    """The results file for ``agents`` (its command: how to measure all of them again);
    ``before``: an earlier measurement the notes compare with."""
    s = summary(agents)
    if before:
        s["notes"] += before_notes(before, next(iter(agents.values()))["parameters"]["marks"])
    p = s["parameters"] if "per agent" not in s["parameters"] else \
        next(iter(agents.values()))["parameters"]
    command = shlex.join(["python", "benchmarks/bench_coverage.py", "--seconds",
                          f"{p['seconds']:g}", "--marks", *(f"{m:g}" for m in p["marks"]),
                          "--seeds", *map(str, p["seeds"]), *agents])
    record("coverage", TITLE, s["figures"], table=s["table"], parameters=s["parameters"],
           notes=s["notes"], command=command,
           detail={"agents": agents, **({"before": before} if before else {})})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agents", nargs="*", help=f"default: {' '.join(AGENTS)}")
    parser.add_argument("--agent", action="append", default=[],
                        help="an agent to measure (repeatable; same as naming it)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other agents already in the results file; the agents "
                             "measured replace their own rows")
    parser.add_argument("--before", action="store_true",
                        help="keep the results file's measurements as the 'before' of this "
                             "one (their means stay in the notes; with --merge, the 'before' "
                             "the file already keeps)")
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--marks", type=float, nargs="+", default=[60.0, 300.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--lock", help="hold this flock for each run (a shared machine)")
    args = parser.parse_args()
    names = [*args.agents, *args.agent] or list(AGENTS)
    marks = sorted(m for m in args.marks if m <= args.seconds)
    if not marks:
        parser.error(f"no mark within --seconds {args.seconds:g}")
    known = load()
    if unknown := [n for n in names if n not in known]:
        parser.error(f"unknown agent(s): {', '.join(unknown)} (known: {', '.join(known)})")
    agents: dict[str, dict[str, Any]] = {}
    path = RESULTS / "coverage.json"
    doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    before = before_of(doc) if args.before and doc else None
    if args.merge and doc:
        agents = previous(doc)
        held = {json.dumps(a["parameters"]["marks"]) for a in agents.values()}
        if held and held != {json.dumps(marks)}:
            parser.error(f"{path.name} holds agents measured at marks {', '.join(held)}; "
                         "merge at the same --marks, or measure without --merge")
    for name in names:
        measured = measure(name, args.seconds, marks, args.seeds, args.lock)
        agents = merged(agents, {name: measured})
        write(agents, before)  # each agent's rows as soon as it is done


if __name__ == "__main__":
    main()
