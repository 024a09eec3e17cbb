"""Which model transitions and rules real check / fuzz reports exercised."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp_model.explorer.search import Exploration
from acp_model.model.engine import compile_machine
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel


def _find(doc: Any, key: str, kind: type) -> Iterable[Any]:
    """Every value of type ``kind`` stored under ``key`` anywhere in a JSON report."""
    if isinstance(doc, dict):
        if isinstance(doc.get(key), kind):
            yield doc[key]
        for k, v in doc.items():
            if k != key:
                yield from _find(v, key, kind)
    elif isinstance(doc, list):
        for v in doc:
            yield from _find(v, key, kind)


def coverage(reports: Sequence[dict[str, Any]], exp: Exploration | None = None
             ) -> dict[str, Any]:
    """Which model transitions (and lifecycle rules) the given reports exercised.

    A report is any JSON from ``acp-model check`` or the fuzzer: every ``"transitions":
    {"state:event": n}`` object in it is summed, and every ``rules`` entry's ``exercised``.
    With an exploration, unexercised transitions are split into reachable (a test gap) and
    never legal in the model.
    """
    table = exp.table if exp is not None else compile_machine(SessionLifecycle, SessionModel)
    seen: dict[str, int] = {}
    rule_seen: dict[str, int] = {}
    for doc in reports:
        for counts in _find(doc, "transitions", dict):
            for k, n in counts.items():
                if isinstance(n, int):
                    seen[k] = seen.get(k, 0) + n
        for rules in _find(doc, "rules", list):
            for r in rules:
                if isinstance(r, dict) and isinstance(r.get("exercised"), int):
                    rule_seen[r["id"]] = rule_seen.get(r["id"], 0) + r["exercised"]
    model = [f"{s}:{e}" for s, e in table.transitions]
    exercised = {k: seen[k] for k in model if seen.get(k)}
    unknown = sorted(k for k in seen if k not in set(model))
    legal = None
    if exp is not None:
        legal = {f"{e.src_state}:{e.action.event}" for e in exp.edges
                 if e.action.session is not None and e.allowed & 1}
    gaps = [k for k in model if k not in exercised and (legal is None or k in legal)]
    never_legal = [k for k in model if k not in exercised and legal is not None
                   and k not in legal]
    lifecycle_rules = sorted({c.rule for c in table.check_names().values()})
    return {
        "transitions": len(model), "exercised": exercised,
        "not_exercised_reachable": gaps, "not_exercised_never_legal": never_legal,
        "unknown": unknown,
        "rules_not_exercised": [r for r in lifecycle_rules if not rule_seen.get(r)]
        if rule_seen else None,
        "ratio": round(len(exercised) / len(model), 3) if model else 0.0,
    }
