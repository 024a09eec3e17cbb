"""What a fuzz run leaves behind: the JSON report, JUnit XML, and per-failure files.

For each distinct failure ``--out DIR`` receives ``DIR/<rule>/``:
``transcript.jsonl`` (the full wire transcript in the ``acp-model check`` trace format),
``counterexample.txt`` (client actions and agent messages, the offending one marked),
``sequence.mmd`` (the same as a Mermaid ``sequenceDiagram``), ``replay.json`` (for
``acp-model replay``) and ``schedule.json`` (the boundary schedule a replay is held to).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import Action
from acp_model.fuzzing.budget import slack
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import BARE
from acp_model.fuzzing.held import held_line
from acp_model.fuzzing.program import Program
from acp_model.fuzzing.queries import OracleQueries
from acp_model.fuzzing.recorder import Found
from acp_model.fuzzing.run import FuzzResult
from acp_model.fuzzing.schedule import Schedule
from acp_model.fuzzing.unsent import program_lines
from acp_model.model.vocab import Level
from acp_model.oracle.monitor_queries import MonitorQueries
from acp_model.report.document import build_report, merge_stats
from acp_model.report.html import (
    Case,
    Transcript,
    cases_from_violations,
    finding_order,
    render_html,
    violation_facts,
)
from acp_model.report.proof import spare_messages, unnumbered_acts, writer_of
from acp_model.report.reach import reach_json
from acp_model.report.sarif import Located
from acp_model.report.sequence_svg import OFFENDING
from acp_model.report.text import (
    counterexample_name,
    measured,
    minimize_stopped,
    proven_minimal,
    rates_phrase,
    reproduction_phrase,
)
from acp_model.spec.levels import Standing
from acp_model.spec.rules import RULES, strength_shown
from acp_model.trace.authors import SPARE_WHY
from acp_model.trace.describe import summarize
from acp_model.trace.format import numbered_lines

REPLAY_FORMAT = "acp-model-replay/1"
SCHEDULE_FILE = "schedule.json"
SHARED_ONLY = "seen on a shared agent process only, not reproduced"


def reproduction_text(found: Found) -> str:
    """How often the reported program reproduced in fresh processes: held to its recorded
    schedule (the headline) and free-running; "not replayed" for what never ran."""
    return in_fresh(reproduction_phrase(found.reproduced, found.replays,
                                         found.free_reproduced, found.free_replays,
                                         unsure=found.inconclusive,
                                         free_unsure=found.free_inconclusive,
                                         clock=found.clock_held,
                                         why=found.inconclusive_why))


def in_fresh(phrase: str) -> str:
    """A reproduction phrase, said of fresh agent processes."""
    return phrase if phrase == "not replayed" else f"{phrase} in fresh agent processes"


def minimize_text(found: Found) -> str | None:
    """Why the program is not called minimal (None: it is the fixpoint's, or minimizing
    never ran)."""
    return minimize_words(found.minimize, len(found.actions), *_found_rate(found))


def minimize_words(m: Mapping[str, Any] | None, steps: int, hits: int, runs: int
                   ) -> str | None:
    """:func:`minimize_text` of a report's counterexample: its ``minimize`` entry, its
    program's length and the rate it is judged by."""
    if not m:
        return None
    if not m.get("fixpoint"):
        return f"not proven minimal: {minimize_stopped(m)}"
    if m.get("other") or m.get("steps") not in (None, steps):
        which = "a longer one" if (m.get("steps") or 0) < steps else "another"
        return (f"not the minimal program ({m['steps']} actions, reached at the fixpoint): "
                f"{which} that reproduces more often")
    if not proven_minimal(m, steps, hits, runs):
        return (f"not proven minimal: minimizing reached its fixpoint, but the program "
                f"reproduces only {hits}/{runs}: a removal whose replay missed is no proof "
                "that the action is needed")
    return None


def shared_only_text(found: Found) -> str:
    return (f"{SHARED_ONLY} in {found.fresh_runs} fresh-process replay(s) (held to its "
            "recorded schedule and free-running): reported as a warning, with the proof the "
            "shared process gave")


def counterexample_records(found: Found) -> tuple[list[dict[str, Any]], int]:
    records, offending, _ = found.shown()
    return records, offending


def record_numbers(found: Found) -> list[int]:
    """The message number of each counterexample record in its process's transcript (what
    violation messages cite): a fresh replay's records are that whole transcript; a shared
    process's excerpt keeps the numbers of the records it kept."""
    return found.shown()[2]


def warning_text(found: Found) -> str | None:
    """Why a failure the run found is reported as a warning (None: it stands): seen on a
    shared process only, or its proof rests on the agent's handling of the client's
    deliberate breach."""
    if found.standing == Standing.SHARED_ONLY:
        return shared_only_text(found)
    resting = found.breaches()[1]
    if resting:
        return resting[0].rested_on()
    return None


GAP_NOTE = "not part of this proof: earlier examples on the shared agent process"


def replay_teardown(found: Found) -> int | None:
    """The message number where the teardown of the replay shown began (None: the run's own
    records are shown, or it is not known)."""
    if found.replay_records is None or found.replay_offending is None:
        return None
    return found.replay_teardown


@dataclass(frozen=True)
class Shown:
    """What ``counterexample.txt`` says of one finding: the verdict's words (which the current
    code may change on re-judging: ``matrix/rejudge.py``) and the run's record of it (its
    program, transcript, rates and the scripted model's side, which only the run knew)."""

    rule: str
    strength: str  # as shown (``strength_shown``)
    warning: bool  # judged a warning here
    source: str  # the rule's citation in the revision judged by
    revision: str
    decided: str | None  # the evidence that decided the revision
    argv: Sequence[str]
    replayed: bool  # the program was shrunk and replayed (a failure's, not a first sighting's)
    reproduction: str  # how often fresh processes reproduced it, in words
    verified: bool
    demoted: str | None  # why a failure the run found is a warning
    minimized: str | None  # why the program is not called minimal (None: it is, or not known)
    minimal: bool
    message: str
    cited: Sequence[int]  # the offending message's number and its evidence's
    actions: Sequence[Action]
    records: list[dict[str, Any]]
    numbers: list[int]  # each record's message number
    offending: int  # the offending record's position
    teardown: int | None  # where the teardown began (None: not known)
    model: Mapping[int, list[str]] = field(default_factory=dict)  # by record position
    # what each gap of an excerpt left out, by its first number (else: a shared process's)
    gaps: Mapping[int, str] = field(default_factory=dict)
    breaches: Sequence[str] = ()
    notes: Sequence[str] = ()
    held: str | None = None  # the order the held replays kept (``fuzzing/held.py``)
    # the recorded schedule and the readings: what each action put on the wire (its looks,
    # and whether A-01=forbid held a prompt back), said on its line (``fuzzing/unsent.py``)
    schedule: Schedule | None = None
    readings: Mapping[str, Any] = field(default_factory=dict)


def counterexample_text(found: Found, cfg: FuzzConfig) -> str:
    return render_shown(shown_of(found, cfg))


def shown_of(found: Found, cfg: FuzzConfig) -> Shown:
    """What the run knows of ``found``, as ``counterexample.txt`` says it."""
    rule = RULES[found.violation.rule]
    records, offending = counterexample_records(found)
    warning = found.violation.level != Level.FAIL
    return Shown(
        rule=rule.id, strength=strength_shown(rule.id, rule.strength_under(cfg.readings)),
        warning=warning, source=rule.citation_in(cfg.readings.revision),
        revision=cfg.readings.revision,
        decided=cfg.decision.evidence if cfg.decision is not None else None, argv=cfg.argv,
        replayed=not warning, reproduction=reproduction_text(found), verified=found.verified,
        demoted=warning_text(found), minimized=minimize_text(found),
        minimal=found.verified and bool(_minimal(found)), message=found.violation.message,
        cited=[found.violation.index, *(i for i, _ in found.violation.evidence)],
        actions=found.actions, records=records, numbers=record_numbers(found),
        offending=offending, teardown=replay_teardown(found), model=_model_lines(found),
        breaches=found.breaches()[0], notes=found.notes,
        held=None if warning or found.schedule is None else held_line(
            found.schedule, records, record_numbers(found), found.violation.index),
        schedule=found.schedule, readings=cfg.readings.as_dict())


def render_shown(c: Shown) -> str:
    """``counterexample.txt``: the verdict, what went wrong, the program and the wire."""
    unnumbered = unnumbered_acts(c.records, c.numbers, c.cited, c.teardown)
    lines = [
        f"acp-model {'counterexample' if c.replayed else 'warning, first sighting'}: "
        f"{c.rule} ({c.strength}" + ("; judged a warning here" if c.warning else "")
        + f", {RULES[c.rule].binds})",
        f"  {RULES[c.rule].statement}",
        f"  source: {c.source}",
        f"  spec revision: {c.revision}" + (f" ({c.decided})" if c.decided else ""),
        f"  agent: {' '.join(c.argv)}",
        f"  {c.reproduction}" + ("" if c.verified else
                                 " (UNVERIFIED: no fresh-process replay showed it)")
        if c.replayed else "  the program as run: neither shrunk nor replayed",
        *([f"  WARNING, not a failure: {c.demoted}"] if c.demoted else []),
        *([f"  {c.minimized}"] if c.minimized and c.replayed else []),
        "",
        "What went wrong:",
        f"  {c.message}",
        *(f"  The proof cites {words}." for words in unnumbered),
        *(["", "The order held (schedule.json):", f"  {c.held}"] if c.held else []),
        "",
        ("Client actions (minimal: no single action can go, no content be simpler)"
         if c.replayed and not c.warning and c.minimal else "Client actions")
        + (" (replay.json)" if c.replayed else "") + ":",
    ]
    if not c.actions:
        lines.append("  (none: the agent fails while initializing)")
    steps = program_lines(c.actions, c.records, c.numbers, c.schedule, c.readings)
    lines += [f"  {n}. {text}" for n, text in enumerate(steps, start=1)]
    lines.append("  then the teardown"
                 + (f" (from #{c.teardown} on in the transcript below)"
                    if c.teardown is not None else "")
                 + " drains the sessions: cancel what is still busy, answer "
                 "open permissions with cancelled, sync, judge what is still owed")
    spares = spare_messages(c.records, c.numbers)
    if spares:
        lines.append(f"  and, none of these actions: {spares} ({SPARE_WHY})")
    lines += ["", "Wire transcript (C->A client to agent, A->C agent to client; >> marks the "
              "offending message" + ("; model: what crossed the scripted model's boundary"
                                    if c.model else "") + "):"]
    if c.breaches:
        lines += ["", "Deliberate breaches the program keeps (the client breaks a rule on "
                  "purpose, to see how the agent copes; minimizing tries without them "
                  "first):", *(f"  {line}" for line in c.breaches)]
    lines += _wire_lines(c)
    for note in c.notes:
        lines += ["", f"note: {note}"]
    return "\n".join(lines) + "\n"


def _wire_lines(c: Shown) -> list[str]:
    """The transcript shown, numbered, with the scripted model's part, the gaps of a shared
    process's excerpt, and each client message marked with the part of the client that wrote
    it (an action's number, a spare session's, the teardown's...)."""
    lines: list[str] = []
    numbers, teardown = c.numbers, c.teardown
    for n, (direction, text) in enumerate(summarize(c.records)):
        lines += c.model.get(n, [])
        left_out = numbers[n] - (numbers[n - 1] + 1 if n else 0)
        if left_out:
            first = numbers[n] - left_out
            lines.append(f"   ...   (#{first}-#{numbers[n] - 1}: "
                         f"{c.gaps.get(first, GAP_NOTE)})")
        if teardown is not None and numbers[n] == teardown:
            lines.append("   ---   (from here on the teardown runs, after the program's last "
                         "action: the teardown's messages are marked so)")
        arrow = "C->A" if direction == "c2a" else "A->C"
        mark = ">>" if n == c.offending else "  "
        author = writer_of(c.records[n], numbers[n], teardown)
        ours = f"   ({author.tag()})" if author is not None else ""
        lines.append(f"{mark} #{numbers[n]:<4} {arrow}  {text}{ours}")
        if n == c.offending:
            lines.append(f"{'':9}^ {c.rule}: {c.message}")
    return lines + [line for at in sorted(c.model) if at >= len(c.records)
                    for line in c.model[at]]


def _model_lines(found: Found) -> dict[int, list[str]]:
    """The scripted model's side of the replay shown, by the record it came before: what the
    agent asked its model and when the model answered, among the wire's messages."""
    if found.replay_records is None:
        return {}
    out: dict[int, list[str]] = {}
    for at, text in found.replay_model:
        out.setdefault(at, []).append(f"{'':9}model: {text}")
    return out


def sequence_text(found: Found) -> str:
    from acp_model.trace.sequence import sequence_diagram

    records, offending = counterexample_records(found)
    return sequence_diagram(records, {offending: f"{found.rule}: {found.violation.message}"},
                            numbers=record_numbers(found))


def replay_document(found: Found, cfg: FuzzConfig) -> dict[str, Any]:
    return {
        "format": REPLAY_FORMAT,
        # the boundary schedule beside it: ``acp-model replay`` holds the replay to it
        **({"schedule": SCHEDULE_FILE} if found.schedule is not None else {}),
        "rule": found.rule,
        "message": found.violation.message,
        "actions": [a.to_json() for a in found.actions],
        "readings": cfg.readings.as_dict(),
        "deadline": cfg.deadline,
        "validate": cfg.validate,
        "agent": cfg.argv,
        # what stood behind the agent: a replay sets up the same
        "profile": cfg.profile,
        "profile_package": cfg.profile_package,
        "model_api": cfg.model_api,
        "session_config": [[m, p] for m, p in cfg.session_config],
        "auth_method": cfg.auth_method,
        "client": (cfg.client or BARE).to_json(),  # the editor played: a replay plays it too
    }


def write_out_dir(result: FuzzResult, out: Path) -> dict[str, dict[str, str]]:
    """Write the per-failure files, and each warning's first sighting under ``warnings/``;
    returns rule (``warn:RULE[:check]`` for a warning) -> file names for the report."""
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, str]] = {}
    for found in result.recorder.found.values():
        files[found.rule] = _write_case(out / found.rule, found, result.cfg, replay=True)
    for key, found in result.recorder.warning_seen.items():
        name = _warning_name(key)
        files[f"warn:{name}"] = _write_case(out / "warnings" / name.replace(":", "-"), found,
                                            result.cfg, replay=False)
    return files


def _warning_name(key: tuple[str, str | None]) -> str:
    rule, check = key
    return rule if check is None else f"{rule}:{check}"


def _write_case(folder: Path, found: Found, cfg: FuzzConfig, *, replay: bool
                ) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    records, _ = counterexample_records(found)
    with (folder / "transcript.jsonl").open("w", encoding="utf-8") as fh:
        for obj in numbered_lines(records, record_numbers(found), GAP_NOTE):
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
    text = "counterexample.txt" if replay else "warning.txt"
    (folder / text).write_text(counterexample_text(found, cfg), encoding="utf-8")
    (folder / "sequence.mmd").write_text(sequence_text(found), encoding="utf-8")
    names = ["transcript.jsonl", text, "sequence.mmd"]
    if replay:
        (folder / "replay.json").write_text(
            json.dumps(replay_document(found, cfg), indent=2) + "\n", encoding="utf-8")
        names.append("replay.json")
        if found.schedule is not None:
            (folder / SCHEDULE_FILE).write_text(json.dumps(found.schedule.to_json()) + "\n",
                                                encoding="utf-8")
            names.append(SCHEDULE_FILE)
    return {name: str(folder / name) for name in names}


def fuzz_report(result: FuzzResult, files: dict[str, dict[str, str]] | None = None
                ) -> dict[str, Any]:
    """The checker's report, extended with the run and its counterexamples."""
    rec, cfg, files = result.recorder, result.cfg, files or {}
    oracles = _oracles(result)
    violations: list[dict[str, Any]] = []
    for found in rec.found.values():
        v = {**found.violation.to_json(), "seen": found.seen}
        if not found.stands:  # a warning: what a shared process showed once, or a proof
            # resting on the agent's handling of a deliberate breach
            v.update(level=Level.WARN, message=f"{v['message']} ({warning_text(found)})",
                     **({"standing": Standing.SHARED_ONLY}
                        if found.standing == Standing.SHARED_ONLY else {}))
        violations.append(v)
    for key, v in rec.warnings.items():
        w = {**v.to_json(), "seen": rec.warning_counts[key]}
        if f"warn:{_warning_name(key)}" in files:
            w["files"] = files[f"warn:{_warning_name(key)}"]
        violations.append(w)
    stats = merge_stats(o.rule_stats() for o in oracles)
    for found in rec.found.values():  # failures seen at initialize count even if no monitor kept
        st = stats[found.rule]
        st.violations = max(st.violations, 1) if found.stands else st.violations
        st.exercised = max(st.exercised, 1)
    transitions: dict[str, int] = defaultdict(int)
    for oracle in oracles:
        for key, n in oracle.transition_counts().items():
            transitions[key] += n
    report = build_report(
        command="fuzz", source=" ".join(cfg.argv), readings=cfg.readings,
        violations=violations, stats=stats, summary=_summary(result),
        spec=cfg.decision.to_json() if cfg.decision is not None else None,
        extra={
            "counterexamples": [_counterexample(f, files.get(f.rule, {}))
                                for f in rec.found.values()],
            "transitions": dict(sorted(transitions.items())),
            "config": _config(cfg), "unusable": result.unusable, "problem": result.problem,
            "notes": result.notes, "coverage": rec.coverage_report(),
            "reach": reach_json(rec.reach), "agent_info": rec.agent_info,
            # the editor the client played, and the requests its capabilities had it serve
            "client": {**(cfg.client or BARE).to_json(), "served": dict(rec.served)},
            # the agent's own coverage of its ACP layer (--coverage; None: not measured)
            "coverage_agent": result.agent_coverage.to_json()
            if result.agent_coverage is not None else None,
        })
    if not result.judged:
        # Nothing the agent did was judged (usage, environment, an agent that could not be
        # started on its way, a run interrupted before its first example): no verdict is owed
        # to it, and none is made up here.
        report["verdict"] = "error"
    return report


def _counterexample(found: Found, files: dict[str, str]) -> dict[str, Any]:
    """A failure's counterexample as the report states it (docs/reports.md): its rates held
    to the recorded schedule and free-running, how far minimizing got, and whether it stands
    on a fresh process."""
    return {
        "rule": found.rule,
        "message": found.violation.message,
        "actions": [a.to_json() for a in found.actions],
        "steps": len(found.actions),
        "reproduced": found.reproduced,
        "replays": found.replays,
        "reproduction": f"{found.reproduced}/{found.replays}" if found.replays
        else "not replayed",
        "free_reproduced": found.free_reproduced,
        "free_replays": found.free_replays,
        # the held replays held the agent's wall clock too (fuzzing/clock.py)
        "clock": found.clock_held,
        # replays in which the agent failed on its own, beside the rates (fuzzing/inconclusive.py)
        "inconclusive": found.inconclusive,
        "free_inconclusive": found.free_inconclusive,
        "inconclusive_why": found.inconclusive_why,
        "inconclusive_reasons": found.inconclusive_reasons,
        "verified": found.verified,
        "minimize": found.minimize,
        "minimize_cut": found.minimize_cut,
        "standing": found.standing,
        "seen_fresh": found.seen_fresh,  # the run's own first example on its process
        # the message number where the transcript's teardown began: what the client wrote
        # from there on (cancels, answers, syncs) is not one of the program's actions
        **({"teardown_at": t} if (t := replay_teardown(found)) is not None else {}),
        "first_seen_s": round(found.first_seen, 3),
        "minimal_at_s": round(found.minimal_at, 3),
        "times_seen": found.seen,
        "notes": found.notes,
        "files": files,
    }


def _oracles(result: FuzzResult) -> list[OracleQueries]:
    """What the report asks of each process's finished monitor."""
    return [MonitorQueries(m) for m in result.monitors]


def _summary(result: FuzzResult) -> dict[str, Any]:
    rec, oracles = result.recorder, _oracles(result)
    return {
        "examples": rec.examples,
        "actions": rec.actions,
        "seconds": round(result.seconds, 3),
        "actions_per_second": round(result.actions_per_second, 1),
        "agent_processes": max(1, len(oracles)),
        "restarts": rec.restarts,
        "messages": sum(o.judged() for o in oracles),
        "sessions": sum(o.sessions_judged() for o in oracles),
        "interrupted": result.interrupted,
        "phases": result.phases,
    }


def _config(cfg: FuzzConfig) -> dict[str, Any]:
    return {"max_examples": cfg.max_examples, "steps": cfg.steps, "seed": cfg.seed,
            "time_budget": cfg.time_budget,
            "time_slack": slack(cfg.time_budget) if cfg.time_budget else None,
            "deadline": cfg.deadline, "isolate": cfg.isolate, "validate": cfg.validate,
            "replay_runs": cfg.replay_runs}


def _program_view(actions: Sequence[Any], reproduced: int, replays: int,
                  replay_file: str | None, minimal: bool | None = None,
                  steps: Sequence[str] | None = None) -> dict[str, Any]:
    """A counterexample's steps (``steps``: its lines as the run shown wrote them, else the
    plain program), what they may be called and how to replay them: the :class:`Case`
    fields a run's page and a merged page draw alike."""
    return {"steps": [*(steps if steps is not None else Program.of(actions).describe()),
                      "teardown: cancel what is still busy, answer open permissions, sync"],
            "steps_title": counterexample_name(reproduced, replays, minimal).capitalize(),
            "command": f"acp-model replay {replay_file} --runs 5" if replay_file else
            "acp-model fuzz ... --out DIR writes DIR/<rule>/replay.json for acp-model replay"}


def found_case(found: Found, cfg: FuzzConfig, replay_file: str | None = None) -> Case:
    """A distinct failure as the HTML page draws it: its minimal counterexample's transcript
    with the offending record and the proof's records marked."""
    records, offending = counterexample_records(found)
    numbers = record_numbers(found)
    position = {number: pos for pos, number in enumerate(numbers)}
    v = found.violation.to_json()
    marks = {position[e["index"]]: e["role"] for e in v.get("evidence") or []
             if e.get("index") in position}
    marks[offending] = OFFENDING
    rule = RULES[found.rule]
    facts = [("statement", rule.statement), ("source", rule.citation_in(cfg.readings.revision)),
             ("reproduced", reproduction_text(found)),
             *([("minimizing", m)] if (m := minimize_text(found)) else []),
             *([("standing", warning_text(found))] if not found.stands else []),
             *[("deliberate breach", line) for line in found.breaches()[0]],
             ("first seen", f"after {found.first_seen:.2f} s; minimal after "
                            f"{found.minimal_at:.2f} s; seen {found.seen} time(s)"),
             *violation_facts(v)]
    facts += [("note", n) for n in found.notes]
    return Case(title=f"{rule.id} ({strength_shown(rule.id, rule.strength_under(cfg.readings))})",
                level=Level.FAIL if found.stands else Level.WARN,
                message=found.violation.message, records=records, marks=marks,
                numbers=numbers, facts=facts, rule=rule.id,
                **_program_view(found.actions, found.reproduced, found.replays, replay_file,
                                _minimal(found), program_lines(
                                    found.actions, records, numbers, found.schedule,
                                    cfg.readings.as_dict())))


def _minimal(found: Found) -> bool | None:
    """Whether ``found``'s program may be called minimal (:func:`proven_minimal`: the
    fixpoint's own program, reproducing at least half of its replays)."""
    return proven_minimal(found.minimize, len(found.actions), *_found_rate(found))


def _found_rate(found: Found) -> tuple[int, int]:
    if found.replays:
        return found.reproduced, found.replays
    return found.free_reproduced, found.free_replays


def sarif_locations(result: FuzzResult, files: dict[str, dict[str, str]] | None = None
                    ) -> dict[int, Located]:
    """Where each violation of :func:`fuzz_report` shows, in its order (failures, then
    warnings): the counterexample's text, and with ``--out`` its transcript file and the
    offending message's line there (one record per line, and a line for each gap before
    it)."""
    rec, cfg = result.recorder, result.cfg
    cases: list[tuple[Found | None, dict[str, str]]] = [
        (found, (files or {}).get(found.rule, {})) for found in rec.found.values()]
    for key in rec.warnings:
        name = f"warn:{_warning_name(key)}"
        cases.append((rec.warning_seen.get(key), (files or {}).get(name, {})))
    out: dict[int, Located] = {}
    for n, (found, names) in enumerate(cases):
        if found is None:
            continue
        _, offending = counterexample_records(found)
        numbers = record_numbers(found)
        gaps = sum(numbers[k] > (numbers[k - 1] + 1 if k else 0) for k in range(offending + 1))
        path = names.get("transcript.jsonl")
        out[n] = Located(path, offending + 1 + gaps if path else None,
                         counterexample_text(found, cfg))
    return out


def fuzz_html(result: FuzzResult, report: dict[str, Any],
              files: dict[str, dict[str, str]] | None = None) -> str:
    cases = [found_case(f, result.cfg, (files or {}).get(f.rule, {}).get("replay.json"))
             for f in result.recorder.found.values()]
    cases += cases_from_violations([v for v in report["violations"]
                                    if v.get("level") != Level.FAIL], ())
    first = next(iter(result.recorder.found.values()), None)
    transcript = None
    if first is not None:
        case = cases[0]
        name = counterexample_name(first.reproduced, first.replays,
                                   _minimal(first))
        transcript = Transcript(case.records, numbers=case.numbers, marks=case.marks,
                                caption=f"the {name} of {first.rule}")
    return render_html(report, cases=cases, transcript=transcript,
                       coverage=report.get("coverage"))


def merged_html(report: dict[str, Any]) -> str:
    """The page of merged reports (``fuzz --jobs``, ``acp-model merge``): each failure with the
    client actions of the counterexample the merge kept, its reproduction and replay command
    (the failure is that worker's: its record numbers are of the same run). The transcript
    stays in the worker's ``--out`` folder, named among the facts."""
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    cases = []
    for v in sorted(report["violations"], key=finding_order):
        (case,) = cases_from_violations([v], ())
        ce = kept.get(v["rule"]) if v.get("level") == Level.FAIL else None
        if ce is not None:
            files = ce.get("files") or {}
            facts = [("reproduced", in_fresh(rates_phrase(ce))),
                *case.facts]
            facts += [("transcript", files["transcript.jsonl"])] \
                if "transcript.jsonl" in files else []
            facts += [("note", str(n)) for n in ce.get("notes") or []]
            case = replace(case, facts=facts, **_program_view(
                ce.get("actions") or [], int(ce.get("reproduced") or 0),
                int(ce.get("replays") or 0), files.get("replay.json"),
                proven_minimal(ce.get("minimize"), len(ce.get("actions") or []),
                               *measured(ce))))
        cases.append(case)
    return render_html(report, cases=cases)
