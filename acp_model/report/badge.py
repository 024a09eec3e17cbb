"""A small SVG badge per agent: its verdict under each protocol with the counts, and which
acp-model judged it when, for the agent's README to link (the page shows it inline).

``badges/<agent>.svg`` beside ``matrix.html``: a grey label (``ACP · acp-model 0.1.0 ·
2026-12-06``) and a coloured value (``v2 pass · v1 fail 2``): red when a row fails, amber when
one only warns, green when every row passes, grey when none ran. Flat, one line, text measured
with a table of character widths and drawn to that width (no font is loaded: the badge renders
offline, in whatever sans-serif font the viewer has).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from acp_model.report.matrix import RowStatus, rules_of, verdict_of

SVG_NS = "http://www.w3.org/2000/svg"
COLOURS = {"fail": "#c62828", "warn": "#b26a00", "pass": "#2e7d32", "none": "#6b7280"}
LABEL = "#4b5563"
HEIGHT = 20
PAD = 6
# widths (px) of characters in 11 px Verdana, by class; the rest count as WIDE
NARROW = {c: 4.2 for c in "ijlI.,:;!'|() ·"}
WIDE = 8.2
MEDIUM = {c: 7.0 for c in "abcdeghknopqsuvxyz0123456789-_"}


def text_width(text: str) -> float:
    return sum(NARROW.get(c) or MEDIUM.get(c) or WIDE for c in text)


def _part(row: Mapping[str, Any]) -> tuple[str, str]:
    """One row's words on the badge, and its colour class."""
    name = f"v{row['protocol']}"
    if row.get("status") != RowStatus.RAN:
        return f"{name} {row.get('status')}", "none"
    fails, warns = len(rules_of(row, "failures")), len(rules_of(row, "warnings"))
    if fails:
        return f"{name} fail {fails}" + (f" (warn {warns})" if warns else ""), "fail"
    verdict = verdict_of(row)
    return (f"{name} pass · warn {warns}", "warn") if warns else (f"{name} {verdict}", "pass")


def badge(agent: str, rows: Sequence[Mapping[str, Any]], version: str, date: str, *,
          inline: bool = False) -> str:
    """The SVG of ``agent``'s rows (newest protocol first); ``inline``: for an HTML page (no
    namespace declaration, which a file needs and a page does not)."""
    parts = [_part(r) for r in sorted(rows, key=lambda r: -int(r["protocol"]))]
    classes = {c for _, c in parts}
    colour = COLOURS[next((c for c in ("fail", "warn", "pass") if c in classes), "none")]
    label = f"ACP · acp-model {version}" + (f" · {date}" if date else "")
    value = " · ".join(text for text, _ in parts) or "not run"
    left = round(text_width(label) + 2 * PAD)
    right = round(text_width(value) + 2 * PAD)
    title = f"{agent}: {value} (acp-model {version}, {date or 'undated'})"
    namespace = "" if inline else f' xmlns="{SVG_NS}"'
    return (
        f'<svg{namespace} width="{left + right}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
        f'<rect width="{left}" height="{HEIGHT}" fill="{LABEL}"/>'
        f'<rect x="{left}" width="{right}" height="{HEIGHT}" fill="{colour}"/>'
        '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{PAD}" y="14" {_fit(left)}>{escape(label)}</text>'
        f'<text x="{left + PAD}" y="14" {_fit(right)}>{escape(value)}</text></g></svg>\n')


def _fit(width: int) -> str:
    """The text drawn exactly as wide as measured, whatever font renders it: it never runs
    into the next part of the badge."""
    return f'textLength="{width - 2 * PAD}" lengthAdjust="spacingAndGlyphs"'


def agent_badge(doc: Mapping[str, Any], agent: str, *, inline: bool = False) -> str:
    """The badge of ``agent``'s rows in matrix ``doc``, dated when the matrix was made."""
    rows = [r for r in doc.get("rows") or [] if r["agent"] == agent]
    date = str((doc.get("settings") or {}).get("created") or "")[:10]
    return badge(agent, rows, str(doc.get("version") or ""), date, inline=inline)


def write_badges(doc: Mapping[str, Any], out: Path) -> list[Path]:
    """``out/badges/<agent>.svg`` for every agent of the matrix."""
    folder = out / "badges"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for agent in dict.fromkeys(str(r["agent"]) for r in doc.get("rows") or []):
        path = folder / f"{agent}.svg"
        path.write_text(agent_badge(doc, agent), encoding="utf-8")
        written.append(path)
    return written
