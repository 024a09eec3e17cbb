"""The conformance matrix as one self-contained HTML page (``matrix.html``).

Inline styles, no script, no external asset: the page opens offline and travels with the
matrix folder, whose counterexamples and replay files it links by relative paths. A cell's
colour is its verdict; a family whose rules never ran is hatched grey, never green.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from acp_model.report import matrix
from acp_model.report.badge import agent_badge
from acp_model.report.matrix import (
    Cell,
    RowStatus,
    minimized_text,
    not_filed,
    reproduction_text,
    rules_once,
)
from acp_model.report.reach import LABELS, Reach

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#1d2330;
background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}
h3{font-size:16px;margin:22px 0 6px}h4{font-size:15px;margin:14px 0 6px}
.meta{color:#5b6475;margin:0 0 16px}
table.m{border-collapse:collapse;margin:8px 0 4px}
table.m th,table.m td{border:1px solid #d5d9e0;padding:5px 7px;vertical-align:top}
table.m th{background:#f3f5f8;font-weight:600;text-align:left;font-size:13px}
table.m td.c{min-width:92px;font-size:12px}
td.c b{display:block;font-size:13px}
td.fail{background:#fbd5d5;color:#7f1010}td.warn{background:#fdefc3;color:#6b4b00}
td.pass{background:#d3f2dc;color:#0f5a26}
td.ne{background:repeating-linear-gradient(45deg,#eef0f3,#eef0f3 6px,#e2e5ea 6px,#e2e5ea 12px);
color:#5b6475}
td.na{background:#fafbfc;color:#9aa1ad}
td.row-note{color:#5b6475;font-style:italic}
td.agent{white-space:nowrap}
td.c a{color:inherit}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #d5d9e0;
font-size:12px}
.legend .fail{background:#fbd5d5}.legend .warn{background:#fdefc3}
.legend .pass{background:#d3f2dc}.legend .na{background:#fafbfc}
.legend .ne{background:repeating-linear-gradient(45deg,#eef0f3,#eef0f3 6px,#e2e5ea 6px,
#e2e5ea 12px)}
.finding{border-left:4px solid #c62828;padding:4px 10px;margin:8px 0;background:#fff6f6}
.finding.warn{border-color:#b58100;background:#fffbef}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{background:#f5f6f8;padding:6px 8px;overflow-x:auto}
table.reach td,table.reach th{border:1px solid #e2e5ea;padding:2px 8px;font-size:12px;
text-align:left}
table.reach{border-collapse:collapse}
.zero{color:#c62828;font-weight:600}
.chg-new-failure{color:#b71c1c;font-weight:600}
table.chg td.k{white-space:nowrap}
.delta{outline:2px solid #3949ab;outline-offset:-2px}
.chg-fixed{color:#1b5e20;font-weight:600}
.badge svg{vertical-align:middle;margin-left:8px}
"""

SHORT_REASON = 90  # characters of a by-design reason in a cell (the agent's section has all)
_CLASS = {Cell.FAIL: "fail", Cell.WARN: "warn", Cell.PASS: "pass",
          Cell.NOT_EXERCISED: "ne", Cell.NOT_APPLICABLE: "na"}


def _anchor(*parts: Any) -> str:
    return "-".join("".join(ch if ch.isalnum() else "-" for ch in str(p).lower())
                    for p in parts)


def _link(path: str | None, text: str) -> str:
    return f'<a href="{escape(path)}">{escape(text)}</a>' if path else escape(text)


def render_matrix(doc: Mapping[str, Any]) -> str:
    fams = doc.get("families") or []
    s = doc.get("settings") or {}
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width,initial-scale=1'>",
             "<title>acp-model conformance matrix</title>",
             f"<style>{_STYLE}</style></head><body>",
             "<h1>ACP conformance matrix</h1>",
             f"<p class='meta'>acp-model {escape(str(doc.get('version', '')))}"
             + (f", {escape(str(s['created']))}" if s.get("created") else "")
             + (f"; {s['budget']:g} s of fuzzing per row" if s.get("budget") else "")
             + (f"; spec {escape(str(s.get('spec')))}" if s.get("spec") else "")
             + (f"; judged again by acp-model {escape(str(doc['judged_by'].get('version')))}"
                + "".join(f", {escape(str(r))}" for r in doc["judged_by"].get("readings") or [])
                + (f", spec {escape(str(doc['judged_by']['spec']))}"
                   if doc["judged_by"].get("spec") else "")
                if doc.get("judged_by") else "")
             + (" &mdash; <b>interrupted</b>" if s.get("interrupted") else "") + "</p>",
             "<p class='legend'><span class='fail'>fail</span><span class='warn'>warn</span>"
             "<span class='pass'>pass (exercised)</span><span class='ne'>not exercised</span>"
             "<span class='na'>not applicable</span> Under each verdict: how often the "
             "family's rules were checked, and how many of them ran at all. Not exercised: "
             "none of its rules ran (with how far the run got toward them; a longer budget "
             "may reach them). Not applicable: no rule of the family in the revision, or the "
             "agent never does it by design (its profile says why).</p>",
             _table(doc, fams)]
    if doc.get("compare"):
        parts.append(_changes(doc["compare"]))
    parts.append("<h2>Per agent</h2>")
    shown: set[str] = set()
    for row in doc.get("rows") or []:
        if row["agent"] not in shown:
            shown.add(row["agent"])
            parts.append(_agent(row["agent"], agent_badge(doc, row["agent"], inline=True),
                                (doc.get("history") or {}).get(row["agent"])))
        parts.append(_details(row, fams))
    parts.append("<h2>Families</h2><table class='m'><tr><th>family</th><th>what its rules "
                 "judge</th></tr>")
    parts += [f"<tr><td>{escape(f['title'])}</td><td>{escape(f.get('about', ''))}</td></tr>"
              for f in fams]
    parts.append("</table></body></html>\n")
    return "".join(parts)


def _table(doc: Mapping[str, Any], fams: list[Mapping[str, Any]]) -> str:
    covered = matrix.coverage_measured(doc.get("rows") or [])
    out = ["<table class='m' id='matrix'><tr><th>agent</th><th>version</th><th>ACP</th>"]
    if covered:
        out.append(f"<th title='{escape(matrix.COVERAGE_ABOUT)}'>agent coverage</th>")
    out += [f"<th title='{escape(f.get('about', ''))}'>{escape(f['title'])}</th>" for f in fams]
    out.append("</tr>")
    for row in doc.get("rows") or []:
        name = f"<a href='#{_anchor('row', row['key'])}'>{escape(row['agent'])}</a>"
        out.append(f"<tr><td class='agent'>{name}</td><td>{escape(row.get('version') or '')}</td>"
                   f"<td>v{row['protocol']}"
                   + (f"<br><small>{escape(str(row['revision']))}</small>"
                      if row.get("revision") else "") + "</td>")
        if covered:
            out.append(f"<td class='cov' title='{escape(matrix.coverage_text(row))}'>"
                       f"{escape(matrix.coverage_short(row))}</td>")
        if row["status"] != RowStatus.RAN:
            failed = [(row["key"], f["rule"]) for c in (row.get("cells") or {}).values()
                      for f in c.get("failures") or []]
            out.append(f"<td class='row-note' colspan='{len(fams)}'><b>"
                       f"{escape(row['status'])}</b>: {escape(str(row.get('reason') or ''))}"
                       + "".join(f" &middot; <a href='#{_anchor('f', k, r)}'>{escape(r)}</a>"
                                 for k, r in failed) + "</td></tr>")
            continue
        changed = {c.get("family") for c in (doc.get("compare") or {}).get("changes") or []
                   if c["row"] == row["key"]}
        for f in fams:
            out.append(_cell(row, f["id"], (row.get("cells") or {}).get(f["id"]),
                             f["id"] in changed))
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _cell(row: Mapping[str, Any], fam: str, cell: Mapping[str, Any] | None,
          changed: bool = False) -> str:
    if cell is None:
        return "<td class='c na'>-</td>"
    status = Cell(cell["status"])
    body = f"<b>{escape(status.value)}</b>"
    title = ""
    if cell.get("by_design"):  # the agent never does it: why, in the cell
        reason = str(cell.get("reason") or "")
        title = f"not applicable: {reason}"
        short = reason if len(reason) <= SHORT_REASON else reason[:SHORT_REASON - 1] + "…"
        body += f"<i>by design:</i> {escape(short)}"
    elif status != Cell.NOT_APPLICABLE:
        body += (f"{cell.get('exercised', 0):,} checks<br>{cell.get('rules_exercised', 0)}/"
                 f"{cell.get('rules_total', 0)} rules ran")
    if status == Cell.NOT_EXERCISED:  # how near the run came, and what may reach it
        title = f"not exercised: {cell.get('hint', '')}"
        body += "".join(f"<br>{n:,} {escape(LABELS[Reach(k)])}"
                        for k, n in (cell.get("near") or {}).items())
        body += "<br><small>a longer --budget may reach it</small>"
    for f in cell.get("failures") or []:
        body += "<br>" + f"<a href='#{_anchor('f', row['key'], f['rule'])}'>" \
                         f"{escape(str(f['rule']))}</a>"
    for rule in rules_once(cell.get("warnings")):
        body += "<br>" + f"<a href='#{_anchor('w', row['key'], rule)}'>" \
                         f"{escape(rule)}</a> (warn)"
    if changed:  # outlined, and a link to what changed
        body += "<br><a href='#changes'>changed</a>"
    tip = f" title='{escape(title)}'" if title else ""
    return f"<td class='c {_CLASS[status]}{' delta' if changed else ''}'{tip}>{body}</td>"


def _agent(agent: str, badge: str, history: list[Mapping[str, Any]] | None) -> str:
    """An agent's heading: its badge (inline; ``badges/<agent>.svg`` beside the page is the
    same) and, once it ran at more than one release, its history, newest first."""
    out = [f"<h3 id='{_anchor('agent', agent)}'>{escape(agent)} "
           f"<span class='badge'>{badge}</span></h3>"]
    if history and len(history) > 1:
        out.append("<table class='m chg'><tr><th>release</th><th>ACP</th><th>run</th>"
                   "<th>verdict</th><th>what changed</th></tr>")
        for e in history:
            changes = "; ".join(f"{c['change']} {c.get('rule') or ''}".strip()
                                for c in e.get("changes") or []) or "-"
            verdict = e["verdict"] + (f": {', '.join(e['failures'])}" if e.get("failures")
                                      else "")
            out.append(f"<tr><td class='k'>{escape(str(e['version']))}</td>"
                       f"<td class='k'>v{e['protocol']}</td>"
                       f"<td class='k'>{escape(str(e.get('created'))[:10])}</td>"
                       f"<td>{escape(verdict)}</td><td>{escape(changes)}</td></tr>")
        out.append("</table>")
    return "".join(out)


def _details(row: Mapping[str, Any], fams: list[Mapping[str, Any]]) -> str:
    out = [f"<h4 id='{_anchor('row', row['key'])}'>{escape(row['title'])} "
           f"{escape(row.get('version') or '')} &middot; ACP v{row['protocol']}</h4>"]
    if row.get("reused"):
        out.append(f"<p><i>reused from the run of {escape(str(row['reused'].get('from')))}: "
                   "the same agent version, acp-model version and settings</i></p>")
    facts = []
    if row.get("package"):
        facts.append(f"package <code>{escape(row['package'])}@{escape(row['version'])}</code>")
    if row.get("command"):
        facts.append(f"command <code>{escape(' '.join(row['command']))}</code>")
    if row.get("model_api"):
        facts.append(f"behind the scripted model ({escape(row['model_api'])} API)")
    if facts:
        out.append("<p>" + "; ".join(facts) + "</p>")
    if row["status"] != RowStatus.RAN:
        out.append(f"<p><b>{escape(row['status'])}</b>: {escape(str(row.get('reason')))}</p>")
        if not row.get("cells"):
            return "".join(out)
    s = row.get("summary") or {}
    out.append(f"<p>verdict <b>{escape(str(row.get('verdict')))}</b>, judged by "
               f"<code>{escape(str(row.get('revision')))}</code>: {s.get('examples')} examples, "
               f"{s.get('actions')} client actions in {s.get('seconds')} s"
               + (f"; run files: {_link(row.get('out'), row.get('out') or '')}"
                  if row.get("out") else "")
               + (f", {_link(row.get('report'), 'report.json')}" if row.get("report") else "")
               + "</p>")
    if row.get("agent_coverage"):
        out.append(f"<p>agent coverage ({escape(str(row['agent_coverage'].get('tool')))}, "
                   f"ACP layer): {escape(matrix.coverage_text(row))}</p>")
    out.append(_reach(row, fams))
    cells = row.get("cells") or {}
    out.append(_unrun(cells, fams))
    anchored: set[str] = set()  # a rule's second finding of a level shares the first's anchor
    for f in fams:
        cell = cells.get(f["id"]) or {}
        for level, key in (("fail", "failures"), ("warn", "warnings")):
            for finding in cell.get(key) or []:
                anchor = _anchor("f" if level == "fail" else "w", row["key"], finding["rule"])
                out.append(_finding(row, f, finding, level,
                                    anchor if anchor not in anchored else None))
                anchored.add(anchor)
    return "".join(out)


def _unrun(cells: Mapping[str, Any], fams: list[Mapping[str, Any]]) -> str:
    """The families whose rules did not run: by design (why) or not exercised (how near)."""
    items = []
    for f in fams:
        cell = cells.get(f["id"]) or {}
        if cell.get("by_design"):
            items.append(f"<li>{escape(f['title'])}: <b>not applicable</b>: "
                         f"{escape(str(cell.get('reason')))}</li>")
        elif cell.get("status") == Cell.NOT_EXERCISED:
            items.append(f"<li>{escape(f['title'])}: <b>not exercised</b>: "
                         f"{escape(str(cell.get('hint') or ''))}</li>")
        if cell.get("contradicts"):
            items.append(f"<li>{escape(f['title'])}: {escape(str(cell['contradicts']))}</li>")
    return f"<p>Rules that did not run:</p><ul>{''.join(items)}</ul>" if items else ""


def _by_design_reach(row: Mapping[str, Any], fams: list[Mapping[str, Any]]) -> set[str]:
    """Counters that stay at zero by design: those of the families the agent never does."""
    cells = row.get("cells") or {}
    return {k for f in fams if (cells.get(f["id"]) or {}).get("by_design")
            for k in f.get("reach") or ()}


def _reach(row: Mapping[str, Any], fams: list[Mapping[str, Any]]) -> str:
    reach = row.get("reach") or {}
    if not reach:
        return ""
    cells = []
    designed = _by_design_reach(row, fams)
    for key, label in LABELS.items():
        n = int(reach.get(key, 0))
        na = key == Reach.CANCELS_DURING_MODEL and not row.get("model_api")
        by_design = n == 0 and key in designed
        text = "n/a (no scripted model)" if na else "0 (by design)" if by_design else f"{n:,}"
        na = na or by_design
        cls = " class='zero'" if n == 0 and not na else ""
        cells.append(f"<tr><th>{escape(label)}</th><td{cls}>{text}</td></tr>")
    return ("<p>How far the run got:</p><table class='reach'>" + "".join(cells) + "</table>")


def _finding(row: Mapping[str, Any], fam: Mapping[str, Any], f: Mapping[str, Any],
             level: str, anchor: str | None) -> str:
    """One finding's block (``anchor``: its id, None when an earlier block of its rule has it)."""
    files = (("issue", "issue body (report-bug)"),
             ("counterexample", "counterexample" if level == "fail" else "first sighting"),
             ("transcript", "transcript"), ("sequence", "sequence diagram (Mermaid)"),
             ("replay", "replay file"))
    links = [_link(f[key], text) for key, text in files if f.get(key)]
    links.append(f"<a href='{escape(str(f.get('url')))}'>rule {escape(str(f['rule']))}</a>")
    ident = f" id='{anchor}'" if anchor else ""
    out = [f"<div class='finding {'warn' if level == 'warn' else ''}'{ident}>"
           f"<b>{escape(str(f['rule']))}</b> ({escape(str(f.get('strength')))}, "
           f"{escape(fam['title'])}, {level}): {escape(str(f.get('message')))}"
           f"<br><i>{escape(str(f.get('statement')))}</i> &mdash; "
           f"{escape(str(f.get('citation')))}"]
    out.append(f"<br>{escape(reproduction_text(f))}; {escape(minimized_text(f))}")
    if level == "fail" and (why := not_filed(f)) is not None:
        out.append(f"<br><i>Not filed as an issue: {escape(why)}.</i>")
    out.append("<br>" + " &middot; ".join(x for x in links if x))
    if f.get("replay_command"):
        out.append(f"<pre>{escape(str(f['replay_command']))}</pre>")
    out.append("</div>")
    return "".join(out)


def _changes(comparison: Mapping[str, Any]) -> str:
    changes = comparison.get("changes") or []
    out = [f"<h2 id='changes'>Changes since {escape(str(comparison.get('against')))}</h2>"]
    if not changes:
        return "".join(out) + "<p>No change.</p>"
    out.append("<table class='m chg'><tr><th>row</th><th>family</th><th>change</th><th>rule</th>"
               "<th>detail</th></tr>")
    for c in changes:
        cls = "chg-" + _anchor(c["change"])
        out.append(f"<tr><td class='k'>{escape(c['row'])}</td>"
                   f"<td class='k'>{escape(c.get('family_title') or '')}</td>"
                   f"<td class='k {cls}'>{escape(c['change'])}</td>"
                   f"<td class='k'>{escape(c.get('rule') or '')}</td>"
                   f"<td>{escape(c.get('detail') or '')}</td></tr>")
    out.append("</table>")
    return "".join(out)
