"""A wire trace as an inline SVG sequence diagram, for the HTML report.

Mermaid needs a browser script (or a CDN) to draw; the report must open offline, so the
diagram is drawn here. One lifeline for the client and one per agent session (plus one for
the connection's own messages: ``initialize``, ``session/new`` before it has an id); the
offending message and its evidence are drawn in full and marked, and the rest is folded: a
25-action counterexample keeps its last steps before the violation and folds the start-up and
the teardown into one band each, so the picture stays a screen or two tall.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from acp_model.trace.describe import summarize
from acp_model.trace.format import Record, numbers_of, parse_record

CONNECTION = "connection"
ROW = 24
FOLD_ROW = 30
HEAD = 54
LEFT = 64
COLUMN = 250
LABEL_CHARS = 58

# Roles the report marks (``Violation.evidence`` roles, and the offending record itself).
OFFENDING = "offending"


@dataclass(frozen=True)
class Row:
    """One drawn record: its position in ``records``, label, sender and session lane."""

    pos: int
    number: int
    direction: str
    text: str
    lane: str
    role: str | None


def lanes_of(records: Sequence[Record | dict[str, Any]]) -> list[str]:
    """The session each record belongs to (responses inherit their request's session; the
    response to ``session/new`` opens the session it names)."""
    out: list[str] = []
    pending: dict[tuple[str, Any], str] = {}  # (sender, id) of a request -> its lane
    for rec in records:
        r = rec if isinstance(rec, Record) else parse_record(rec)
        msg = r.msg if isinstance(r.msg, dict) else None
        lane = CONNECTION
        if msg is not None:
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            sid = params.get("sessionId")
            if "method" in msg:
                lane = str(sid) if sid is not None else CONNECTION
                if "id" in msg:
                    pending[(r.dir, _key(msg["id"]))] = lane
            elif "id" in msg:
                other = "a2c" if r.dir == "c2a" else "c2a"
                lane = pending.pop((other, _key(msg["id"])), CONNECTION)
                result = msg.get("result")
                if lane == CONNECTION and isinstance(result, dict) and \
                        isinstance(result.get("sessionId"), str):
                    lane = result["sessionId"]
        out.append(lane)
    return out


def _key(value: Any) -> Any:
    return value if isinstance(value, str | int) else repr(value)


def visible(count: int, marked: Iterable[int], *, before: int = 8, after: int = 3,
            around: int = 2) -> list[bool]:
    """Which positions are drawn: the last ``before`` records up to the first mark, each mark
    with ``around`` neighbours, ``after`` records past the last mark; the rest (the start-up,
    long stretches between the proof's records, the teardown) is folded."""
    marks = sorted(m for m in marked if 0 <= m < count)
    if not marks:
        return [True] * count if count <= before + after + 8 else \
            [n < before or n >= count - after for n in range(count)]
    show = [False] * count
    for n in range(max(0, marks[0] - before), marks[0]):
        show[n] = True
    for n in range(marks[-1], min(count, marks[-1] + after + 1)):
        show[n] = True
    for m in marks:
        for n in range(max(0, m - around), min(count, m + around + 1)):
            show[n] = True
    # A gap of one or two records costs more as a band than drawn.
    n = 0
    while n < count:
        if show[n]:
            n += 1
            continue
        end = n
        while end < count and not show[end]:
            end += 1
        if end - n <= 2 and n > 0 and end < count:
            for k in range(n, end):
                show[k] = True
        n = end
    return show


def sequence_svg(records: Sequence[Record | dict[str, Any]], marks: Mapping[int, str], *,
                 numbers: Sequence[int] | None = None, fold: bool = True,
                 title: str | None = None, texts: Sequence[tuple[str, str]] | None = None,
                 lanes: Sequence[str] | None = None) -> str:
    """The SVG text. ``marks`` maps positions in ``records`` to a role (``offending`` or an
    evidence role such as ``request`` or ``cancel``); ``numbers`` are the trace indices shown
    (defaults to the positions); ``texts`` and ``lanes`` may be passed when many diagrams
    are drawn from one long trace (``summarize`` and :func:`lanes_of` of ``records``)."""
    texts = summarize(records) if texts is None else texts
    lanes = lanes_of(records) if lanes is None else lanes
    nums = list(numbers) if numbers is not None else numbers_of(records)
    shown = visible(len(records), marks) if fold else [True] * len(records)
    order = [CONNECTION] + [s for s in dict.fromkeys(lanes) if s != CONNECTION]
    if CONNECTION not in lanes:
        order.remove(CONNECTION)
    columns = {"client": LEFT + COLUMN // 2}
    for k, lane in enumerate(order, start=1):
        columns[lane] = LEFT + COLUMN // 2 + k * COLUMN
    width = LEFT + COLUMN * (len(order) + 1)
    body: list[str] = []
    y = HEAD + 16
    n = 0
    while n < len(records):
        if not shown[n]:
            end = n
            while end < len(records) and not shown[end]:
                end += 1
            body.append(_fold(n, end, nums, texts, y, width))
            y += FOLD_ROW
            n = end
            continue
        direction, text = texts[n]
        row = Row(n, nums[n], direction, text, lanes[n], marks.get(n))
        body.append(_arrow(row, columns, y))
        y += ROW
        n += 1
    height = y + 16
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="seq" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img">']
    if title:
        out.append(f"<title>{escape(title)}</title>")
    out.append(_defs())
    heads = [("client", "Client")] + [(lane, "Agent" if lane == CONNECTION else
                                       f"Agent · {_clip(lane, 20)}") for lane in order]
    for lane, label in heads:
        x = columns[lane]
        out.append(f'<line class="life" x1="{x}" y1="{HEAD - 8}" x2="{x}" y2="{height - 8}"/>')
        out.append(f'<rect class="head" x="{x - COLUMN // 2 + 12}" y="8" '
                   f'width="{COLUMN - 24}" height="{HEAD - 20}" rx="6"/>')
        out.append(f'<text class="headtext" x="{x}" y="{HEAD // 2 + 4}" '
                   f'text-anchor="middle">{escape(label)}</text>')
    out += body
    out.append("</svg>")
    return "\n".join(out)


def _defs() -> str:
    arrows = "".join(
        f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        f'class="tip-{name}"/></marker>' for name in ("plain", "offending", "evidence"))
    return f"<defs>{arrows}</defs>"


def _arrow(row: Row, columns: Mapping[str, int], y: int) -> str:
    client, agent = columns["client"], columns[row.lane]
    x1, x2 = (client, agent) if row.direction == "c2a" else (agent, client)
    kind = "plain" if row.role is None else "offending" if row.role == OFFENDING else "evidence"
    dashed = row.text.startswith(("result ", "error "))
    label = _clip(row.text, LABEL_CHARS)
    mid = (x1 + x2) / 2
    role = "" if row.role is None else f" [{row.role}]"
    parts = [f'<g class="msg {kind}" data-pos="{row.pos}">',
             f"<title>#{row.number}{escape(role)}: {escape(row.text)}</title>"]
    if row.role is not None:
        parts.append(f'<rect class="band-{kind}" x="4" y="{y - ROW + 6}" '
                     f'width="{max(x1, x2) + 8}" height="{ROW}" rx="3"/>')
    parts.append(f'<text class="num" x="8" y="{y}">#{row.number}</text>')
    parts.append(f'<line class="arrow{" dashed" if dashed else ""}" x1="{x1}" y1="{y}" '
                 f'x2="{x2}" y2="{y}" marker-end="url(#arrow-{kind})"/>')
    parts.append(f'<text class="label" x="{mid}" y="{y - 5}" text-anchor="middle">'
                 f"{escape(label)}</text>")
    parts.append("</g>")
    return "".join(parts)


def _fold(start: int, end: int, nums: Sequence[int], texts: Sequence[tuple[str, str]], y: int,
          width: int) -> str:
    first = texts[start][1].split(" ", 1)[0]
    last = texts[end - 1][1].split(" ", 1)[0]
    what = first if first == last else f"{first} … {last}"
    label = f"⋯ {end - start} message(s) folded: #{nums[start]}–#{nums[end - 1]} ({what})"
    return (f'<g class="fold"><rect x="4" y="{y - ROW + 8}" width="{width - 8}" '
            f'height="{FOLD_ROW - 6}" rx="4"/><text x="{width / 2}" y="{y}" '
            f'text-anchor="middle">{escape(_clip(label, 120))}</text></g>')


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
