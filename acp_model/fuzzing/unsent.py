"""What each action of a program put on the wire, read from what the run recorded.

A program line reads as a message sent ("7. prompt s1: ..."), but an action may write less
than its words: under reading A-01=forbid a prompt is not sent while one is open on its session
(``Prompt.perform``), an interrupt then writes only its cancel, and an answer to a permission
request that never came only waits (the s12 reader: kilo's 24-action program had 11 actions
with no message; mistral-vibe's "answer permission s1: allow" answered nothing and only kept
the teardown's cancel away). The counterexample, the issue body and the page's program say
so on the action's line (``Action.unsent``), from the transcript's action stamps (which action
wrote each client message), the spares the actions took, and the schedule's looks (how long
an action waited): never from a guess, and nothing where the run did not record it (a
transcript without stamps, a shared process's excerpt, one of another program).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_model.fuzzing.actions import Action, ActionError, Wrote
from acp_model.fuzzing.program import Program
from acp_model.fuzzing.schedule import Boundary, Schedule, read_schedule
from acp_model.llm.wire import find_tag, tag_text
from acp_model.trace.authors import Part, author_of
from acp_model.trace.format import TAKEN, TraceError, numbers_of, read_trace, takes_of

__all__ = ["program_in_files", "program_lines", "schedule_beside", "wrote_by_action"]

FORBID = ("A-01", "forbid")  # the reading under which the client holds a prompt back


def program_lines(actions: Sequence[Action | Mapping[str, Any]],
                  records: Sequence[Mapping[str, Any]] = (), numbers: Sequence[int] = (),
                  schedule: Schedule | None = None,
                  readings: Mapping[str, Any] | None = None) -> list[str]:
    """The program in words, one line per action, each action that put less on the wire
    than its words say marked so ("prompt s1: ... (not sent: prompt #17 on s1 was still
    open, A-01=forbid)"); plain lines where the run shown recorded no action stamps."""
    program = Program.of(actions)
    lines = program.describe()
    wrote = wrote_by_action(program, records, numbers, schedule,
                            (readings or {}).get(FORBID[0]) == FORBID[1])
    if wrote is None:
        return lines
    for k, (action, label) in enumerate(zip(program, program.labels(), strict=True)):
        if wrote[k] is not None:
            lines[k] = action.sent_line(wrote[k], label)
    return lines


def schedule_beside(replay_file: Path, replay: Mapping[str, Any]) -> Schedule | None:
    """The schedule a replay file names, beside it (None: none, or unreadable)."""
    name = replay.get("schedule")
    return read_schedule(replay_file.parent / name) if isinstance(name, str) else None


def program_in_files(replay_file: Path, transcript: Path | None = None) -> list[str] | None:
    """:func:`program_lines` of a failure's files: its replay file's program, marked from
    the transcript and the schedule beside it (None: no readable replay file)."""
    try:
        replay = json.loads(replay_file.read_text(encoding="utf-8"))
        actions = replay.get("actions") or []
        program = Program.of(actions)
    except (OSError, ValueError, AttributeError, ActionError):
        return None
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    if transcript is not None and transcript.is_file():
        try:
            trace = read_trace(transcript)
            records, numbers = [r.to_json() for r in trace], numbers_of(trace)
        except (OSError, ValueError, TraceError):
            pass
    return program_lines(list(program), records, numbers,
                         schedule_beside(replay_file, replay),
                         replay.get("readings") if isinstance(replay.get("readings"), dict)
                         else None)


def wrote_by_action(program: Program, records: Sequence[Mapping[str, Any]],
                    numbers: Sequence[int], schedule: Schedule | None, forbid: bool
                    ) -> list[Wrote | None] | None:
    """Per action, what it wrote in the transcript shown (None for an action the run may not
    have reached: nothing was written after it and the schedule has no look of it); None
    when the transcript cannot say (no action stamps, an excerpt, another program's)."""
    n = len(program)
    stamps = [author_of(r) if r.get("dir") == "c2a" else None for r in records]
    acted = [a.n for a in stamps if a is not None and a.numbered and a.n is not None]
    if not acted or max(acted) > n or list(numbers) != list(range(len(records))):
        return None
    if schedule is not None and schedule.actions != n:
        schedule = None
    sids = _sessions(program, records, stamps)
    out: list[Wrote | None] = []
    for k in range(1, n + 1):
        later = next((pos for pos, a in enumerate(stamps) if a is not None and (
            a.part is Part.TEARDOWN or (a.numbered and a.n is not None and a.n > k))), None)
        looked = schedule is not None and any(
            e.boundary is Boundary.LOOK and e.by_action and e.action == k - 1
            for e in schedule.events)
        if later is None and not looked:
            out.append(None)
            continue
        methods = tuple(_method(records[pos]) for pos, a in enumerate(stamps)
                        if a is not None and a.numbered and a.n == k)
        waited = None if schedule is None else sum(
            e.waited for e in schedule.events
            if e.boundary is Boundary.LOOK and e.by_action and e.action == k - 1)
        # the client decided before its own first write, else before the next one's
        own = next((pos for pos, a in enumerate(stamps)
                    if a is not None and a.numbered and a.n == k), None)
        bound = own if own is not None else len(records) if later is None else later
        out.append(Wrote(methods, waited, _open_prompt(
            records, numbers, stamps, sids.get(program.labels()[k - 1]), k, bound), forbid,
            _tag_block(records, stamps, k)))
    return out


def _tag_block(records: Sequence[Mapping[str, Any]], stamps: Sequence[Any], k: int
               ) -> str | None:
    """The text of the block action ``k`` 's prompt carried first for the scripted turn's
    tag alone ("[acpm:50]", which the client adds to a prompt without text of its own), None:
    no such block, or no prompt."""
    for rec, author in zip(records, stamps, strict=True):
        msg = rec.get("msg")
        if author is None or not author.numbered or author.n != k or not isinstance(msg, dict) \
                or msg.get("method") != "session/prompt":
            continue
        params = msg.get("params")
        blocks = params.get("prompt") if isinstance(params, dict) else None
        first = blocks[0] if isinstance(blocks, list) and blocks else None
        text = first.get("text") if isinstance(first, dict) else None
        tag = find_tag(text) if isinstance(text, str) else None
        return text if tag is not None and text == tag_text(tag) else None
    return None


def _sessions(program: Program, records: Sequence[Mapping[str, Any]],
              stamps: Sequence[Any]) -> dict[str, str]:
    """Each session label of the program (" s1") -> the session id its actions wrote to (or
    the spare an action took)."""
    labels = program.labels()
    out: dict[str, str] = {}
    for rec, author in zip(records, stamps, strict=True):
        try:
            takes = takes_of(rec.get(TAKEN)) if TAKEN in rec else ()
        except TraceError:
            takes = ()
        for sid, action in takes:
            if 0 < action <= len(labels):
                out.setdefault(labels[action - 1], sid)
        if author is not None and author.numbered and author.n is not None \
                and 0 < author.n <= len(labels):
            sid = _sid(rec)
            if sid is not None:
                out.setdefault(labels[author.n - 1], sid)
    return out


def _open_prompt(records: Sequence[Mapping[str, Any]], numbers: Sequence[int],
                 stamps: Sequence[Any], sid: str | None, k: int, bound: int) -> int | None:
    """The message number of the last prompt an earlier action sent on session ``sid`` that
    no answer had reached before ``bound`` (action ``k``'s own first write, else the next
    write after it): the client's view showed it open when action ``k`` acted."""
    if sid is None:
        return None
    found = None
    for pos in range(bound):
        author, msg = stamps[pos], records[pos].get("msg")
        if author is None or not author.numbered or author.n is None or author.n >= k \
                or not isinstance(msg, dict) or msg.get("method") != "session/prompt" \
                or _sid(records[pos]) != sid:
            continue
        answered = any(r.get("dir") == "a2c" and isinstance(m := r.get("msg"), dict)
                       and "method" not in m and m.get("id") == msg.get("id")
                       for r in records[pos + 1:bound])
        if not answered:
            found = numbers[pos]
    return found


def _sid(record: Mapping[str, Any]) -> str | None:
    msg = record.get("msg")
    params = msg.get("params") if isinstance(msg, dict) else None
    sid = params.get("sessionId") if isinstance(params, dict) else None
    return sid if isinstance(sid, str) else None


def _method(record: Mapping[str, Any]) -> str:
    msg = record.get("msg")
    if isinstance(msg, dict):
        return str(msg.get("method") or "response")
    return "batch" if isinstance(msg, list) else "message"
