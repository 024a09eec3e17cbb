"""``acp-model explore``: the reachable graph of the model, its properties, reading diffs."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from acp_model.argtypes import int_at_least
from acp_model.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    UsageError,
    add_reading_option,
    read_json,
    readings_of,
)
from acp_model.report.text import NBSP, show
from acp_model.spec.readings import ReadingError, Readings

EXPLORE_EPILOG = """modes (one per run):
  (default)            explore under the chosen readings and judge properties a-e
  --diff NAME=V1,V2    where two readings of one ambiguity part, e.g. --diff A-01=join,forbid;
                       --diff NAME alone compares the default with every other value
  --each-reading       explore once per value of every reading (one change at a time)
  --contradictions     doc-vs-schema contradictions and what they change in the model
  --coverage R.json .. (with the default mode) which model transitions the given check/fuzz
                       reports exercised on a real agent, and which never were

properties:
  a  every reachable state can return to a quiescent idle with agent events and the client's
     own obligations (permission and elicitation answers) only
  b  after a cancel the agent provably read during work, that work ends with cancelled (an
     unread cancel may race with another reason), and the agent can still end it so
  c  every state and (state, event) transition is reachable and every (state, event) has a
     transition; violation-only transitions (always refused) are listed
  d  the idle that ends a turn accepts a new prompt
  e  cancelled only while a cancel is outstanding; an idle ending reported work has a reason

Every witness is a path of abstract events and a concrete JSON-RPC trace; --witness-dir writes
the traces as JSONL files that `acp-model check` accepts.

bounds: defaults depend on --sessions (1: 1 prompt, 1 permission, 1 cancel, no tool call,
custom states; 2: no permissions, no custom states, the lean alphabet; 3: also the reasons
end_turn/cancelled, and it stays tractable only under strict readings such as
--reading A-03=diagram --reading A-07=forbid).

exit codes: 0 every property holds (or a report-only mode), 1 a property fails, 2 usage error,
3 internal error.
example: acp-model explore --sessions 2 --diff A-04=noop,idle-cancelled"""

def _reasons(value: str) -> tuple[str | None, ...]:
    out: list[str | None] = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        out.append(None if part.lower() == "none" else part)
    if not out:
        raise argparse.ArgumentTypeError("give at least one stop reason (none = no reason)")
    return tuple(out)


@contextmanager
def _progress(console: Console, what: str) -> Iterator[Callable[[int, int], None]]:
    """A transient spinner with the number of states found (explorations can take a while)."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task(what, total=None)

        def update(done: int, found: int) -> None:
            bar.update(task, description=f"{what}: {found} states, {done} expanded")

        yield update


def _explore_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from acp_model.explorer import Bounds

    try:
        bounds = Bounds.default(args.sessions, max_prompts=args.max_prompts,
                                max_permissions=args.max_permissions,
                                max_cancels=args.max_cancels, max_tools=args.max_tools,
                                max_elicitations=args.max_elicitations, custom=args.custom,
                                reasons=args.reasons, lean=args.lean)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return {"bounds": bounds, "max_states": args.max_states}


def _too_large(exc: Exception) -> UsageError:
    return UsageError(f"{exc}: lower --max-prompts/--max-cancels/--max-permissions/"
                      "--max-elicitations/--max-tools, use --lean or --no-custom, or raise "
                      "--max-states")


def _write_witnesses(results: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write every witness trace found in a JSON result as DIR/<name>.jsonl."""
    from acp_model.trace.format import parse_record, write_trace

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, witness in results:
        path = out / f"{name}.jsonl"
        write_trace(path, [parse_record(r) for r in witness["trace"]])
        written.append(path)
    return written


def _witnesses(doc: Any, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(doc, dict):
        if "trace" in doc and "events" in doc:
            return [(prefix.strip("-") or "witness", doc)]
        for k, v in doc.items():
            keep = k not in ("witness", "properties", "violations", "differences", "diffs",
                             "examples")
            found += _witnesses(v, f"{prefix}-{k}" if keep else prefix)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            tag = str(i + 1)
            if isinstance(v, dict):  # name files after what they show
                tag = str(v.get("id") or v.get("transition") or tag)
                tag = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in tag)
                tag = f"{tag}-{i + 1}" if "transition" in v else tag
            found += _witnesses(v, f"{prefix}-{tag}")
    return found


def _write_html(doc: dict[str, Any], path: Path) -> None:
    """The page: verdict, bounds, properties, and each witness drawn as a sequence diagram."""
    from acp_model import __version__
    from acp_model.report.html import Case, render_html, write_html

    cases = []
    for name, w in _witnesses(doc):
        events = " → ".join(str(e) for e in w.get("events", []))
        violated = name.startswith(tuple(f"{p['id']}-" for p in doc.get("properties", [])
                                         if not p.get("holds")))
        cases.append(Case(title=name, level="fail" if violated else "witness",
                          message=events or "(no events)", records=w["trace"],
                          facts=[("end state", str(w["state"]))] if w.get("state") else []))
    page = {**doc, "version": __version__}
    page.setdefault("verdict", "done")
    write_html(render_html(page, cases=cases, appendix=doc), path)


def cmd_explore(args: argparse.Namespace, console: Console) -> int:
    readings = readings_of(args)
    kw = _explore_kwargs(args)
    err = Console(stderr=True, highlight=False)
    across = bool(args.diff_spec) and _across_protocols(args.diff_spec)
    if args.diff_spec and not across:
        args.diff = [*(args.diff or []), f"SPEC={args.diff_spec}"]
    modes = [m for m in ("diff", "each_reading", "contradictions") if getattr(args, m)]
    if len(modes) > 1 or (across and modes):
        raise UsageError("choose one of --diff, --diff-spec, --each-reading, --contradictions")
    if args.coverage and (modes or across):
        raise UsageError("--coverage goes with the default mode (property checking) only")
    reports = _load_reports(args.coverage) if args.coverage else None  # bad input fails first
    doc, code = _explore_doc(args, readings, kw, err, reports, across=across)
    if args.witness_dir:
        paths = _write_witnesses(_witnesses(doc), Path(args.witness_dir))
        doc["witness_files"] = [str(p) for p in paths]
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if args.html:
        _write_html(doc, Path(args.html))
    if args.format == "json":
        print(json.dumps(doc, indent=2))
    else:
        _render_text(doc, console, args)
    return code


def _explore_doc(args: argparse.Namespace, readings: Readings, kw: dict[str, Any],
                 err: Console, reports: list[dict[str, Any]] | None, *, across: bool
                 ) -> tuple[dict[str, Any], int]:
    """The report of the mode ``args`` chose, and the exit code it gives."""
    from acp_model import explorer as ex

    try:
        if across:
            return _protocol_diff(args.diff_spec), EXIT_OK
        if args.diff:
            return _diff(args, readings, kw, err), EXIT_OK
        if args.each_reading:
            with _progress(err, "exploring every reading"):
                rows = ex.each_reading(readings, **kw)
            return {"command": "explore --each-reading", "bounds": kw["bounds"].to_json(),
                    "readings": rows}, EXIT_OK
        if args.contradictions:
            with _progress(err, "comparing STRENGTH=docs and STRENGTH=schema"):
                return {"command": "explore --contradictions",
                        **ex.contradictions(explore_kw=kw)}, EXIT_OK
        with _progress(err, "exploring") as update:
            exp = ex.explore(readings=readings, progress=update, **kw)
        props = ex.check_properties(exp, limit=args.limit)
        doc = {"command": "explore", "bounds": exp.bounds.to_json(),
               "bounds_text": exp.bounds.describe(), "readings": readings.as_dict(),
               "readings_changed": readings.changed(), **exp.counts(),
               "seconds": round(exp.seconds, 3),
               "verdict": "pass" if all(p.holds for p in props) else "fail",
               "properties": [p.to_json() for p in props]}
        if reports is not None:
            doc["coverage"] = ex.coverage(reports, exp)
        return doc, EXIT_OK if doc["verdict"] == "pass" else EXIT_FAIL
    except ex.ExplorationTooLarge as exc:
        raise _too_large(exc) from None


def _across_protocols(value: str) -> bool:
    from acp_model.explorer.protocol_diff import across_protocols

    a, b = (v.strip() for v in value.split(","))
    return across_protocols(a, b)


def _protocol_diff(value: str) -> dict[str, Any]:
    """v1 against a v2 revision: the behaviours whose verdict differs, each as a trace on
    either wire, judged now by the checker (the abstract alphabet is v2's)."""
    from acp_model.explorer.protocol_diff import protocol_diff

    a, b = (v.strip() for v in value.split(","))
    return protocol_diff(a, b)


def _render_behaviours(doc: dict[str, Any], console: Console) -> None:
    a, b = doc["a"], doc["b"]
    console.print(f"what changed in the lifecycle between {a} and {b}: each behaviour on "
                  "either wire, judged now by `check` under its own revision")
    table = Table()
    for col in ("behaviour", "what changed", a, b):
        table.add_column(col, overflow="fold")
    for row in doc["behaviours"]:
        cells = []
        for rev in (a, b):
            side = row[rev]
            rules = ", ".join(side["failures"] + [f"{w} (warn)" for w in side["warnings"]])
            colour = "green" if side["verdict"] == "pass" else "red"
            cells.append(f"[{colour}]{side['verdict']}[/]" + (f": {rules}" if rules else ""))
        table.add_row(row["behaviour"], row["change"], *cells)
    console.print(table)


def _two_revisions(value: str) -> str:
    """``seed,sdk-2.4.0`` (an argparse type: unknown or equal names are usage errors)."""
    from acp_model.spec.revisions import NAMES

    names = [v.strip() for v in value.split(",")]
    if len(names) != 2 or names[0] == names[1] or not set(names) <= set(NAMES):
        raise argparse.ArgumentTypeError(f"expected two different revisions out of "
                                         f"{', '.join(NAMES)}, got {value!r}")
    return value


def _diff(args: argparse.Namespace, readings: Any, kw: dict[str, Any], err: Console
          ) -> dict[str, Any]:
    from acp_model import explorer as ex

    pairs = []
    for spec in args.diff:
        try:
            pairs += ex.parse_diff(spec, readings)
        except ReadingError as exc:
            raise UsageError(str(exc)) from None
    diffs = []
    for a, b in pairs:
        with _progress(err, f"comparing {ex.reading_name(a, b)} with "
                            f"{ex.reading_name(b, a)}"):
            d = ex.diff_readings(a, b, **kw)
        d.pop("exploration")
        diffs.append(d)
    return {"command": "explore --diff", "diffs": diffs}


def _load_reports(paths: list[str]) -> list[dict[str, Any]]:
    return [read_json(p) for p in paths]


# ---------------------------------------------------------------------------------------------
# Text rendering
# ---------------------------------------------------------------------------------------------

def _events(w: dict[str, Any]) -> str:
    evs = w["events"]
    k = w.get("offending_step")
    steps = [escape(e).replace(" ", NBSP) for e in evs]  # a line breaks after an arrow only
    return f"{NBSP}→ ".join(f"[bold]{e}[/]" if i == k else e for i, e in enumerate(steps))


def _item(console: Console, text: str, markup: bool = False) -> None:
    """One item of a list under a heading: indented by two, its continuation lines by six."""
    show(console, text, indent="  ", hang="      ", markup=markup)


def _render_text(doc: dict[str, Any], console: Console, args: argparse.Namespace) -> None:
    render = {"explore --diff-spec": _render_behaviours, "explore": _render_properties,
              "explore --diff": _render_diffs, "explore --each-reading": _render_each_reading,
              "explore --contradictions": _render_contradictions}.get(doc["command"])
    if render is not None:
        render(doc, console)
    if doc.get("witness_files"):
        console.print(f"wrote {len(doc['witness_files'])} witness trace(s) under "
                      f"{args.witness_dir} (check them with acp-model check FILE)")


def _render_properties(doc: dict[str, Any], console: Console) -> None:
    """The default mode: what was explored, each property's result and its violations."""
    console.print(f"explored {doc['states']} states, {doc['transitions']} transitions "
                  f"({doc['refused']} refused attempts) in {doc['seconds']:.2f} s")
    console.print(f"bounds: {doc['bounds_text']}")
    if doc["readings_changed"]:
        console.print("readings: " + ", ".join(f"{k}={v}" for k, v in
                                               doc["readings_changed"].items()))
    table = Table(title="Properties")
    for col in ("", "property", "result"):
        table.add_column(col, overflow="fold")
    for p in doc["properties"]:
        mark = "[green]holds[/]" if p["holds"] else "[red]FAILS[/]"
        table.add_row(p["id"], p["name"], f"{mark}: {p['summary']}")
    console.print(table)
    for p in doc["properties"]:
        for v in p["violations"]:
            show(console, f"({p['id']}) {v['what']}", "red", indent="", hang="    ")
            if "witness" in v:
                w = v["witness"]
                show(console, f"events: {_events(w)}", hang="        ", markup=True)
                if w.get("offending_record") is not None:
                    console.print(f"    trace: {len(w['trace'])} records, offending "
                                  f"record #{w['offending_record']}")
    c = next(p for p in doc["properties"] if p["id"] == "c")
    if c["violation_only"]:
        console.print("violation-only transitions (the table keeps them so the monitor "
                      "can follow the wire after a violation):")
        for v in c["violation_only"]:
            show(console, f"{v['transition']}  refused by {', '.join(v['refused_by'])}")
    if c["outside_alphabet"]:
        show(console, f"not explored under these bounds: {', '.join(c['outside_alphabet'])}",
             indent="")
    if "coverage" in doc:
        _render_coverage(doc["coverage"], console)
    colour = "green" if doc["verdict"] == "pass" else "red"
    console.print(f"[bold {colour}]verdict: {doc['verdict'].upper()}[/]")


def _render_diffs(doc: dict[str, Any], console: Console) -> None:
    """``--diff``: per pair of readings, the transitions one allows and the other refuses."""
    for d in doc["diffs"]:
        console.print(f"[bold]{d['a']}[/] vs [bold]{d['b']}[/]: {d['states']} states "
                      f"explored in {d['seconds']:.2f} s")
        if not d["differences"]:
            console.print("    no transition is allowed by one and refused by the other")
        for item in d["differences"]:
            _item(console, f"{item['allowed_by']} allows, {item['refused_by']} refuses "
                  f"{item['transition']}"
                  + (f"({item['payload']})" if item["payload"] else "")
                  + f" [{', '.join(item['rules'])}] in {item['occurrences']} state(s)")
            w = item["witness"]
            show(console, f"shortest: {_events(w)}", hang="        ", markup=True)
        for name, only in d["only_reachable"].items():
            if only["states"]:
                ex = only["examples"][0]
                _item(console, f"only under {name}: {only['states']} state(s), e.g. "
                      f"{ex['state']} via {_events(ex['witness'])}", markup=True)


def _render_each_reading(doc: dict[str, Any], console: Console) -> None:
    table = Table(title="Exploration under each reading")
    for col in ("reading", "states", "transitions", "refused", "s", "a", "b", "c", "d", "e"):
        table.add_column(col)
    for r in doc["readings"]:
        marks = ["✓" if r["properties"][k] else "[red]✗[/]" for k in "abcde"]
        name = r["reading"] + (" (default)" if r["default"] else "")
        table.add_row(name, str(r["states"]), str(r["transitions"]), str(r["refused"]),
                      f"{r['seconds']:.2f}", *marks)
    console.print(table)
    for r in doc["readings"]:
        for pid, summary in r["failed"].items():
            _item(console, f"{r['reading']}: ({pid}) {summary}")


def _render_contradictions(doc: dict[str, Any], console: Console) -> None:
    table = Table(title="Doc-vs-schema and doc-vs-doc contradictions (RULES.md §6.3)")
    for col in ("id", "conflict", "rules (docs / schema strength)", "effect in the model"):
        table.add_column(col, overflow="fold")
    for c in doc["contradictions"]:
        strengths = ", ".join(f"{rid} {s['docs']}/{s['schema']}"
                              for rid, s in c["strengths"].items()) or ", ".join(c["rules"])
        effect = "; ".join(f"{e['transition']}({e['payload']}) refused only under docs"
                           for e in c["model_effect"]) or c.get("note", "")
        table.add_row(c["id"], c["conflict"], strengths, effect)
    console.print(table)


def _render_coverage(cov: dict[str, Any], console: Console) -> None:
    console.print(f"coverage: {len(cov['exercised'])} of {cov['transitions']} model transitions "
                  f"exercised ({cov['ratio']:.0%})")
    if cov["not_exercised_reachable"]:
        _item(console, "reachable but never exercised: "
              + ", ".join(cov["not_exercised_reachable"]))
    if cov["not_exercised_never_legal"]:
        _item(console, "never exercised, and never legal in the model: "
              + ", ".join(cov["not_exercised_never_legal"]))
    if cov.get("rules_not_exercised"):
        _item(console, "lifecycle rules never exercised: " + ", ".join(cov["rules_not_exercised"]))


def register(sub: Any) -> None:
    p = sub.add_parser(
        "explore", help="reachable states of the session model, properties, reading diffs",
        description="Compute every configuration of the session lifecycle model reachable "
        "within the bounds (driving the same python-statemachine model the checker runs), "
        "judge properties a-e on the graph and print a shortest witness for each failure.",
        epilog=EXPLORE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int_at_least(0), default=1,
                   help="sessions on the connection, 1..3 (default 1; they share the read "
                        "frontier)")
    p.add_argument("--max-prompts", type=int_at_least(0), metavar="N",
                   help="prompts a session holds at once (default 1)")
    p.add_argument("--max-permissions", type=int_at_least(0), metavar="N",
                   help="permission requests a session holds at once (default 1; 0 for 2+ "
                        "sessions)")
    p.add_argument("--max-cancels", type=int_at_least(0), metavar="N",
                   help="cancels a session holds at once (default 1)")
    p.add_argument("--max-elicitations", type=int_at_least(0), metavar="N",
                   help="session-scoped elicitations (elicitation/create) a session holds "
                        "at once, with the client's answers (default 0: not tried)")
    p.add_argument("--max-tools", type=int_at_least(0), metavar="N",
                   help="distinct tool calls per session, 0..3 (default 0; each multiplies "
                        "the graph by about ten)")
    p.add_argument("--custom", action=argparse.BooleanOptionalAction, default=None,
                   help="try custom (_x) foreground states (default on for 1 session)")
    p.add_argument("--lean", action=argparse.BooleanOptionalAction, default=None,
                   help="core alphabet only: no output, no $/cancel_request, no rejections, "
                        "no user message before the prompt response (default on for 2+ "
                        "sessions)")
    p.add_argument("--reasons", type=_reasons, metavar="R1,R2",
                   help="idle stop reasons to try, 'none' for no reason (default "
                        "none,end_turn,cancelled)")
    p.add_argument("--max-states", type=int_at_least(0), default=300_000, metavar="N",
                   help="give up beyond N states (default 300000)")
    add_reading_option(p)
    p.add_argument("--diff", action="append", metavar="NAME=V1,V2",
                   help="compare two readings of one ambiguity (repeatable)")
    p.add_argument("--diff-spec", metavar="A,B", type=_two_revisions,
                   help="compare two spec revisions (e.g. seed,sdk-2.4.0): what one allows "
                        "and the other forbids, with witnesses (same as --diff SPEC=A,B)")
    p.add_argument("--each-reading", action="store_true",
                   help="explore once under every value of every reading")
    p.add_argument("--contradictions", action="store_true",
                   help="report the doc-vs-schema contradictions and their effect")
    p.add_argument("--coverage", nargs="+", metavar="REPORT.json",
                   help="check or fuzz JSON reports: which transitions they exercised")
    p.add_argument("--limit", type=int_at_least(0), default=3, metavar="N",
                   help="witnesses shown per failing property (default 3)")
    p.add_argument("--witness-dir", metavar="DIR",
                   help="write every witness trace as DIR/<name>.jsonl")
    p.add_argument("--html", metavar="PATH.html", help="write a self-contained HTML page "
                   "(properties, witnesses as sequence diagrams, the full result)")
    p.add_argument("--report", metavar="PATH.json", help="write the JSON result here")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="terminal output (default text)")
    p.set_defaults(func=cmd_explore)

