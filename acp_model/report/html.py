"""The report as one self-contained HTML page (``--html FILE`` on check, fuzz, replay, proxy,
explore).

A developer opens it, sees the verdict and which revision and readings judged, reads each
failure with its proof (the evidence records), its minimal counterexample and how to replay
it, looks at the sequence diagram with the offending message marked, and searches the
transcript. Everything is inline (styles, a few lines of script, SVG), so the page opens
offline and can be attached to a bug report.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import orjson

from acp_model.report.links import rule_url
from acp_model.report.sequence_svg import OFFENDING, lanes_of, sequence_svg
from acp_model.spec.levels import Level
from acp_model.spec.rules import strength_shown
from acp_model.trace.describe import summarize
from acp_model.trace.format import Record, numbers_of

MAX_TRANSCRIPT = 5000  # records listed in the transcript section; the rest is counted
MAX_DIAGRAMS = 12


@dataclass
class Case:
    """One finding drawn on the page: a violation (or an explorer witness) with the records
    that show it. ``marks`` maps positions in ``records`` to roles; ``numbers`` are the trace
    indices the messages cite."""

    title: str
    level: str  # fail / warn / witness
    message: str
    records: Sequence[Record | dict[str, Any]] = ()
    marks: Mapping[int, str] = field(default_factory=dict)
    numbers: Sequence[int] | None = None
    facts: list[tuple[str, str]] = field(default_factory=list)  # label, text (shown as dl)
    steps: list[str] = field(default_factory=list)  # the counterexample's client actions
    steps_title: str = "Counterexample"  # what the steps may be called (reproduced?)
    command: str | None = None  # how to replay it
    rule: str | None = None  # the catalogued rule it breaks: linked to its documentation


@dataclass
class Transcript:
    records: Sequence[Record | dict[str, Any]]
    numbers: Sequence[int] | None = None
    marks: Mapping[int, str] = field(default_factory=dict)
    caption: str = ""


def finding_order(v: Mapping[str, Any]) -> tuple[bool, int]:
    """Failures first, then warnings, each by where it happened."""
    return v.get("level") != Level.FAIL, int(v.get("index") or 0)


def cases_from_violations(violations: Sequence[Mapping[str, Any]],
                          records: Sequence[Record | dict[str, Any]]) -> list[Case]:
    """Failures first, then warnings; each with the records its index and evidence name
    (record indices are message numbers, as in ``acp-model check``: a record's position, or
    its own ``n`` in an excerpt of a longer transcript)."""
    ordered = sorted(violations, key=finding_order)
    numbers = numbers_of(records)
    position = {n: pos for pos, n in enumerate(numbers)}
    out = []
    for v in ordered:
        marks = {position[e["index"]]: str(e["role"]) for e in v.get("evidence") or []
                 if e.get("index") in position}
        if v.get("index") in position:
            marks[position[v["index"]]] = OFFENDING
        strength = strength_shown(str(v["rule"]), str(v.get("strength", "")))
        out.append(Case(title=f"{v['rule']} ({strength})", level=v["level"],
                        message=v["message"], records=records, marks=marks, numbers=numbers,
                        facts=violation_facts(v), rule=str(v["rule"])))
    return out


def trace_page(report: Mapping[str, Any], records: Sequence[Record | dict[str, Any]],
               caption: str, marks: Mapping[int, str] | None = None) -> str:
    """The page of a report over one trace (check, proxy): findings drawn on its records;
    ``marks`` labels records in the transcript (a one-sided recording's inferred ones)."""
    return render_html(report, cases=cases_from_violations(report["violations"], records),
                       transcript=Transcript(records, caption=caption, marks=marks or {}))


def _rule_link(rule: str | None) -> str:
    """A link from a finding's heading to its rule's entry in the docs' rule catalogue."""
    if not rule:
        return ""
    return (f' <a class="rule-doc" href="{escape(rule_url(rule))}" '
            f'title="{escape(rule)} in the rule catalogue">rule docs</a>')


def violation_facts(v: Mapping[str, Any]) -> list[tuple[str, str]]:
    facts = [("at", f"record #{v.get('index')}" + (f".{v['sub']}" if "sub" in v else ""))]
    for key, label in (("worker", "in the run of"), ("session", "session"), ("kind", "kind"),
                       ("party", "binds"), ("check", "decided by"), ("seen", "times seen")):
        if v.get(key) not in (None, ""):
            facts.append((label, str(v[key])))
    evidence = v.get("evidence") or []
    if evidence:
        facts.append(("proof", ", ".join(f"#{e['index']} ({e['role']})" for e in evidence)))
    return facts


def render_html(report: Mapping[str, Any], *, cases: Sequence[Case] = (),
                transcript: Transcript | None = None,
                coverage: Mapping[str, Any] | None = None, title: str | None = None,
                appendix: Any = None) -> str:
    """The page. ``appendix``: a JSON value shown, collapsed, at the end (the explorer's
    full result: its diffs have no tabular form)."""
    command = str(report.get("command", "report"))
    verdict = str(report.get("verdict", "?"))
    heading = title or f"acp-model {command}: {verdict.upper()}"
    parts = [_head(heading), f'<body><header class="{escape(verdict)}">',
             f'<h1><span class="verdict">{escape(verdict.upper())}</span> '
             f"acp-model {escape(command)}</h1>", _summary(report), "</header><main>"]
    parts.append(_findings(cases))
    if transcript is not None and transcript.records and not any(c.records for c in cases):
        parts.append('<section id="sequence"><h2>Sequence</h2><div class="diagram">'
                     + sequence_svg(transcript.records, transcript.marks,
                                    numbers=transcript.numbers, title="the transcript")
                     + "</div></section>")
    if coverage and coverage.get("samples"):
        parts.append(_coverage(coverage))
    if report.get("properties"):
        parts.append(_properties(report["properties"]))
    if report.get("rules"):
        parts.append(_rules(report["rules"]))
    if transcript is not None and transcript.records:
        parts.append(_transcript(transcript))
    if appendix is not None:
        text = orjson.dumps(appendix, option=orjson.OPT_INDENT_2, default=str).decode()
        parts.append('<section id="appendix"><h2>Full result</h2><details><summary>JSON ('
                     f"{len(text):,} characters)</summary><pre>{escape(text)}</pre></details>"
                     "</section>")
    parts.append(f"<footer>acp-model {escape(str(report.get('version', '')))} · "
                 "this page is self-contained (no network needed)</footer></main>")
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def write_html(page: str, path: str | Path) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")


def _head(title: str) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head>")


def _summary(report: Mapping[str, Any]) -> str:
    rows: list[tuple[str, str]] = []
    if report.get("source"):
        rows.append(("agent" if report.get("command") in ("fuzz", "proxy", "replay")
                     else "source", str(report["source"])))
    spec = report.get("spec")
    if isinstance(spec, Mapping):
        how = " (decided by --spec auto)" if spec.get("requested") == "auto" else ""
        rows.append(("spec revision", f"{spec.get('revision')}{how}: {spec.get('evidence')}"))
        fit = spec.get("fit")
        if isinstance(fit, Mapping) and fit.get("summary"):
            rows.append(("revision fit", str(fit["summary"])))
    changed = report.get("readings_changed") or {}
    rows.append(("readings", ", ".join(f"{k}={v}" for k, v in changed.items())
                 if changed else "defaults (every defensible behaviour accepted)"))
    summary = report.get("summary") or {}
    if summary:
        rows.append(("summary", ", ".join(f"{k.replace('_', ' ')} {v}"
                                          for k, v in summary.items()
                                          if not isinstance(v, Mapping))))
        phases = summary.get("phases")
        if isinstance(phases, Mapping) and phases:  # seconds of each phase of a fuzz run
            rows.append(("time", ", ".join(f"{k} {v} s" for k, v in phases.items())))
    if report.get("bounds_text"):
        rows.append(("bounds", str(report["bounds_text"])))
    for key in ("states", "transitions"):
        if isinstance(report.get(key), int):
            rows.append((key, f"{report[key]:,}"))
    still_owed = report.get("open_at_end") or []
    if still_owed:
        rows.append(("open at end", f"{len(still_owed)} obligation(s) the session ended "
                     "before (not failures): " + "; ".join(
                         f"{v['rule']} #{v['index']}" for v in still_owed[:8])))
    rows.extend(_one_sided_rows(report.get("one_sided")))
    rows.extend(_client_rows(report))
    for note in report.get("notes") or []:
        rows.append(("note", str(note)))
    return _dl(rows)


def _client_rows(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The editor a fuzz run's client played, and the agent's own coverage (--coverage)."""
    rows = []
    client = report.get("client")
    if isinstance(client, Mapping) and client.get("profile"):
        served = ", ".join(f"{k} {v}" for k, v in (client.get("served") or {}).items())
        rows.append(("client", f"{client['profile']}"
                     + (" (drawn for this run)" if client.get("drawn") else "")
                     + (f": {client['title']}" if client.get("title") else "")
                     + (f"; served {served}" if served else "")))
    cov = report.get("coverage_agent")
    if isinstance(cov, Mapping):
        lines, fns = cov.get("lines") or {}, cov.get("functions") or {}
        rows.append(("agent coverage", f"{cov.get('tool')}, {cov.get('scope')}: lines "
                     f"{lines.get('reached')}/{lines.get('total')}, functions "
                     f"{fns.get('reached')}/{fns.get('total')}"))
    return rows


def _one_sided_rows(one: Any) -> list[tuple[str, str]]:
    """What a one-sided recording's check inferred, and what it could not judge."""
    if not isinstance(one, Mapping):
        return []
    rows = [("one-sided", f"only the {one.get('side')}'s messages were recorded "
             f"({one.get('agent_messages')}); the client's side is inferred, and rules that "
             "need it are not judged (see Rules)")]
    rows.extend(("inferred", f"#{i['index']} {i['what']}, because {i['because']}")
                for i in one.get("inferred") or [])
    for mark, path in (one.get("placeholders") or {}).items():
        rows.append(("placeholder", f"{mark} read as {path}"))
    return rows


def _dl(rows: Sequence[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows) + \
        "</dl>"


def _findings(cases: Sequence[Case]) -> str:
    fails = sum(c.level == Level.FAIL for c in cases)
    warns = sum(c.level == Level.WARN for c in cases)
    witnesses = len(cases) - fails - warns
    head = (f'<section id="findings"><h2>Findings <small>{fails} failure(s), {warns} '
            f"warning(s){f', {witnesses} witness(es)' if witnesses else ''}</small></h2>")
    if not cases:
        return head + '<p class="none">No failure and no warning.</p></section>'
    out = [head]
    derived: dict[int, tuple[list[tuple[str, str]], list[str]]] = {}  # one pass per trace
    for n, case in enumerate(cases):
        out.append(f'<article class="case {escape(case.level)}">')
        label = {"fail": "FAIL", "warn": "warning"}.get(case.level, case.level)
        out.append(f'<h3><span class="badge {escape(case.level)}">{escape(label)}</span> '
                   f"{escape(case.title)}{_rule_link(case.rule)}</h3>"
                   f"<p class=\"message\">{escape(case.message)}</p>")
        if case.facts:
            out.append(_dl(case.facts))
        if case.steps:
            out.append(f"<details open><summary>{escape(case.steps_title)}: "
                       f"{len(case.steps)} client action(s)</summary><ol>"
                       + "".join(f"<li>{escape(s)}</li>" for s in case.steps) + "</ol></details>")
        if case.command:
            out.append(f'<p>Replay: <code class="cmd">{escape(case.command)}</code></p>')
        if case.records and n < MAX_DIAGRAMS:
            key = id(case.records)
            if key not in derived:
                derived[key] = (summarize(case.records), lanes_of(case.records))
            texts, lanes = derived[key]
            out.append(_legend(case.marks))
            out.append('<div class="diagram">' + sequence_svg(
                case.records, case.marks, numbers=case.numbers, title=case.title,
                texts=texts, lanes=lanes) + "</div>")
        out.append("</article>")
    if len(cases) > MAX_DIAGRAMS:
        out.append(f"<p>Diagrams are drawn for the first {MAX_DIAGRAMS} findings.</p>")
    out.append("</section>")
    return "\n".join(out)


def _legend(marks: Mapping[int, str]) -> str:
    roles = sorted({r for r in marks.values() if r != OFFENDING})
    items = ['<span class="key offending">offending message</span>'] \
        if OFFENDING in marks.values() else []
    if roles:
        items.append(f'<span class="key evidence">evidence ({escape(", ".join(roles))})</span>')
    items.append('<span class="key">dashed: a response; hover a message for its full text</span>')
    return '<p class="legend">' + " ".join(items) + "</p>"


def _rules(rules: Sequence[Mapping[str, Any]]) -> str:
    statuses = sorted({str(r["status"]) for r in rules})
    options = "".join(f'<option value="{escape(s)}">{escape(s)}</option>' for s in statuses)
    out = ['<section id="rules"><h2>Rules</h2><div class="filters">'
           '<label>status <select id="rule-status"><option value="">all</option>'
           f"{options}</select></label> "
           '<label>search <input id="rule-search" type="search" placeholder="ID, text, '
           'citation"></label> <span id="rule-count"></span></div>'
           '<table id="rule-table"><thead><tr><th>rule</th><th>status</th><th>exercised</th>'
           "<th>strength</th><th>statement</th><th>citation</th></tr></thead><tbody>"]
    for r in rules:
        status = str(r["status"])
        cls = status.replace(" ", "-")
        out.append(f'<tr data-status="{escape(status)}" class="{escape(cls)}">'
                   f'<td><a class="rule-doc" href="{escape(rule_url(str(r["id"])))}">'
                   f"<code>{escape(str(r['id']))}</code></a></td><td>{escape(status)}</td>"
                   f'<td class="n">{int(r.get("exercised") or 0):,}</td>'
                   f"<td>{escape(str(r.get('strength', '')))}</td>"
                   f"<td>{escape(str(r.get('statement', '')))}</td>"
                   f"<td class=\"cite\">{escape(str(r.get('citation', '')))}</td></tr>")
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _properties(props: Sequence[Mapping[str, Any]]) -> str:
    out = ['<section id="properties"><h2>Properties of the reachable graph</h2><table>'
           "<thead><tr><th></th><th>property</th><th>holds</th><th>result</th></tr></thead>"
           "<tbody>"]
    for p in props:
        holds = bool(p.get("holds"))
        out.append(f'<tr class="{"held" if holds else "violated"}"><td>{escape(str(p["id"]))}'
                   f"</td><td><b>{escape(str(p.get('name', '')))}</b><br><small>"
                   f"{escape(str(p.get('statement', '')))}</small></td>"
                   f"<td>{'yes' if holds else 'NO'}</td>"
                   f"<td>{escape(str(p.get('summary', '')))}</td></tr>")
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _transcript(t: Transcript) -> str:
    records = list(t.records)
    numbers = list(t.numbers) if t.numbers is not None else numbers_of(records)
    shown = records[:MAX_TRANSCRIPT]
    texts = summarize(shown)
    lanes = lanes_of(shown)
    out = ['<section id="transcript"><h2>Transcript <small>'
           f"{len(records):,} message(s){escape(' · ' + t.caption if t.caption else '')}"
           "</small></h2><div class=\"filters\"><label>search <input id=\"tx-search\" "
           'type="search" placeholder="method, id, text"></label> '
           '<button type="button" id="tx-open">expand all</button> '
           '<button type="button" id="tx-close">collapse all</button></div>']
    for lane in dict.fromkeys(lanes):
        rows = [n for n, ln in enumerate(lanes) if ln == lane]
        name = "connection (no session)" if lane == "connection" else f"session {lane}"
        marked = any(n in t.marks for n in rows)
        out.append(f'<details class="lane"{" open" if marked or len(rows) < 60 else ""}>'
                   f"<summary>{escape(name)}: {len(rows)} message(s)</summary>"
                   '<table class="tx"><tbody>')
        for n in rows:
            direction, text = texts[n]
            role = t.marks.get(n)
            cls = "" if role is None else (" offending" if role == OFFENDING else " evidence")
            arrow = "C→A" if direction == "c2a" else "A→C"
            raw = _raw(shown[n])
            out.append(f'<tr class="rec{cls}"><td class="n">#{numbers[n]}</td>'
                       f"<td>{arrow}</td><td>{escape(text)}"
                       + (f' <span class="role">[{escape(role)}]</span>' if role else "")
                       + f'<details class="raw"><summary>JSON</summary><pre>{escape(raw)}'
                       "</pre></details></td></tr>")
        out.append("</tbody></table></details>")
    if len(records) > MAX_TRANSCRIPT:
        out.append(f"<p>… {len(records) - MAX_TRANSCRIPT:,} more message(s) in the trace file."
                   "</p>")
    out.append("</section>")
    return "\n".join(out)


def _raw(rec: Record | dict[str, Any]) -> str:
    obj = rec.to_json() if isinstance(rec, Record) else rec
    text = orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()
    return text if len(text) < 20000 else text[:20000] + "\n…"


def _coverage(coverage: Mapping[str, Any]) -> str:
    samples = coverage["samples"]
    plateau = coverage.get("plateau_since_actions")
    if plateau is None:
        verdict = "still growing: more budget may exercise more"
    else:
        verdict = (f"plateau: nothing new since action {plateau:,} of "
                   f"{samples[-1]['actions']:,}; more budget of the same kind buys little")
    return ('<section id="coverage"><h2>Coverage over the run</h2>'
            f"<p>{escape(verdict)}</p><div class=\"plot\">{coverage_svg(samples)}</div>"
            "</section>")


def coverage_svg(samples: Sequence[Mapping[str, Any]]) -> str:
    """Rules and model transitions exercised against client actions (matplotlib, as SVG)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    actions = [s["actions"] for s in samples]
    fig = Figure(figsize=(7.5, 2.8), dpi=96)  # its own canvas: no process-wide backend
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.step(actions, [s["rules"] for s in samples], where="post", label="rules exercised",
            color="#2563eb")
    ax2 = ax.twinx()
    ax2.step(actions, [s["transitions"] for s in samples], where="post",
             label="model transitions", color="#d97706")
    ax.set_xlabel("client actions")
    ax.set_ylabel("rules", color="#2563eb")
    ax2.set_ylabel("transitions", color="#d97706")
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    lines = ax.get_lines() + ax2.get_lines()
    ax.legend(lines, [str(line.get_label()) for line in lines], loc="lower right",
              frameon=False)
    for spine in ("top",):
        ax.spines[spine].set_visible(False)
        ax2.spines[spine].set_visible(False)
    fig.tight_layout()
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]


_STYLE = """
:root{--fail:#b91c1c;--warn:#b45309;--pass:#15803d;--ink:#1f2937;--mute:#6b7280;
--line:#e5e7eb;--ev:#f59e0b}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#f9fafb}
header{padding:18px 28px;border-bottom:4px solid var(--mute);background:#fff}
header.fail{border-color:var(--fail)}header.pass{border-color:var(--pass)}
h1{margin:0 0 8px;font-size:22px}h2{font-size:18px;margin:28px 0 10px}h2 small,h3 small{
color:var(--mute);font-weight:400}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;
background:var(--mute)}header.fail .verdict{background:var(--fail)}
header.pass .verdict{background:var(--pass)}
main{padding:0 28px 40px;max-width:1400px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dt{color:var(--mute)}dd{margin:0;word-break:break-word}
.case{background:#fff;border:1px solid var(--line);border-left:5px solid var(--mute);
border-radius:6px;padding:10px 16px;margin:12px 0}
.case.fail{border-left-color:var(--fail)}.case.warn{border-left-color:var(--warn)}
.case h3{margin:4px 0;font-size:16px}
.case h3 .rule-doc{font-size:12px;font-weight:400;margin-left:8px}
.message{margin:6px 0;font-size:15px}
.badge{font-size:12px;padding:1px 7px;border-radius:3px;color:#fff;background:var(--mute);
vertical-align:2px}.badge.fail{background:var(--fail)}.badge.warn{background:var(--warn)}
code.cmd{background:#111827;color:#f9fafb;padding:3px 8px;border-radius:4px;
display:inline-block}
.diagram{overflow-x:auto;border:1px solid var(--line);border-radius:4px;background:#fff;
margin:6px 0}
.legend{font-size:12px;color:var(--mute)}.key{margin-right:12px}
.key.offending::before,.key.evidence::before{content:"";display:inline-block;width:12px;
height:12px;margin-right:4px;vertical-align:-2px;border-radius:2px}
.key.offending::before{background:#fecaca}.key.evidence::before{background:#fde68a}
svg.seq{font:12px "DejaVu Sans Mono",ui-monospace,monospace}
svg.seq .life{stroke:#9ca3af;stroke-dasharray:4 4}
svg.seq .head{fill:#eef2ff;stroke:#6366f1}svg.seq .headtext{font-weight:600;fill:#312e81}
svg.seq .arrow{stroke:#374151;stroke-width:1.2}svg.seq .dashed{stroke-dasharray:5 3}
svg.seq .offending .arrow{stroke:var(--fail);stroke-width:2.4}
svg.seq .evidence .arrow{stroke:#b45309;stroke-width:2}
svg.seq .band-offending{fill:#fee2e2}svg.seq .band-evidence{fill:#fef3c7}
svg.seq .tip-plain{fill:#374151}svg.seq .tip-offending{fill:var(--fail)}
svg.seq .tip-evidence{fill:#b45309}
svg.seq .label{fill:#111827}svg.seq .offending .label{fill:var(--fail);font-weight:700}
svg.seq .num{fill:var(--mute)}svg.seq .fold rect{fill:#f3f4f6;stroke:#d1d5db;
stroke-dasharray:3 3}svg.seq .fold text{fill:var(--mute);font-style:italic}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6;position:sticky;top:0}td.n{text-align:right;
font-variant-numeric:tabular-nums}td.cite{color:var(--mute);font-size:12px}
tr.violated td:nth-child(2){color:var(--fail);font-weight:600}
tr.warned td:nth-child(2){color:var(--warn);font-weight:600}
tr.held td:nth-child(2){color:var(--pass)}tr.not-exercised,tr.not-in-revision{color:var(--mute)}
.filters{margin:6px 0 10px}.filters input,.filters select{font:inherit;padding:2px 6px}
details.lane{background:#fff;border:1px solid var(--line);border-radius:4px;margin:6px 0;
padding:4px 10px}details.lane>summary{cursor:pointer;font-weight:600}
table.tx td{font:12px "DejaVu Sans Mono",ui-monospace,monospace}
tr.rec.offending{background:#fee2e2}tr.rec.evidence{background:#fef3c7}
.role{color:var(--warn);font-weight:600}details.raw{display:inline}
details.raw summary{display:inline;color:var(--mute);cursor:pointer;font-size:11px}
details.raw pre{white-space:pre-wrap;background:#f3f4f6;padding:6px;margin:4px 0}
.plot svg{max-width:100%;height:auto}footer{margin-top:30px;color:var(--mute);font-size:12px}
.none{color:var(--pass);font-weight:600}
"""

_SCRIPT = """
(function(){
  var st=document.getElementById('rule-status'), q=document.getElementById('rule-search'),
      count=document.getElementById('rule-count');
  function rules(){
    if(!st)return; var s=st.value, t=q.value.toLowerCase(), n=0, rows=document
      .querySelectorAll('#rule-table tbody tr');
    rows.forEach(function(r){var ok=(!s||r.dataset.status===s)&&
      (!t||r.textContent.toLowerCase().indexOf(t)>=0);r.style.display=ok?'':'none';if(ok)n++;});
    count.textContent=n+' of '+rows.length+' rule(s)';
  }
  if(st){st.addEventListener('change',rules);q.addEventListener('input',rules);rules();}
  var tq=document.getElementById('tx-search');
  if(tq){tq.addEventListener('input',function(){var t=tq.value.toLowerCase();
    document.querySelectorAll('details.lane').forEach(function(d){var any=false;
      d.querySelectorAll('tr.rec').forEach(function(r){var ok=!t||r.textContent.toLowerCase()
        .indexOf(t)>=0;r.style.display=ok?'':'none';if(ok)any=true;});
      if(t&&any)d.open=true;});});}
  function all(open){document.querySelectorAll('details.lane').forEach(function(d){
    d.open=open;});}
  var o=document.getElementById('tx-open'),c=document.getElementById('tx-close');
  if(o){o.addEventListener('click',function(){all(true);});
    c.addEventListener('click',function(){all(false);});}
})();
"""
