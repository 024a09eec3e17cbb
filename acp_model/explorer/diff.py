"""Where readings part (``--diff``, ``--each-reading``) and what the doc-vs-schema
contradictions change in the model (``--contradictions``)."""

from __future__ import annotations

from collections import deque
from typing import Any

from acp_model.explorer.alphabet import alphabet
from acp_model.explorer.bounds import Bounds
from acp_model.explorer.properties import check_properties
from acp_model.explorer.search import Edge, Exploration, Refusal, explore
from acp_model.model.engine import compile_machine
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.spec.contradictions import CONTRADICTION_READINGS, CONTRADICTIONS
from acp_model.spec.readings import DEFAULT, READING_DEFS, Readings
from acp_model.spec.rules import RULES, catalogue


def parse_diff(spec: str, base: Readings = DEFAULT) -> list[tuple[Readings, Readings]]:
    """``A-01=join,forbid`` -> one pair; ``A-11`` -> the default against each other value.

    Raises ``ValueError`` (``ReadingError``) with a message for the user on bad input.
    """
    from acp_model.spec.readings import ReadingError, lookup

    name, sep, values = spec.partition("=")
    d = lookup(name)
    if sep:
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if len(vals) != 2:
            raise ReadingError(f"--diff {spec!r}: give exactly two values, e.g. "
                               f"{d.id}={','.join(list(d.values)[:2])}")
        for v in vals:
            if v not in d.values:
                raise ReadingError(f"reading {d.id} ({d.slug}) has no value {v!r}; choose "
                                   f"from: {', '.join(d.values)}")
        if vals[0] == vals[1]:
            raise ReadingError(f"--diff {spec!r}: the two values are the same")
        pairs = [(vals[0], vals[1])]
    else:
        pairs = [(d.default, v) for v in d.values if v != d.default]
    return [(base.parse([f"{d.id}={a}"]), base.parse([f"{d.id}={b}"])) for a, b in pairs]


def reading_name(r: Readings, other: Readings) -> str:
    """How one side of a diff is named: a revision by its name (the readings it decides
    come with it), otherwise the readings that differ."""
    if r["SPEC"] != other["SPEC"]:
        return f"spec {r['SPEC']}"
    changed = {k: v for k, v in r.values if dict(other.values)[k] != v}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "(same)"


def diff_readings(a: Readings, b: Readings, *, limit: int = 4, **kw: Any) -> dict[str, Any]:
    """Where two readings part: transitions one allows and the other refuses, and states only
    one of them reaches, each with its shortest witness: a path both readings allow, then the
    differing event, then (for transitions) the shortest way back to quiescence under the
    reading that allows it. The witness trace therefore passes ``acp-model check`` under the
    allowing reading and fails, at the differing event, under the refusing one.
    """
    exp = explore(readings=(a, b), **kw)
    name_a, name_b = reading_name(a, b), reading_name(b, a)
    both = _bfs_tree(exp, 3)
    groups: dict[tuple[int, str, str, tuple[str, ...]], list[Refusal]] = {}
    for rf in exp.refusals:
        ra, rb = rf.rules
        if bool(ra) == bool(rb) or rf.src not in both:
            continue
        allowing = 0 if not ra else 1
        key = (allowing, f"{rf.src_state}:{rf.action.event}", rf.action.payload,
               tuple(rb or ra))
        groups.setdefault(key, []).append(rf)
    items = []
    for key in sorted(groups):
        rfs = groups[key]
        best = min(rfs, key=lambda rf: (len(both[rf.src]), rf.src))
        allowing, transition, payload, rules = key
        edge = exp.edge(best.src, best.action)
        assert edge is not None  # allowed under one reading, so it was followed
        w = exp.witness([*both[best.src], edge], complete=True, readings=exp.readings[allowing])
        items.append({
            "allowed_by": (name_a, name_b)[allowing], "refused_by": (name_b, name_a)[allowing],
            "transition": transition, "payload": payload, "rules": list(rules),
            "occurrences": len(rfs), "witness": w.to_json()})
    only = {}
    for bit, name in ((1, name_a), (2, name_b)):
        mine, other = _bfs_tree(exp, bit), _bfs_tree(exp, 3 - bit)
        nodes = sorted((n for n in mine if n not in other), key=lambda n: (len(mine[n]), n))
        only[name] = {"states": len(nodes), "examples": [
            {"state": exp.info[n]["label"],
             "witness": exp.witness(mine[n], readings=exp.readings[bit - 1]).to_json()}
            for n in nodes[:limit]]}
    return {"a": name_a, "b": name_b, "bounds": exp.bounds.to_json(), "states": exp.nodes,
            "transitions": len(exp.edges), "seconds": round(exp.seconds, 3),
            "differences": items, "only_reachable": only, "exploration": exp}


def _bfs_tree(exp: Exploration, mask: int) -> dict[int, list[Edge]]:
    """Shortest paths over the edges allowed by every reading in ``mask``."""
    paths: dict[int, list[Edge]] = {0: []}
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for e in exp.out_edges(u):
            if e.allowed & mask == mask and e.dst not in paths:
                paths[e.dst] = [*paths[u], e]
                queue.append(e.dst)
    return paths


def each_reading(base: Readings = DEFAULT, **kw: Any) -> list[dict[str, Any]]:
    """Explore under every value of every reading (one change from ``base`` at a time)."""
    rows = []
    for d in READING_DEFS.values():
        for value in d.values:
            r = base.parse([f"{d.id}={value}"])
            exp = explore(readings=r, **kw)
            props = check_properties(exp, limit=1)
            rows.append({"reading": f"{d.id}={value}", "default": value == d.default,
                         **exp.counts(), "seconds": round(exp.seconds, 3),
                         "properties": {p.id: p.holds for p in props},
                         "failed": {p.id: p.summary for p in props if not p.holds}})
    return rows


def contradictions(*, explore_kw: dict[str, Any] | None = None, limit: int = 2  # noqa: C901
                   ) -> dict[str, Any]:
    """The doc-vs-schema strength contradictions in the catalogue and what they change.

    For rules with ``alt_strength`` the model's behaviour under ``STRENGTH=docs`` and
    ``STRENGTH=schema`` is compared on one graph (the rule turns from a failure into a warning).
    """
    rules = [r for r in catalogue() if r.alt_strength]
    strength = {r.id: {"docs": r.strength, "schema": r.alt_strength, "source": r.alt_source}
                for r in rules}
    kw = dict(explore_kw or {})
    diff = diff_readings(DEFAULT.parse(["STRENGTH=docs"]), DEFAULT.parse(["STRENGTH=schema"]),
                         limit=limit, **kw)
    diff.pop("exploration", None)
    effect: dict[str, list[dict[str, Any]]] = {}
    for item in diff["differences"]:
        for rid in item["rules"]:
            effect.setdefault(rid, []).append(item)
    table = compile_machine(SessionLifecycle, SessionModel)
    session_rules: dict[str, set[str]] = {}
    for (_, event), tr in table.transitions.items():
        for c in tr.checks:
            session_rules.setdefault(c.rule, set()).add(event)
    tried = alphabet(Bounds.default(**{k: v for k, v in kw.items() if k in (
        "sessions", "max_prompts", "max_permissions", "max_cancels", "max_tools", "custom",
        "reasons")})) if "bounds" not in kw else alphabet(kw["bounds"])
    out = []
    for cid, text, rids in CONTRADICTIONS:
        notes = []
        for rid in rids:
            if rid in effect:
                continue
            if RULES[rid].kind == "liveness":
                notes.append(f"{rid}: a liveness obligation, judged at the end of a trace "
                             "(a failure under docs, a warning under schema)")
            elif rid not in session_rules:
                notes.append(f"{rid}: checked outside the session machine (schema, "
                             "connection or message checks)")
            elif not session_rules[rid] & tried:
                notes.append(f"{rid}: its transitions are outside these bounds' alphabet")
            elif rid in strength:
                notes.append(f"{rid}: no transition changes verdict within these bounds")
        if cid in CONTRADICTION_READINGS:
            notes.append(f"a reading choice rather than a strength: explore --diff "
                         f"{CONTRADICTION_READINGS[cid]}")
        out.append({"id": cid, "conflict": text, "rules": list(rids), "note": "; ".join(notes),
                    "strengths": {rid: strength[rid] for rid in rids if rid in strength},
                    "model_effect": [
                        {"transition": it["transition"], "payload": it["payload"],
                         "rule": rid, "witness": it["witness"]}
                        for rid in rids for it in effect.get(rid, [])[:limit]]})
    undocumented = [rid for rid in strength if not any(rid in c[2] for c in CONTRADICTIONS)]
    return {"contradictions": out, "alt_strength_rules": strength,
            "alt_strength_without_contradiction": undocumented, "bounds": diff["bounds"]}
