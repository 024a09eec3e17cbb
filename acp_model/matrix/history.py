"""Each agent's verdicts across its releases, kept from one matrix to the next.

A matrix made with ``--previous OLD/matrix.json`` carries OLD's history forward and adds, for
each row that ran (not reused), an entry: the release, when it ran, the verdict and the rules
that failed and warned, and what changed against the previous matrix's row of that agent and
protocol (``compare``: a new failure, a fix, a new warning...). A newer run of the same
release replaces that release's entry. Entries are newest first.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from acp_model.report.matrix import RowStatus, compare, rules_of, verdict_of

History = dict[str, list[dict[str, Any]]]


def entry(row: Mapping[str, Any], changes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"protocol": row["protocol"], "version": row.get("version") or "",
            "created": row.get("created") or "", "acp_model": row.get("acp_model") or "",
            "verdict": verdict_of(row), "failures": rules_of(row, "failures"),
            "warnings": rules_of(row, "warnings"),
            "changes": [{k: c[k] for k in ("family_title", "change", "rule", "detail")}
                        for c in changes]}


def history(previous: Mapping[str, Any] | None, doc: Mapping[str, Any]) -> History:
    """The history ``doc`` carries: ``previous``'s (or, for a matrix that kept none, its rows
    as the first entries), then an entry per row of ``doc`` that ran."""
    hist: History = copy.deepcopy(dict((previous or {}).get("history") or {}))
    before = {r["key"]: r for r in (previous or {}).get("rows") or []}
    if previous is not None and not previous.get("history"):
        for row in before.values():
            if row.get("status") == RowStatus.RAN:
                _add(hist, row["agent"], entry({**row, "created": row.get("created") or (
                    previous.get("settings") or {}).get("created")}, []))
    for row in doc.get("rows") or []:
        if row.get("status") != RowStatus.RAN or row.get("reused"):
            continue
        old = before.get(row["key"])
        changes = compare({"rows": [old]}, {"rows": [row]}) if old is not None else []
        _add(hist, row["agent"], entry(row, changes))
    return hist


def _add(hist: History, agent: str, new: dict[str, Any]) -> None:
    """``new`` in ``agent``'s entries: replacing the same release's, newest first."""
    entries = [e for e in hist.get(agent, [])
               if (e["protocol"], e["version"]) != (new["protocol"], new["version"])]
    entries.append(new)
    entries.sort(key=lambda e: (str(e.get("created") or ""), int(e["protocol"])), reverse=True)
    hist[agent] = entries
