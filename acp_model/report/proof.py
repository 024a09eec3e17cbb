"""The wire lines that prove a finding, numbered as its proof cites them.

A violation names the offending message (``index``) and the records its proof rests on
(``evidence``: message number and role). These are the lines a maintainer reads: each cited
record of the transcript with its number, direction, one-line description and role; records
between two cited ones are shown when there are few of them, otherwise a ``...`` line says how
many were skipped (the file has them all).

What the client wrote from the teardown on (a counterexample's ``teardown_at``: the cancels of
what is still busy, the answers to open permissions, the syncs) is named as the teardown's: a
proof that rests on such a cancel must not send its reader looking for it among the program's
numbered actions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_model.trace.describe import summarize
from acp_model.trace.format import Record, TraceError, numbers_of, read_trace

BRIDGE = 3  # at most this many records between two cited ones are shown, not skipped
OFFENDING_ROLE = "the offending message"
TEARDOWN_ROLE = "the teardown's, after the program's last action"


def by_teardown(record: Record | Mapping[str, Any], number: int, teardown: int | None) -> bool:
    """Whether the client wrote ``record`` (message ``number``) in the teardown that began at
    message ``teardown`` (None: not known)."""
    direction = record.dir if isinstance(record, Record) else record.get("dir")
    return teardown is not None and number >= teardown and direction == "c2a"


def teardown_acts(records: Sequence[Record | Mapping[str, Any]], numbers: Sequence[int],
                  cited: Iterable[int], teardown: int | None) -> str:
    """The cited messages the teardown wrote, in words ("the teardown's session/cancel #18
    and sync #20 (after the program's last action, not numbered actions)"; "" for none)."""
    wanted = set(cited)
    acts = [f"{_method(rec)} #{n}" for rec, n in zip(records, numbers, strict=True)
            if n in wanted and by_teardown(rec, n, teardown)]
    if not acts:
        return ""
    listed = acts[0] if len(acts) == 1 else f"{', '.join(acts[:-1])} and {acts[-1]}"
    return (f"the teardown's {listed} (written after the program's last action: the client "
            "ending the turns still open, not one of the numbered actions)")


def _method(record: Record | Mapping[str, Any]) -> str:
    """A client message's method, or what it answers ("response")."""
    msg = record.msg if isinstance(record, Record) else record.get("msg")
    if isinstance(msg, dict):
        return str(msg.get("method") or "response")
    return "batch" if isinstance(msg, list) else "message"


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
    wrote from message ``teardown`` on is marked as the teardown's."""
    numbers = numbers_of(records)
    roles = cited(index, evidence)
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
        if by_teardown(records[pos], numbers[pos], teardown):
            role = f"{role} ({TEARDOWN_ROLE})" if role else TEARDOWN_ROLE
        mark = ">>" if role == OFFENDING_ROLE else "  "
        arrow = "C->A" if direction == "c2a" else "A->C"
        out.append(f"{mark} #{numbers[pos]:<5} {arrow}  {text}"
                   + (f"   <- {role}" if role else ""))
    return out


def proof_from_file(path: Path, index: Any, evidence: Sequence[Mapping[str, Any]],
                    teardown: int | None = None) -> list[str]:
    """:func:`proof_lines` of a stored transcript (none when it cannot be read)."""
    try:
        records = read_trace(path)
    except TraceError:
        return []
    return proof_lines(records, index, evidence, teardown)
