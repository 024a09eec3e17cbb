"""What the recorded schedule pins around a failure, in one line a maintainer reads beside
"reproduced 6/6 under the recorded schedule, 0/6 free-running".

A replay held to a schedule (``fuzzing/hold.py``) issues each of our inputs (a client write, a
release of the scripted model) only once the agent's outputs that preceded it in the
recording have come. Those are the schedule's wait edges; free-running, nothing but the
client's own waits orders our inputs against the agent's timing. So what the held replays
kept and free running may not is the wait edges of the inputs just before the offending
message: each input from the client's last write of an action before it, with the agent's
output it waited for (the latest essential one before it: a response, a request, a model
call, an update that starts or ends something, never a count of chunks) and how soon after
it the recording issued it. The transcript's records are named as the schedule names them
(``fuzzing/crossings.Names``) and matched to its events by key, so the line cites the
transcript's message numbers. Nothing here is per rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_model.fuzzing.crossings import Names
from acp_model.fuzzing.schedule import Boundary, Crossed, Crossing, Schedule, read_schedule
from acp_model.trace.format import TraceError, numbers_of, read_trace

MAX_SHOWN = 10  # events told in a line: the first two and those nearest the offending one


def matched(schedule: Schedule, records: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """Transcript position -> schedule index, for the records named as a schedule event is
    (boundary, what, session and cause by the events they refer to), each matched to the
    first event of the same key not matched yet."""
    names, mine = Names(), []
    to_schedule: dict[int, int] = {}  # our event index -> schedule index
    out: dict[int, int] = {}
    free = list(range(len(schedule.events)))

    def ref(i: int | None) -> int | None:
        return i if i is None or i < 0 else to_schedule.get(i, -2)  # -2: matches nothing

    for pos, record in enumerate(records):
        named = names.of(record)
        if named is None:
            continue
        event = Crossing(named.boundary, named.what, named.session, named.cause,
                      by_action=named.by_action)
        index = len(mine)
        mine.append(event)
        names.learn(index, event, record, mine)
        want = (event.boundary, event.what, ref(event.session), ref(event.cause))
        for n, k in enumerate(free):
            e = schedule.events[k]
            if (e.boundary, e.what, e.session, e.cause) == want:
                to_schedule[index] = k
                out[pos] = k
                del free[n]
                break
    return out


def window(schedule: Schedule, offending: int) -> list[int]:
    """The schedule's events a reader needs to see the order held before the offending
    event: from the agent output that the last program action's first write followed (its
    wait edge), through that action's and the teardown's inputs and the agent's outputs, to
    the offending event; the agent's counts of chunks, its soft updates and the client's
    looks left out."""
    events = schedule.events
    last = next((events[k].action for k in range(offending - 1, -1, -1)
                 if events[k].boundary is Boundary.WRITE and events[k].by_action
                 and events[k].action is not None and events[k].action < schedule.actions),
                None)
    if last is None:
        return []
    first = next(k for k in range(offending) if events[k].boundary is Boundary.WRITE
                 and events[k].by_action and events[k].action == last)
    edge = next((j for j in range(first - 1, -1, -1) if _told(events, j)
                 and not events[j].boundary.ours), None)
    begin = first if edge is None else edge
    return [k for k in range(begin, offending + 1) if _told(events, k)]


def _told(events: Sequence[Crossing], k: int) -> bool:
    """An event the line names: a write of the program or of its teardown, a release of the
    model, or an agent output that is part of the branch (a response, a request, a model
    call, an update that starts or ends something); not what the client's session factory
    writes ahead of need (a spare session and its configuration), nor its answers."""
    e = events[k]
    if e.boundary is Boundary.LOOK or (e.boundary is Boundary.WRITE and not e.by_action):
        return False
    if e.boundary is Boundary.MESSAGE and e.cause is not None and 0 <= e.cause < k \
            and events[e.cause].boundary is Boundary.WRITE and not events[e.cause].by_action:
        return False
    return e.boundary.ours or (e.essential and not e.soft)


def held_line(schedule: Schedule, records: Sequence[Mapping[str, Any]],
              numbers: Sequence[int], index: int) -> str | None:
    """One line: the order of our inputs and the agent's outputs the held replays kept
    before message ``index`` (None: the offending message is not in the schedule, or no
    program action wrote before it)."""
    where = matched(schedule, records)
    position = {n: pos for pos, n in enumerate(numbers)}
    if index not in position or position[index] not in where:
        return None
    number = {k: numbers[pos] for pos, k in where.items()}
    offending = where[position[index]]
    # an event the transcript shows after the offending message is no part of its cause
    shown = [k for k in window(schedule, offending) if number.get(k, index) <= index]
    if len(shown) < 3:
        return None
    events = schedule.events
    told: list[str] = []
    k = 0
    while k < len(shown):
        e = events[shown[k]]
        run = k + 1  # a model step's parts released one after another are one input
        while e.boundary is Boundary.RELEASE and run < len(shown) \
                and events[shown[run]].boundary is Boundary.RELEASE \
                and events[shown[run]].what[:3] == e.what[:3]:
            run += 1
        words = _words(schedule, shown[k], number, shown[k:run])
        if e.boundary.ours and k > 0:
            words += f" {_ms(max(0.0, e.t - events[shown[k - 1]].t) * 1000)} later"
        told.append(words)
        k = run
    if len(told) > MAX_SHOWN:
        told = [*told[:2], "...", *told[-(MAX_SHOWN - 2):]]
    return ("Held to the recorded schedule, a replay keeps this order of the client's "
            "writes and the scripted model's releases against the agent's messages (the "
            "gaps are the recording's: a held replay keeps the order, and the transcript "
            "below is of the replay shown): "
            + "; ".join(told) + ". Free-running, only the client's own waits order them.")


def _ms(ms: float) -> str:
    if ms < 0.1:
        return "under 0.1 ms"
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


# an agent message's kind in words
_KINDS = {Crossed.RESPONSE: "answer", Crossed.REQUEST: "request", Crossed.NOTIFY: "notification"}


def _words(schedule: Schedule, k: int, number: Mapping[int, int],
           parts: Sequence[int] = ()) -> str:
    """Crossing ``k`` in words, with its transcript number where it has one (``parts``: a
    release's run of the same model step, ``k`` first)."""
    e = schedule.events[k]
    n = f" #{number[k]}" if k in number else ""
    place = e.place(schedule.actions)
    act = "" if place is None else f" ({place})"
    cause = schedule.events[e.cause] if e.cause is not None \
        and 0 <= e.cause < len(schedule.events) else None
    asked = f" to {cause.what[1]}{_number(e.cause, number)}" if cause is not None \
        and cause.kind is Crossed.REQUEST and len(cause.what) > 1 else ""
    if e.boundary is Boundary.WRITE:
        what = e.what[1] if len(e.what) > 1 else " ".join(e.what)
        return f"the client's {what}{n}{act if e.by_action else ''}"
    if e.boundary is Boundary.RELEASE:
        step = e.what[1] if len(e.what) > 1 else "?"
        said = [schedule.events[j].what[3] for j in parts if len(schedule.events[j].what) > 3]
        return f"the scripted model's reply of step {step} ({', '.join(said)})" \
            if len(said) > 1 else f"the scripted model's {''.join(said) or 'release'} of " \
                                  f"step {step}"
    if e.boundary is Boundary.REQUEST:
        step = e.what[1] if len(e.what) > 1 else "?"
        turn = f" for session/prompt{_number(e.cause, number)}" if e.cause in number else ""
        return f"the agent's call of the model{turn} (step {step})"
    if e.boundary is Boundary.HANGUP:
        return "the agent's hang-up on the model"
    kind = _KINDS.get(e.kind, " ".join(e.what))
    if e.kind is Crossed.UPDATE:
        kind = f"{e.what[1]} update" if len(e.what) > 1 else "update"
    elif e.kind in (Crossed.REQUEST, Crossed.NOTIFY) and len(e.what) > 1:
        kind = f"{e.what[1]} {kind}"
    elif e.kind is Crossed.RESPONSE and e.what[1:] == ("error",):
        kind = "error answer"
    return f"the agent's {kind}{n}{asked}"


def _number(k: int | None, number: Mapping[int, int]) -> str:
    return f" #{number[k]}" if k is not None and k in number else ""


def held_in_files(schedule_file: Path, transcript: Path, index: Any) -> str | None:
    """:func:`held_line` for a failure's files (None: one is missing or unreadable)."""
    if not transcript.is_file():
        return None
    try:
        trace = read_trace(transcript)
    except (OSError, ValueError, TraceError):
        return None
    return held_beside(schedule_file, [r.to_json() for r in trace], numbers_of(trace), index)


def held_beside(schedule_file: Path, records: Sequence[Mapping[str, Any]],
                numbers: Sequence[int], index: Any) -> str | None:
    """:func:`held_line` for a transcript already read, held to the schedule file beside it
    (None: it is missing or unreadable)."""
    schedule = read_schedule(schedule_file) if isinstance(index, int) else None
    return None if schedule is None else held_line(schedule, records, numbers, index)
