"""Digests of verdicts, so a refactor can prove that it changed no verdict (issue 40).

    git worktree add /tmp/old OLD && make -C /tmp/old venv
    python benchmarks/verdicts.py run --acp-model /tmp/old/.venv/bin/acp-model --save old.json \\
        --acp-model .venv/bin/acp-model --save new.json --lock /tmp/acpm-heavy.lock
    python benchmarks/verdicts.py compare old.json new.json      # exit 1 on a difference
    python benchmarks/verdicts.py run ... --part zoo:no_running,no_running \
        --part agent:codex-acp@v1                                # reruns, appended
    python benchmarks/verdicts.py blame old.json new.json --save blame.json  # git bisect
    python benchmarks/verdicts.py compare old.json new.json --record --blame blame.json \
        --notes analysis.txt                                     # results/verdicts.json

A digest is what one checkout's ``acp-model`` executable says, through its machine-readable
output only (``check --report``, ``fuzz --report``), about three things:

* ``traces``: every recorded trace of this repository (``tests/data``, ``examples``,
  ``docs``, ``tests/oracle``) and one generated conforming trace, each checked under every
  revision, under ``auto``, with ``--open-at-end``, with the statemachine engine and under a
  strict and a lenient bundle of readings: exit code, decided revision, verdict and the
  sorted ``(rule, level, index)`` of every violation. Deterministic: any difference is real.
* ``zoo``: the reference agent and every mutant of the checkout's zoo
  (``acp_model.agents.mutants``), one ``fuzz`` run each in ``fast`` timing with a fixed seed
  and a small budget: the verdict and the rules failed and warned.
* ``agents``: the profiled real agents the test suite pins (``tests/external``), per
  protocol, with a fixed seed and a small budget. Fuzz runs race the agent: ``compare``
  calls a fuzz difference persistent only when every run of one side shows what no run of the
  other does (rerun a differing item on both sides with ``--part``; runs accumulate).

Only flags both the old and the new CLI accept are used; a flag one side lacks (``check
--one-sided`` at the old commit) gives an exit-2 entry that ``compare`` lists as not
comparable. With several checkouts each part runs on all of them at once (the same load for
both sides' racy runs). ``--lock PATH`` holds ``flock PATH`` for one part at a time (ten
traces, fifteen zoo agents or three real-agent runs: about three minutes), never the whole
run. A part's checks run in one process of the side's Python (a process per check only for a
checkout without ``acp_model.cli.main``): the whole trace corpus takes seconds, not an hour.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from benchmarks.results import ROOT, locked, stamp

CHUNK = {"traces": 10, "zoo": 15, "agents": 3}  # a part: about three minutes of work
CORPORA = ("tests/data", "tests/oracle", "examples", "docs")
GENERATED = "generated/gen-trace-2000.jsonl"
STRICT = ("A-01=forbid", "A-03=diagram", "A-04=idle-cancelled", "A-05=forbid", "A-07=forbid",
          "A-10=cancel", "A-11=sent", "A-14=outcome-only", "A-28=none", "A-29=no")
LENIENT = ("A-05=allow", "A-09=lenient", "A-10=keep", "A-11=never", "A-13=allow",
           "A-16=allow", "STRENGTH=schema")
CHECKS: dict[str, tuple[str, ...]] = {
    "auto": ("--spec", "auto"),
    "seed": ("--spec", "seed"),
    "sdk-2.4.0": ("--spec", "sdk-2.4.0"),
    "v1": ("--spec", "v1"),
    "auto+open-at-end": ("--spec", "auto", "--open-at-end"),
    "auto+statemachine": ("--spec", "auto", "--engine", "statemachine"),
    "seed+strict": ("--spec", "seed", *(f"--reading={r}" for r in STRICT)),
    "seed+lenient": ("--spec", "seed", *(f"--reading={r}" for r in LENIENT)),
}
ONE_SIDED = {"auto+one-sided-agent": ("--spec", "auto", "--one-sided", "agent")}
# the zoo: one fuzz run per agent, fixed seed, small budget (a run ends early once a round of
# examples finds nothing new)
ZOO_FUZZ = ("--seed", "1", "--max-examples", "40", "--time-budget", "8", "--deadline", "1.5",
            "--replay-runs", "1", "--minimize-budget", "2")
AGENT_FUZZ = ("--seed", "3", "--max-examples", "100000", "--time-budget", "30",
              "--replay-runs", "1", "--minimize-budget", "2", "--spec", "auto")
# the real agents tests/external/test_real_agents.py fuzzes at both commits, per protocol
REAL_AGENTS = ("claude-agent-acp@v2", "claude-agent-acp@v1", "codex-acp@v2", "codex-acp@v1",
               "qwen-code@v1")


@dataclass(frozen=True)
class Side:
    """One checkout: its ``acp-model`` executable and the Python next to it."""

    acp_model: Path

    @property
    def python(self) -> Path:
        return self.acp_model.parent / "python"

    @property
    def checkout(self) -> Path:
        return self.acp_model.resolve().parents[2]

    def zoo(self) -> dict[str, str]:
        """Agent name to the revision its bug is judged in (the checkout's own zoo)."""
        code = ("import json; from acp_model.agents.mutants import MUTANTS; "
                "print(json.dumps({m.name: m.revisions[0] for m in MUTANTS}))")
        out = subprocess.run([str(self.python), "-c", code], capture_output=True, text=True,
                             check=True, cwd=self.checkout)
        return {"reference": "seed", **json.loads(out.stdout)}


# --- the items ----------------------------------------------------------------------------


def traces(root: Path = ROOT) -> list[Path]:
    """Every JSONL trace of the corpora, relative to ``root``."""
    found = {p for corpus in CORPORA for p in (root / corpus).rglob("*.jsonl")}
    return sorted(p.relative_to(root) for p in found)


def generated(cache: Path) -> Path:
    """A deterministic conforming trace of this repository's generator (the same file is
    checked by both sides)."""
    path = cache / GENERATED
    if not path.is_file():
        from benchmarks.gen_trace import generate

        path.parent.mkdir(parents=True, exist_ok=True)
        generate(messages=2000, sessions=3, seed=11).log.write(path)
    return path


def digest_report(report: dict[str, Any]) -> dict[str, Any]:
    """A check report's verdict: the decided revision and every violation, sorted."""
    return {"verdict": report["verdict"], "revision": report["spec"]["revision"],
            "violations": sorted([v["rule"], str(v["level"]),
                                  -1 if v.get("index") is None else int(v["index"])]
                                 for v in report["violations"])}


def digest_fuzz(report: dict[str, Any]) -> dict[str, Any]:
    """A fuzz report's verdict: the rules failed and warned (racy: compared as sets)."""
    levels: dict[str, set[str]] = {"fail": set(), "warn": set()}
    for v in report["violations"]:
        levels["fail" if v["level"] == "fail" else "warn"].add(v["rule"])
    return {"verdict": report["verdict"], "revision": report["spec"]["revision"],
            "failures": sorted(levels["fail"]), "warnings": sorted(levels["warn"]),
            "unusable": report.get("unusable"), "problem": report.get("problem"),
            # the effort behind the verdict (a run may end before its budget)
            "examples": report["summary"].get("examples"),
            "actions": report["summary"].get("actions")}


def _run(argv: list[str], report: Path, cwd: Path, timeout: float) -> tuple[int, str]:
    report.unlink(missing_ok=True)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f} s"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return done.returncode, lines[-1] if lines else ""


def check(side: Side, trace: Path, flags: tuple[str, ...], tmp: Path) -> dict[str, Any]:
    """``acp-model check`` of one trace under one set of flags."""
    out = tmp / "check.json"
    argv = [str(side.acp_model), "check", str(trace), "--report", str(out), *flags]
    code, err = _run(argv, out, side.checkout, timeout=600)
    return _check_entry(code, err, out)


def _check_entry(code: int, err: str, out: Path) -> dict[str, Any]:
    if not out.is_file():
        return {"exit": code, "error": err}
    return {"exit": code, **digest_report(json.loads(out.read_text(encoding="utf-8")))}


# One process of the side's Python runs a part's checks through its ``acp_model.cli.main``
# (one check per line of JSON it is given; one line of JSON back per check): a process per
# check spent its time importing, 7-16 minutes a part on a loaded machine against seconds.
_CHECKS_DRIVER = textwrap.dedent("""\
    import contextlib, io, json, sys
    from acp_model.cli.main import main
    print("ready", flush=True)
    for line in sys.stdin:
        key, trace, flags, out = json.loads(line)
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                code = main(["check", trace, "--report", out, *flags])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except Exception as exc:  # as a process of its own ends: exit 1, the error its last line
            code = 1
            buf.write(f"{type(exc).__name__}: {exc}\\n")
        lines = [x for x in buf.getvalue().splitlines() if x.strip()]
        print(json.dumps([key, code, lines[-1] if lines else ""]), flush=True)
    """)


def checks(side: Side, items: list[tuple[str, Path, tuple[str, ...]]], tmp: Path
           ) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``acp-model check`` of each (key, trace, flags) in one process of the side's Python;
    a checkout without ``acp_model.cli.main`` (an old commit) gets a process per check."""
    with subprocess.Popen([str(side.python), "-c", _CHECKS_DRIVER], cwd=side.checkout,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            proc.kill()
            for key, trace, flags in items:
                yield "traces", key, check(side, trace, flags, tmp)
            return
        for n, (key, trace, flags) in enumerate(items):
            out = tmp / f"check-{n}.json"
            out.unlink(missing_ok=True)
            proc.stdin.write(json.dumps([key, str(trace), list(flags), str(out)]) + "\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
            if not answer:  # the driver died on this check: say so, go on in a fresh one
                yield "traces", key, {"exit": -1, "error": "the checking process died"}
                yield from checks(side, items[n + 1:], tmp)
                return
            _, code, err = json.loads(answer)
            yield "traces", key, _check_entry(code, err, out)
        proc.stdin.close()


def fuzz(side: Side, flags: list[str], tmp: Path, timeout: float) -> dict[str, Any]:
    """``acp-model fuzz`` once; its digest and wall time."""
    out = tmp / "fuzz.json"
    started = time.monotonic()
    code, err = _run([str(side.acp_model), "fuzz", "--report", str(out), *flags], out,
                     side.checkout, timeout)
    seconds = round(time.monotonic() - started, 1)
    if not out.is_file():
        return {"exit": code, "error": err, "seconds": seconds}
    return {"exit": code, **digest_fuzz(json.loads(out.read_text(encoding="utf-8"))),
            "seconds": seconds}


def zoo_flags(side: Side, name: str, revision: str) -> list[str]:
    agent = [str(side.python), "-m", "acp_model.agents.reference", "--timing", "fast",
             "--seed", "1"]
    if name != "reference":
        agent += ["--mutant", name]
    spec = "seed" if revision == "seed" else "auto"
    return [*ZOO_FUZZ, "--spec", spec, "--", *agent]


def agent_flags(item: str) -> list[str]:
    name, protocol = item.split("@")
    return ["--agent", name, "--protocol", protocol, *AGENT_FUZZ]


# --- parts: what one lock holds -------------------------------------------------------------


Entry = tuple[str, str, dict[str, Any]]  # (section, key, entry)
Job = Callable[[Path], Iterator[Entry]]  # tmp -> its entries


def _trace_jobs(side: Side, files: list[Path], cache: Path) -> list[tuple[str, Job, int]]:
    """One job for the part's checks (one process of the side's Python runs them all)."""
    items = []
    for rel in files:
        path = generated(cache) if rel.as_posix() == GENERATED else ROOT / rel
        configs = {**CHECKS, **(ONE_SIDED if "one_sided" in rel.parts else {})}
        items += [(f"{rel.as_posix()} [{label}]", path, flags) for label, flags in configs.items()]
    return [(f"{len(items)} checks", lambda tmp: checks(side, items, tmp), len(items))]


def _once(section: str, key: str, run: Callable[[Path], dict[str, Any]]) -> Job:
    """A job of one run (a fuzz run): its one entry."""
    return lambda tmp: iter(((section, key, run(tmp)),))


def parts(side: Side) -> list[str]:
    """The parts of a whole run, each short enough for one hold of the lock."""
    sizes = {"traces": len(traces()) + 1, "zoo": len(side.zoo()), "agents": len(REAL_AGENTS)}
    return [f"{kind}/{k}" for kind, n in sizes.items()
            for k in range((n + CHUNK[kind] - 1) // CHUNK[kind])]


def _chunk(items: list[Any], kind: str, arg: str) -> list[Any]:
    k, size = int(arg), CHUNK[kind]
    return items[k * size:(k + 1) * size]


def jobs(side: Side, part: str, cache: Path) -> list[tuple[str, Job, int]]:
    """The runs of a part (label, job, how many entries it gives): ``traces/K``, ``zoo/K``,
    ``agents/K`` (chunks), ``trace:PATH``, ``zoo:NAME,...`` or ``agent:NAME@vN,...`` (a name
    twice: two runs)."""
    cut = min((i for i in (part.find(":"), part.find("/")) if i >= 0), default=len(part))
    kind, arg = part[:cut], part[cut + 1:]
    if kind in ("traces", "trace"):
        files = [*traces(), Path(GENERATED)]
        chosen = _chunk(files, kind, arg) if kind == "traces" else [Path(arg)]
        return _trace_jobs(side, chosen, cache)
    if kind in ("zoo",):
        zoo = side.zoo()
        names = _chunk(sorted(zoo), kind, arg) if arg.isdigit() else arg.split(",")
        return [(f"zoo {n}", _once("zoo", n, lambda tmp, n=n: fuzz(
            side, zoo_flags(side, n, zoo[n]), tmp, timeout=180)), 1) for n in names]
    if kind in ("agent", "agents"):
        chosen = _chunk(list(REAL_AGENTS), kind, arg) if kind == "agents" else arg.split(",")
        return [(f"agent {a}", _once("agents", a, lambda tmp, a=a: fuzz(
            side, agent_flags(a), tmp, timeout=240)), 1) for a in chosen]
    raise SystemExit(f"error: unknown part {part!r} (traces/K, zoo/K, trace:PATH, zoo:NAME, "
                     "agent:NAME@vN)")


def load(path: Path) -> dict[str, Any]:
    if path.is_file():
        doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return doc
    return {"traces": {}, "zoo": {}, "agents": {}, "seconds": {}}


def save(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def run_part(sides: list[tuple[Side, dict[str, Any]]], part: str, console: Console,
             cache: Path) -> None:
    """Run a part on every side at once (one thread each: the sides see the same load), a
    progress bar per side; fuzz runs accumulate (reruns), checks replace."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as progress, \
            ThreadPoolExecutor(len(sides)) as pool:
        for done in [pool.submit(_side_part, side, doc, part, cache, progress)
                     for side, doc in sides]:
            done.result()


def _side_part(side: Side, doc: dict[str, Any], part: str, cache: Path,
               progress: Progress) -> None:
    """One side's runs of a part, added to ``doc["added"]`` (merged into the file by
    :func:`merge`)."""
    todo = jobs(side, part, cache)
    started = time.monotonic()
    name = side.checkout.name
    task = progress.add_task(part, total=sum(n for _, _, n in todo))
    with tempfile.TemporaryDirectory() as tmp:
        for label, job, _ in todo:
            progress.update(task, description=escape(f"{name} {part}: {label}"))
            for entry in job(Path(tmp)):
                doc["added"].append(entry)
                progress.advance(task)
    doc["added"].append(("seconds", part, round(time.monotonic() - started, 1)))


def merge(path: Path, added: list[tuple[str, str, Any]], head: dict[str, Any]) -> None:
    """Add a part's runs to the digest file as it is now (another process may have added
    its own since this one started): checks and the commit replace, fuzz runs and seconds
    accumulate (reruns)."""
    doc = load(path)
    doc.update(head)
    for section, key, entry in added:
        if section == "traces":
            doc[section][key] = entry
        elif section == "seconds":
            doc[section][key] = round(doc[section].get(key, 0) + entry, 1)
        else:
            doc[section].setdefault(key, []).append(entry)
    save(doc, path)


# --- comparing two digests ------------------------------------------------------------------


def _runs_differ(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Fuzz runs of one item on both sides: None when they agree, else what differs and
    whether it persists (every run of one side shows it, no run of the other does)."""
    def outcome(run: dict[str, Any]) -> tuple[Any, ...]:
        return (run.get("verdict"), tuple(run.get("failures", ())),
                tuple(run.get("warnings", ())), run.get("error"))

    if {outcome(r) for r in old} == {outcome(r) for r in new}:
        return None
    persistent: list[str] = []
    for field in ("failures", "warnings"):
        for a, b, tag in ((old, new, "old only"), (new, old, "new only")):
            always = set.intersection(*(set(r.get(field, ())) for r in a))
            ever = set().union(*(set(r.get(field, ())) for r in b))
            persistent += [f"{field[:-1]} {rule} ({tag})" for rule in sorted(always - ever)]
    status = "rerun both sides" if min(len(old), len(new)) < 2 else \
        "persistent" if persistent else "racy (not persistent)"
    return {"status": status, "persistent": persistent, "runs": [len(old), len(new)],
            "old": [outcome(r)[:3] for r in old], "new": [outcome(r)[:3] for r in new]}


# How two digests of one trace check differ, from most to least: the verdict itself (the exit
# code, pass/fail, the decided revision, or one side could not judge), the rules failed under
# the same verdict, the warnings alone, or the same findings at other messages. Each is a
# difference a refactor must not make; only the first is a verdict change.
VERDICT, FAILURES, WARNINGS, PLACES = ("verdict change", "failures change (same verdict)",
                                       "warnings change (same failures)",
                                       "places change (same findings)")
TRACE_CHANGES = (VERDICT, FAILURES, WARNINGS, PLACES)


def _findings(entry: dict[str, Any], failed: bool) -> Counter[tuple[str, str]]:
    """A check's failures (or its other findings), as (rule, level) counts."""
    return Counter((r, lv) for r, lv, _ in entry["violations"] if (lv == "fail") == failed)


def trace_change(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two digests of one trace check (:data:`TRACE_CHANGES`)."""
    if "error" in old or "error" in new or any(
            old.get(k) != new.get(k) for k in ("exit", "verdict", "revision")):
        return VERDICT
    if _findings(old, True) != _findings(new, True):
        return FAILURES
    if _findings(old, False) != _findings(new, False):
        return WARNINGS
    return PLACES


_CHECKOUT = re.compile(r"/\S*?/(?=(?:tests|examples|docs|generated)/)")


def portable(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """A digest as any checkout reads it: an error's text names its trace relative to the
    corpus, not under the absolute path of the checkout that ran it (two sides' runs from
    two checkouts are otherwise always "different")."""
    if entry is None or "error" not in entry:
        return entry
    return {**entry, "error": _CHECKOUT.sub("", str(entry["error"]))}


def _trace_differs(old: dict[str, Any] | None, new: dict[str, Any] | None
                   ) -> dict[str, Any] | None:
    old, new = portable(old), portable(new)
    if old == new:
        return None
    if old is None or new is None:
        return {"status": "only in " + ("new" if old is None else "old")}
    if any("unrecognized arguments" in str(e.get("error", "")) for e in (old, new)):
        return {"status": "not comparable (a flag one CLI lacks)", "old": old, "new": new}
    return {"status": trace_change(old, new), "old": old, "new": new}


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item whose verdicts differ, with its status."""
    out: list[dict[str, Any]] = []
    for key in sorted(set(old["traces"]) | set(new["traces"])):
        diff = _trace_differs(old["traces"].get(key), new["traces"].get(key))
        if diff is not None:
            out.append({"section": "traces", "item": key, **diff})
    for section in ("zoo", "agents"):
        for key in sorted(set(old[section]) | set(new[section])):
            if key not in old[section] or key not in new[section]:
                side = "new" if key not in old[section] else "old"
                out.append({"section": section, "item": key, "status": f"only in {side}"})
                continue
            fdiff = _runs_differ(old[section][key], new[section][key])
            if fdiff is not None:
                out.append({"section": section, "item": key, **fdiff})
    return out


def counts(old: dict[str, Any], new: dict[str, Any]) -> dict[str, int]:
    both = {s: set(old[s]) & set(new[s]) for s in ("traces", "zoo", "agents")}
    return {"trace files": len({k.rsplit(" [", 1)[0] for k in both["traces"]}),
            "trace checks": len(both["traces"]), "zoo agents": len(both["zoo"]),
            "real-agent runs": len(both["agents"])}


def stored(entry: dict[str, Any]) -> dict[str, Any]:
    """A trace check as the result file keeps it: its rules counted, its violations' places
    hashed (the whole digest stays in the run's own file)."""
    if "violations" not in entry:
        return entry
    rules = Counter(f"{r}:{lv}" for r, lv, _ in entry["violations"])
    places = json.dumps(entry["violations"]).encode()
    return {"exit": entry["exit"], "verdict": entry["verdict"], "revision": entry["revision"],
            "rules": dict(sorted(rules.items())),
            "sha": hashlib.sha256(places).hexdigest()[:12]}


def record(old: dict[str, Any], new: dict[str, Any], diffs: list[dict[str, Any]],
           blamed: dict[str, Any], notes: str, command: str) -> Path:
    """``benchmarks/results/verdicts.json``: the counts, each trace difference's parts with
    the commit that made them, the fuzz differences, and both digests (compact)."""
    figures = [{"name": name, "value": value, "unit": ""}
               for name, value in counts(old, new).items()]
    for name, status in (("trace checks whose verdict changed", VERDICT),
                         ("trace checks whose failures changed, same verdict", FAILURES),
                         ("trace checks whose warnings alone changed", WARNINGS),
                         ("trace checks whose findings moved to other messages", PLACES),
                         ("fuzz differences that persist over reruns", "persistent"),
                         ("fuzz differences that did not persist", "racy (not persistent)")):
        figures.append({"name": name, "value": sum(d["status"] == status for d in diffs),
                        "unit": ""})
    rows = [["traces", name, f"{len(b['items'])} checks, e.g. {b['example']}",
             textwrap.shorten(b["commit"], 100)]
            for name, b in blamed.items() if " * " not in name]
    rows += [[d["section"], d["item"], d["status"], "; ".join(d.get("persistent", ()))
              or _short(d)] for d in diffs if d["section"] != "traces"]
    table = {"columns": ["section", "what changed", "where", "commit / detail"], "rows": rows}
    doc = stamp("verdicts", "No verdict changes (a refactor, before and after)", figures,
                table=table, command=command)
    doc.update(
        parameters={"old": old.get("commit", ""), "new": new.get("commit", "")}, notes=notes,
        not_comparable=[d["item"] for d in diffs if d["status"].startswith("not comparable")],
        blame={name: {"commit": b["commit"], "checks": len(b["items"]), "e.g.": b["example"]}
               for name, b in blamed.items()},
        fuzz_differences=[d for d in diffs if d["section"] != "traces"],
        **{side: {"commit": d.get("commit"), "seconds": d.get("seconds"),
                  "traces": {k: stored(v) for k, v in d["traces"].items()},
                  "zoo": d["zoo"], "agents": d["agents"]}
           for side, d in (("old", old), ("new", new))})
    path = ROOT / "benchmarks" / "results" / "verdicts.json"
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in doc.items()]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # a key a line
    return path


def _short(diff: dict[str, Any]) -> str:
    if "old" not in diff:
        return ""
    return f"old {_brief(diff['old'])}; new {_brief(diff['new'])}"


def _brief(entry: Any) -> str:
    if isinstance(entry, dict):
        if "error" in entry:
            return f"exit {entry['exit']}: {entry['error']}"
        rules = sorted({f"{r}:{lv}" for r, lv, _ in entry["violations"]})
        return f"{entry['verdict']} ({', '.join(rules)})"
    return " | ".join(f"{v} fail={','.join(f)} warn={','.join(w)}" for v, f, w in entry)


# --- which commit changed a verdict (git bisect over the trace checks) ------------------------

BISECT = Path(tempfile.gettempdir()) / "acp-model-verdicts-bisect"


def atoms(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any]]:
    """A trace check's change split into its parts: the exit code when one side could not
    judge, the decided revision, each (rule, level) whose count changed, and (level ``*``)
    each rule whose count at any level changed (a rule that went from failure to warning to
    nothing is two changes, maybe by two commits)."""
    if "error" in old or "error" in new:
        return [("exit", [old["exit"], new["exit"]])]
    out: list[tuple[str, Any]] = []
    if old["revision"] != new["revision"]:
        out.append(("revision", [old["revision"], new["revision"]]))
    count = {k: Counter((r, lv) for r, lv, _ in e["violations"]) for k, e in
             (("old", old), ("new", new))}
    for key in ("old", "new"):  # a rule at any level: a change of level in two steps
        count[key].update(Counter((r, "*") for r, _ in list(count[key].elements())))
    for rule, level in sorted(set(count["old"]) | set(count["new"])):
        a, b = count["old"][(rule, level)], count["new"][(rule, level)]
        if a != b:
            out.append(("rule", [rule, level, "+" if b > a else "-"]))
    if not out:  # the same rules at other messages
        out.append(("where", []))
    return out


def like_new(atom: tuple[str, Any], entry: dict[str, Any], new: dict[str, Any]) -> bool:
    """Does a check at some commit already show the new side's part ``atom``?"""
    kind, value = atom
    if kind == "exit":
        return entry["exit"] == value[1]
    if "error" in entry:
        return False
    if kind == "revision":
        return bool(entry["revision"] == value[1])
    if kind == "where":
        return bool(entry["violations"] == new["violations"])
    rule, level = value[0], value[1]
    def n(e: dict[str, Any]) -> int:
        return sum(1 for r, lv, _ in e["violations"] if r == rule and level in (lv, "*"))
    return n(entry) == n(new)


def _cmd_probe(args: argparse.Namespace, console: Console) -> int:
    """``git bisect run``'s test at the bisect tree's HEAD: 1 (bad) when the check shows the
    new side's part already, 0 when not, 125 (skip) when the tree cannot run."""
    key = f"{args.trace} [{args.config}]"
    new = load(Path(args.new))["traces"][key]
    trace = generated(Path(tempfile.gettempdir()) / "acp-model-verdicts") \
        if args.trace == GENERATED else ROOT / args.trace
    flags = {**CHECKS, **ONE_SIDED}[args.config]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "check.json"
        argv = [sys.executable, "-m", "acp_model", "check", str(trace), "--report", str(out),
                *flags]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=BISECT,
                              env={**os.environ, "PYTHONPATH": str(BISECT)}, timeout=600)
        if done.returncode not in (0, 1, 2) or "Traceback" in done.stderr:
            return 125
        entry = {"exit": done.returncode, "error": "x"} if not out.is_file() else \
            {"exit": done.returncode, **digest_report(json.loads(out.read_text()))}
    return 1 if like_new((args.kind, json.loads(args.value)), entry, new) else 0


def bisect(old_commit: str, new_commit: str, new_path: Path, item: str,
           atom: tuple[str, Any]) -> str:
    """The first commit whose check of ``item`` shows ``atom`` (git bisect in a worktree of
    its own)."""
    def git(*a: str, cwd: Path = BISECT) -> str:
        return subprocess.run(["git", *a], cwd=cwd, capture_output=True, text=True).stdout

    if not BISECT.is_dir():
        git("worktree", "add", "--detach", str(BISECT), new_commit, cwd=ROOT)
    trace, config = item.rsplit(" [", 1)
    git("bisect", "reset")
    git("bisect", "start", new_commit, old_commit)
    out = git("bisect", "run", sys.executable, str(Path(__file__).resolve()), "probe",
              "--new", str(new_path.resolve()), "--trace", trace, "--config", config[:-1],
              "--kind", atom[0], "--value", json.dumps(atom[1]))
    git("bisect", "reset")
    for line in out.splitlines():
        if "is the first bad commit" in line:
            sha = line.split()[0]
            return git("log", "-1", "--format=%h %ad %s", "--date=format:%m-%d %H:%M", sha)
    return "not found: " + (out.strip().splitlines() or ["?"])[-1]


def _cmd_blame(args: argparse.Namespace, console: Console) -> int:
    old, new = load(Path(args.old)), load(Path(args.new))
    groups: dict[str, list[str]] = {}
    first: dict[str, tuple[str, tuple[str, Any]]] = {}
    for key in sorted(set(old["traces"]) & set(new["traces"])):
        a, b = old["traces"][key], new["traces"][key]
        if a == b or _trace_differs(a, b)["status"] not in TRACE_CHANGES:  # type: ignore[index]
            continue
        for atom in atoms(a, b):
            judged = b.get("revision", "-")  # the same part may differ per revision
            name = f"{atom[0]} {' '.join(map(str, atom[1]))} under {judged}"
            groups.setdefault(name, []).append(key)
            first.setdefault(name, (key, atom))
    save = Path(args.save)
    known = json.loads(save.read_text(encoding="utf-8")) if save.is_file() else {}
    found = {}
    for name, (item, atom) in first.items():  # a part bisected before keeps its commit
        commit = known[name]["commit"] if name in known else \
            bisect(old["commit"], new["commit"], Path(args.new), item, atom)
        found[name] = {"commit": commit, "example": item, "items": groups[name]}
        console.print(escape(f"{name} ({len(groups[name])} checks, e.g. {item}): {commit}"))
        save.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")
    return 0


# --- the command line -----------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace, console: Console) -> int:
    if len(args.acp_model) != len(args.save):
        raise SystemExit("error: give one --save per --acp-model")
    sides = []
    for exe in args.acp_model:
        side = Side(Path(exe).absolute())
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], text=True,
                                capture_output=True, cwd=side.checkout).stdout.strip()
        sides.append((side, {"head": {"commit": commit, "acp_model": str(side.acp_model)}}))
    cache = Path(tempfile.gettempdir()) / "acp-model-verdicts"
    generated(cache)  # before the threads: both sides check the same file
    todo = args.part or sorted({p for side, _ in sides for p in parts(side)},
                               key=[p for side, _ in sides for p in parts(side)].index)
    for part in todo:
        for _, doc in sides:
            doc["added"] = []
        with locked(args.lock):  # held while merging too: the holders write one at a time
            run_part(sides, part, console, cache)
            for (_, doc), path in zip(sides, args.save, strict=True):
                merge(Path(path), doc["added"], doc["head"])
        for (_, doc), path in zip(sides, args.save, strict=True):
            console.print(f"{part}: {doc['added'][-1][2]} s (digest in {path})")
    return 0


def _cmd_compare(args: argparse.Namespace, console: Console) -> int:
    old, new = load(Path(args.old)), load(Path(args.new))
    diffs = compare(old, new)
    console.print(", ".join(f"{k}: {v}" for k, v in counts(old, new).items()))
    for d in diffs:
        console.print(f"[bold]{d['section']}[/] " + escape(
            f"{d['item']}: {d['status']} {'; '.join(d.get('persistent', ())) or _short(d)}"))
    if not diffs:
        console.print("no verdict differs")
    if args.record:
        notes = Path(args.notes).read_text(encoding="utf-8").strip() if args.notes else ""
        blamed = json.loads(Path(args.blame).read_text(encoding="utf-8")) if args.blame else {}
        path = record(old, new, diffs, blamed, notes, RECORD_COMMAND)
        console.print(f"written to {path.relative_to(ROOT)}")
    return 1 if any(d["status"] in (*TRACE_CHANGES, "persistent", "rerun both sides")
                    for d in diffs) else 0


RECORD_COMMAND = (
    "git worktree add --detach /tmp/old OLD && make -C /tmp/old venv && python "
    "benchmarks/verdicts.py run --acp-model /tmp/old/.venv/bin/acp-model --save old.json "
    "--acp-model .venv/bin/acp-model --save new.json --lock /tmp/acpm-heavy.lock [--part ...] "
    "&& python benchmarks/verdicts.py blame old.json new.json --save blame.json && python "
    "benchmarks/verdicts.py compare old.json new.json --record --blame blame.json --notes "
    "notes.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="digest one checkout's verdicts (merged into --save)")
    run.add_argument("--acp-model", required=True, action="append",
                     help="a checkout's acp-model executable (repeat: the sides run each part "
                          "at once)")
    run.add_argument("--save", required=True, action="append", metavar="PATH.json",
                     help="where its digest goes (one per --acp-model, merged into)")
    run.add_argument("--part", action="append", help="only these parts (default: all; see "
                     "`parts`): traces/K, zoo/K, agents/K, trace:PATH, zoo:NAME, "
                     "agent:NAME@vN")
    run.add_argument("--lock", metavar="PATH", help="hold flock PATH for one part at a time")
    run.set_defaults(func=_cmd_run)
    lst = sub.add_parser("parts", help="list the parts of a whole run")
    lst.add_argument("--acp-model", required=True)
    lst.set_defaults(func=lambda a, c: print("\n".join(parts(Side(Path(a.acp_model)))))
                     or 0)
    cmp = sub.add_parser("compare", help="the differences of two digests (exit 1: a trace check's "
                         "verdict or findings changed, or a fuzz difference persists or needs "
                         "a rerun)")
    cmp.add_argument("old")
    cmp.add_argument("new")
    cmp.add_argument("--record", action="store_true",
                     help="write benchmarks/results/verdicts.json")
    cmp.add_argument("--notes", metavar="FILE", help="the analysis of the differences (text)")
    cmp.add_argument("--blame", metavar="FILE", help="what `blame --save` found (the table "
                     "lists each part of the trace changes with its commit)")
    cmp.set_defaults(func=_cmd_compare)
    blm = sub.add_parser("blame", help="bisect each part of each trace check's verdict change "
                         "to the commit that introduced it (a worktree of its own; the new "
                         "checkout's Python runs each commit's source)")
    blm.add_argument("old")
    blm.add_argument("new")
    blm.add_argument("--save", required=True, metavar="PATH.json")
    blm.set_defaults(func=_cmd_blame)
    prb = sub.add_parser("probe", help=argparse.SUPPRESS)
    for name in ("--new", "--trace", "--config", "--kind", "--value"):
        prb.add_argument(name, required=True)
    prb.set_defaults(func=_cmd_probe)
    args = parser.parse_args(argv)
    result: int = args.func(args, Console(stderr=True))
    return result


if __name__ == "__main__":
    sys.exit(main())
