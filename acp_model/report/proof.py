"""The wire lines that prove a finding, numbered as its proof cites them.

A violation names the offending message (``index``) and the records its proof rests on
(``evidence``: message number and role). These are the lines a maintainer reads: each cited
record of the transcript with its number, direction, one-line description and role; records
between two cited ones are shown when there are few of them, otherwise a ``...`` line says how
many were skipped (the file has them all).

Each client line says which part of the client wrote it (``trace/authors.py``: an action and
its number, the handshake, a spare session made ahead, a reply its rules gave at once, the
teardown): a proof that rests on a spare's ``session/new`` or on the teardown's cancel must not
send its reader looking for it among the program's numbered actions. A transcript written
before the stamp existed names only the teardown, from the counterexample's ``teardown_at``:
what the client wrote from there on (its cancels, answers to open permissions and syncs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from acp_model.trace.authors import SPARE_WHY, WORDS, Author, Part, author_of
from acp_model.trace.describe import summarize
from acp_model.trace.format import TAKEN, Record, TraceError, numbers_of, read_trace, takes_of

BRIDGE = 3  # at most this many records between two cited ones are shown, not skipped
OFFENDING_ROLE = "the offending message"
TURN_STARTS_ROLE = "the turn starts after the error"


class TurnWord(StrEnum):
    """The words of a state update that starts a session's turn (a v2 revision's)."""

    KIND = "state_update"
    RUNNING = "running"
TEARDOWN_ROLE = WORDS[Part.TEARDOWN]


def writer_of(record: Record | Mapping[str, Any], number: int, teardown: int | None
              ) -> Author | None:
    """Which part of the client wrote ``record`` (message ``number``): its stamp, or, for a
    transcript without stamps, the teardown for what the client wrote from message
    ``teardown`` on (None: an agent message, or not known)."""
    if _direction(record) != "c2a":
        return None
    author = author_of(record)
    if author is not None:
        return author
    return Author(Part.TEARDOWN) if teardown is not None and number >= teardown else None


def by_teardown(record: Record | Mapping[str, Any], number: int, teardown: int | None) -> bool:
    """Whether the client wrote ``record`` (message ``number``) in the teardown (that began at
    message ``teardown``, for a transcript without stamps; None: not known)."""
    author = writer_of(record, number, teardown)
    return author is not None and author.part is Part.TEARDOWN


def unnumbered(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int],
               cited: Iterable[int], teardown: int | None) -> dict[Part, list[str]]:
    """The cited client messages no numbered action wrote, by the part that wrote them
    (``session/new #12``; a spare's ``session/new`` with its place among the client's: "the
    client's second session/new", the reading SESS-01's proof needs), in transcript order."""
    wanted = set(cited)
    out: dict[Part, list[str]] = {}
    news = 0  # the client's session/new requests so far (said of a whole transcript only)
    whole = list(numbers) == list(range(len(numbers)))
    for rec, n in zip(records, numbers, strict=True):
        method = _method(rec)
        news += method == "session/new" and _direction(rec) == "c2a"
        author = writer_of(rec, n, teardown) if n in wanted else None
        if author is not None and not author.numbered:
            where = f" (the client's {ordinal(news)} session/new)" \
                if whole and method == "session/new" and author.part is Part.SPARE else ""
            out.setdefault(author.part, []).append(f"{method} #{n}{where}")
    return out


def spare_messages(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int]
                   ) -> str:
    """The spare sessions' messages among ``records``, in words, each ``session/new`` with
    the action that took it (``"taken"``), else the first action that used its session
    ("session/new #2 (taken by action 1), session/set_mode #4 and session/new #7 (no action
    used it)"; "" for none)."""
    made: dict[Any, str] = {}  # request id of a spare's session/new -> its words' key
    sessions: dict[str, str] = {}  # session id -> that key
    used: dict[str, int] = {}  # key -> the first action that named its session
    taken: dict[str, int] = {}  # key -> the action that took its session
    acts: list[str] = []
    for rec, n in zip(records, numbers, strict=True):
        for sid, action in _takes(rec):
            if sid in sessions:
                taken.setdefault(sessions[sid], action)
        msg = rec.msg if isinstance(rec, Record) else rec.get("msg")
        if not isinstance(msg, dict):
            continue
        author = writer_of(rec, n, None)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        if author is not None and author.part is Part.SPARE:
            acts.append(f"{_method(rec)} #{n}")
            if msg.get("method") == "session/new":
                made[msg.get("id")] = acts[-1]
        elif _direction(rec) == "a2c" and "method" not in msg and msg.get("id") in made:
            result = msg.get("result")
            if isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                sessions[result["sessionId"]] = made[msg["id"]]
        elif author is not None and author.numbered and author.n is not None:
            key = sessions.get(params.get("sessionId"))
            if key is not None:
                used.setdefault(key, author.n)
    words = [f"{a} (taken by action {taken[a]})" if a in taken
             else f"{a} (used from action {used[a]} on)" if a in used
             else f"{a} (no action used it)" if a in made.values() else a for a in acts]
    return _listed(words) if words else ""


def _takes(record: Record | Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """The spares the client's actions took before ``record`` (``trace/format.py``)."""
    if isinstance(record, Record):
        return record.taken
    try:
        return takes_of(record.get(TAKEN)) if TAKEN in record else ()
    except TraceError:
        return ()


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth")


def ordinal(n: int) -> str:
    """``1`` -> "first" ... (then "11th", "12th" ...)."""
    return ORDINALS[n - 1] if 0 < n <= len(ORDINALS) else f"{n}th"


def _listed(acts: list[str]) -> str:
    if not acts:
        return ""
    return acts[0] if len(acts) == 1 else f"{', '.join(acts[:-1])} and {acts[-1]}"


def teardown_acts(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int],
                  cited: Iterable[int], teardown: int | None) -> str:
    """The cited messages the teardown wrote, in words ("the teardown's session/cancel #18
    and sync #20 (after the program's last action, not numbered actions)"; "" for none)."""
    acts = unnumbered(records, numbers, cited, teardown).get(Part.TEARDOWN)
    if not acts:
        return ""
    return (f"the teardown's {_listed(acts)} (written after the program's last action: the "
            "client ending the turns still open, not one of the numbered actions)")


def unnumbered_acts(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int],
                    cited: Iterable[int], teardown: int | None) -> list[str]:
    """Each cited client message no numbered action wrote, in words, one phrase per part
    ("session/new #12: a spare session the client made ahead, not one of the program's
    actions"; the teardown's as :func:`teardown_acts` words it)."""
    out = []
    for part, acts in unnumbered(records, numbers, cited, teardown).items():
        if part is Part.TEARDOWN:
            out.append(teardown_acts(records, numbers, cited, teardown))
        else:
            out.append(f"{_listed(acts)}: {WORDS[part]}")
    return out


def _direction(record: Record | Mapping[str, Any]) -> Any:
    return record.dir if isinstance(record, Record) else record.get("dir")


def _method(record: Record | Mapping[str, Any]) -> str:
    """A client message's method, or what it answers ("response")."""
    msg = record.msg if isinstance(record, Record) else record.get("msg")
    if isinstance(msg, dict):
        return str(msg.get("method") or "response")
    return "batch" if isinstance(msg, list) else "message"


NAMED_ROLE = "named in what happened"
_NUMBER = re.compile(r"#(\d+)\b")


def named_in(message: str) -> list[int]:
    """The message numbers a finding's sentence names ("response #8 to session/new #4"), in
    order, each once."""
    return list(dict.fromkeys(int(n) for n in _NUMBER.findall(message)))


def proof_evidence(violation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The records a finding's proof block shows: its evidence (each with its role), then
    every other message its sentence or its ``related`` list names (the client message it
    answers or is judged against: a batch, a notification, a first use of an id, a
    withdrawal), none of them the offending message itself."""
    evidence = [dict(e) for e in violation.get("evidence") or []]
    have = {e.get("index") for e in evidence} | {violation.get("index")}
    named = [*named_in(str(violation.get("message") or "")),
             *(n for n in violation.get("related") or [] if isinstance(n, int))]
    for n in dict.fromkeys(named):
        if n not in have:
            evidence.append({"index": n, "role": NAMED_ROLE})
    return sorted(evidence, key=lambda e: e["index"])


def cited(index: Any, evidence: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Message number -> role, the offending message last among equals."""
    roles = {int(e["index"]): str(e.get("role") or "") for e in evidence
             if isinstance(e.get("index"), int)}
    if isinstance(index, int):
        roles[index] = OFFENDING_ROLE
    return roles


def proof_lines(records: Sequence[Record | dict[str, Any]], index: Any,
                evidence: Sequence[Mapping[str, Any]], teardown: int | None = None
                ) -> list[str]:
    """``#N  C->A  description  <- role`` for each cited record (``>>`` before the offending
    one), with short stretches between them and a skip line for long ones; what the client
    wrote is marked with the part of it that wrote it (from message ``teardown`` on: the
    teardown's, in a transcript without stamps)."""
    numbers = numbers_of(records)
    roles = cited(index, evidence)
    roles.update(turn_starts(records, numbers, roles, index))
    at = [pos for pos, n in enumerate(numbers) if n in roles]
    if not at:
        return []
    shown: list[int] = []
    for a, b in zip(at, [*at[1:], None], strict=True):
        shown.append(a)
        if b is not None and b - a - 1 <= BRIDGE:
            shown.extend(range(a + 1, b))
    texts = summarize(records)
    out: list[str] = []
    for k, pos in enumerate(shown):
        if k and pos != shown[k - 1] + 1:
            skipped = numbers[pos] - numbers[shown[k - 1]] - 1
            out.append(f"   ...   ({skipped} message(s) between)")
        direction, text = texts[pos]
        role = roles.get(numbers[pos])
        mark = ">>" if role == OFFENDING_ROLE else "  "
        author = writer_of(records[pos], numbers[pos], teardown)
        if author is not None:
            role = f"{role} ({author.words()})" if role else author.words()
        arrow = "C->A" if direction == "c2a" else "A->C"
        out.append(f"{mark} #{numbers[pos]:<5} {arrow}  {text}"
                   + (f"   <- {role}" if role else ""))
    return out


def turn_starts(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int],
                roles: Mapping[int, str], index: Any) -> dict[int, str]:
    """The offending message's session's turn start (``state_update running``) after each
    cited error answer and before the offending message, as a role: a proof window folds the
    records between two cited ones, and this one shows that work began although the request
    was refused (codex-acp v2's SDK-PROMPT-03, s12: the `running` 24 ms after the -32800 was
    folded away). None when the offending message names no session."""
    where = {n: pos for pos, n in enumerate(numbers)}
    if not isinstance(index, int) or index not in where:
        return {}
    sid = record_session(records[where[index]])
    errors = [n for n in roles if n < index and n in where and _is_error(records[where[n]])]
    out: dict[int, str] = {}
    for first in sorted(errors):
        start = next((n for n in numbers if first < n < index and n not in roles
                      and _starts_turn(records[where[n]], sid)), None)
        if sid is not None and start is not None:
            out[start] = TURN_STARTS_ROLE
    return out


def _msg(record: Record | Mapping[str, Any]) -> Any:
    return record.msg if isinstance(record, Record) else record.get("msg")


def record_session(record: Record | Mapping[str, Any]) -> str | None:
    """The session a record's message names in its params (None: none)."""
    msg = _msg(record)
    params = msg.get("params") if isinstance(msg, dict) else None
    sid = params.get("sessionId") if isinstance(params, dict) else None
    return sid if isinstance(sid, str) else None


def _is_error(record: Record | Mapping[str, Any]) -> bool:
    """An agent's error answer to a request."""
    msg = _msg(record)
    return _direction(record) == "a2c" and isinstance(msg, dict) and "error" in msg \
        and "method" not in msg


def _starts_turn(record: Record | Mapping[str, Any], sid: str | None) -> bool:
    msg = _msg(record)
    params = msg.get("params") if isinstance(msg, dict) else None
    update = params.get("update") if isinstance(params, dict) else None
    return _direction(record) == "a2c" and record_session(record) == sid \
        and isinstance(update, dict) and update.get("sessionUpdate") == TurnWord.KIND \
        and update.get("state") == TurnWord.RUNNING


def proof_from_file(path: Path, index: Any, evidence: Sequence[Mapping[str, Any]],
                    teardown: int | None = None) -> list[str]:
    """:func:`proof_lines` of a stored transcript (none when it cannot be read)."""
    try:
        records = read_trace(path)
    except TraceError:
        return []
    return proof_lines(records, index, evidence, teardown)


def unnumbered_from_file(path: Path, index: Any, evidence: Sequence[Mapping[str, Any]],
                         teardown: int | None = None) -> list[str]:
    """What a stored transcript's client wrote outside the program's numbered actions, in
    sentences: each part whose message the proof cites (:func:`unnumbered_acts`), and the
    spare sessions, with why the client makes them (none when it cannot be read)."""
    try:
        records = read_trace(path)
    except TraceError:
        return []
    numbers = numbers_of(records)
    cited = [*(int(e["index"]) for e in evidence if isinstance(e.get("index"), int)),
             *([index] if isinstance(index, int) else [])]
    out = [f"The proof cites {words}." for words in
           unnumbered_acts(records, numbers, cited, teardown)]
    spares = spare_messages(records, numbers)
    if spares:
        out.append(f"Spare sessions in the transcript ({spares}): {SPARE_WHY}.")
    return out

