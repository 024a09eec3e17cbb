"""A re-judged failure's ``counterexample.txt`` and ``sequence.mmd``, rewritten from the
current verdict, so the file beside an issue never contradicts it.

Re-judging (``matrix --rejudge``) changes a finding's words (its message, proof, strength,
source) and may lower it to a warning; the files the run wrote beside it said the run's.
Everything else the text says is the run's record, read back from the files beside it: the
program (``replay.json``), the wire (``transcript.jsonl``, with the notes of its gaps), the
rates and minimizing (the row's ``report.json``), and the scripted model's side of the replay
shown, which only the file being replaced holds (its ``model:`` lines are carried over).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import ActionError, from_json
from acp_model.fuzzing.artifacts import (
    SHARED_ONLY,
    Shown,
    in_fresh,
    minimize_words,
    render_shown,
)
from acp_model.fuzzing.held import held_beside
from acp_model.fuzzing.unsent import schedule_beside
from acp_model.report.breaches import breach_words
from acp_model.report.text import measured, proven_minimal, rates_phrase
from acp_model.spec.levels import Level, Standing, reported_standing
from acp_model.spec.rules import RULES, strength_shown
from acp_model.trace.format import GAP, TraceError, numbers_of, read_trace
from acp_model.trace.sequence import sequence_diagram

TEXT = "counterexample.txt"
ISSUE = "issue.md"  # the issue body beside a failure (matrix/bugs.py writes it)
_RECORD = re.compile(r"^(?:>>|  ) #(\d+)\s")
_MODEL = re.compile(r"^ {9}model: ")


def model_lines(old: str, numbers: list[int]) -> dict[int, list[str]]:
    """The ``model:`` lines of a counterexample text, by the position of the record they
    came before (those after the last record: at the end)."""
    position = {n: pos for pos, n in enumerate(numbers)}
    out: dict[int, list[str]] = {}
    waiting: list[str] = []
    for line in old.splitlines():
        if _MODEL.match(line):
            waiting.append(line)
        elif (m := _RECORD.match(line)) and waiting:
            out.setdefault(position.get(int(m.group(1)), len(numbers)), []).extend(waiting)
            waiting = []
    if waiting:
        out.setdefault(len(numbers), []).extend(waiting)
    return out


def _gap_notes(transcript: Path) -> dict[int, str]:
    """What each gap of a transcript file left out, by its first number."""
    notes: dict[int, str] = {}
    for line in transcript.read_text(encoding="utf-8").splitlines():
        if GAP in line:
            obj = json.loads(line)
            if isinstance(obj, dict) and isinstance(obj.get(GAP), list):
                notes[int(obj[GAP][0])] = str(obj.get("note") or "")
    return notes


def _demoted(v: Mapping[str, Any], ce: Mapping[str, Any]) -> str | None:
    """Why a finding the run failed is a warning now (None: it still fails)."""
    if v.get("level") == Level.FAIL:
        return None
    if reported_standing(ce) == Standing.SHARED_ONLY:
        return (f"{SHARED_ONLY} in a fresh process: reported as a warning, with the proof the "
                "shared process gave")
    return str(v.get("rejudged") or "the current code judges it a warning (what went wrong "
                                    "says why)")


def rewrite(v: Mapping[str, Any], ce: Mapping[str, Any], revision: str,
            decided: str | None) -> bool:
    """Rewrite the ``counterexample.txt`` and ``sequence.mmd`` beside the re-judged finding
    ``v`` (its ``files``) from its verdict now and the run's counterexample ``ce``; False when
    its files cannot be read (left as they are)."""
    files = v.get("files") or {}
    if TEXT not in files or "transcript.jsonl" not in files or "replay.json" not in files:
        return False
    text, transcript = Path(files[TEXT]), Path(files["transcript.jsonl"])
    try:
        trace = read_trace(transcript)
        replay = json.loads(Path(files["replay.json"]).read_text(encoding="utf-8"))
        actions = [from_json(a) for a in replay.get("actions") or []]
        old = text.read_text(encoding="utf-8") if text.is_file() else ""
        gaps = _gap_notes(transcript)
    except (OSError, ValueError, TraceError, ActionError):
        return False
    records, numbers = [r.to_json() for r in trace], numbers_of(trace)
    index = v.get("index")
    if index not in numbers:
        return False
    rule = str(v["rule"])
    cited = [int(index), *(int(e["index"]) for e in v.get("evidence") or []
                           if isinstance(e.get("index"), int))]
    hits, runs = measured(ce)
    shown = Shown(
        rule=rule, strength=strength_shown(rule, str(v.get("strength") or RULES[rule].strength)),
        warning=v.get("level") != Level.FAIL, source=RULES[rule].citation_in(revision),
        revision=revision, decided=decided, argv=list(replay.get("agent") or []),
        replayed=True, reproduction=in_fresh(rates_phrase(ce)),
        verified=bool(ce.get("verified", True)), demoted=_demoted(v, ce),
        minimized=minimize_words(ce.get("minimize"), len(actions), hits, runs),
        minimal=bool(ce.get("verified", True)) and bool(proven_minimal(
            ce.get("minimize"), len(actions), hits, runs)),
        message=str(v.get("message") or ""), cited=cited, actions=actions, records=records,
        numbers=numbers, offending=numbers.index(index), teardown=ce.get("teardown_at"),
        model=model_lines(old, numbers), gaps=gaps,
        breaches=breach_words(records, numbers, index, cited[1:])[0],
        notes=list(ce.get("notes") or []),
        held=None if v.get("level") != Level.FAIL or not isinstance(replay.get("schedule"), str)
        else held_beside(Path(files["replay.json"]).parent / replay["schedule"], records,
                         numbers, index),
        schedule=schedule_beside(Path(files["replay.json"]), replay),
        readings=dict(replay.get("readings") or {}))
    text.write_text(render_shown(shown), encoding="utf-8")
    if "sequence.mmd" in files:
        Path(files["sequence.mmd"]).write_text(sequence_diagram(
            records, {shown.offending: f"{rule}: {shown.message}"}, numbers=numbers),
            encoding="utf-8")
    return True
