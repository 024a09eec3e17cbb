"""Many workers' reports as one (``acp-model merge``): a campaign on several machines or shards
ends with one verdict, one rule table and one list of distinct counterexamples.

Merging is by the report's own fields, so what a worker wrote is never re-judged: a rule is
violated if any worker saw it violated, warned if any warned and none violated, held if it was
exercised and never broken, not exercised otherwise; counts add up. Counterexamples are
distinct by rule (a program a fresh process reproduced beats one none did, then the shortest
wins, with its own reproduction). A report that judged nothing (its agent unusable) makes the
verdict ``error``, not a pass; every report's notes are kept. Reports of different spec
revisions judge by different rules and are not merged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_model import __version__
from acp_model.spec.levels import Level

STATUS_ORDER = ("violated", "warned", "held", "allowance", "not exercised", "not in revision")
SUMMED = ("examples", "actions", "messages", "sessions", "restarts", "agent_processes")


class MergeError(ValueError):
    """Reports that cannot be merged (not acp-model reports, or different revisions)."""


def merge_reports(reports: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None
                  ) -> dict[str, Any]:
    if not reports:
        raise MergeError("nothing to merge")
    names = list(names or [f"report {n + 1}" for n in range(len(reports))])
    for name, r in zip(names, reports, strict=True):
        if not isinstance(r, Mapping) or r.get("tool") != "acp-model" or "rules" not in r:
            raise MergeError(f"{name}: not an acp-model check/fuzz/proxy report")
    revisions = {str((r.get("spec") or {}).get("revision", "seed")) for r in reports}
    if len(revisions) > 1:
        raise MergeError(f"reports of different spec revisions ({', '.join(sorted(revisions))})"
                         " judge by different rules; merge each revision's reports apart")
    first = reports[0]
    counterexamples = _counterexamples(reports, names)
    violations = _violations(reports, names, {ce["rule"]: ce["worker"] for ce in counterexamples})
    failures = sum(v.get("level") == Level.FAIL for v in violations)
    summary: dict[str, Any] = {key: sum(int((r.get("summary") or {}).get(key) or 0)
                                        for r in reports)
                               for key in SUMMED if any(key in (r.get("summary") or {})
                                                        for r in reports)}
    seconds = [float((r.get("summary") or {}).get("seconds") or 0) for r in reports]
    summary.update({"workers": len(reports), "seconds_total": round(sum(seconds), 3),
                    "seconds_longest": round(max(seconds), 3),
                    "failures": failures, "warnings": len(violations) - failures})
    transitions: dict[str, int] = {}
    for r in reports:
        for key, n in (r.get("transitions") or {}).items():
            transitions[key] = transitions.get(key, 0) + int(n)
    return {
        "tool": "acp-model", "version": __version__, "command": "merge",
        "source": ", ".join(names),
        "verdict": _verdict(failures, reports),
        "summary": summary,
        "spec": first.get("spec"),
        "readings": first.get("readings"),
        "readings_changed": first.get("readings_changed") or {},
        "violations": violations,
        "rules": _rules(reports),
        "counterexamples": counterexamples,
        "notes": _notes(reports, names),
        "transitions": dict(sorted(transitions.items())),
        "reach": _summed(reports, "reach"),
        "agent_info": next((r["agent_info"] for r in reports if r.get("agent_info")), None),
        "client": _client(reports),
        # workers run side by side: a transition was first seen when the first worker saw it
        "coverage": {"first_seen": _first_seen(reports)},
        "workers": [{"source": name, "command": r.get("command"), "verdict": r.get("verdict"),
                     "summary": r.get("summary"), "readings_changed": r.get("readings_changed")}
                    for name, r in zip(names, reports, strict=True)],
    }


def _summed(reports: Sequence[Mapping[str, Any]], key: str) -> dict[str, int]:
    """A mapping of counters, summed over the reports that have it."""
    out: dict[str, int] = {}
    for r in reports:
        for name, n in (r.get(key) or {}).items():
            out[name] = out.get(name, 0) + int(n)
    return out


def _client(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The client the workers played (``--jobs`` draws one for all), with the requests it
    served summed; None when the reports name none (or not the same one)."""
    clients = [r["client"] for r in reports if isinstance(r.get("client"), Mapping)]
    if not clients or any(c.get("profile") != clients[0].get("profile") for c in clients):
        return None
    return {**clients[0], "served": _summed(clients, "served")}


def _verdict(failures: int, reports: Sequence[Mapping[str, Any]]) -> str:
    """A failure anywhere fails; otherwise a report that judged nothing (its agent unusable)
    leaves the whole unproven: ``error``, never a pass."""
    verdicts = {r.get("verdict") for r in reports}
    if failures or "fail" in verdicts:
        return "fail"
    return "error" if "error" in verdicts else "pass"


def _first_seen(reports: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in reports:
        for key, seconds in ((r.get("coverage") or {}).get("first_seen") or {}).items():
            out[key] = min(out.get(key, float(seconds)), float(seconds))
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def _violations(reports: Sequence[Mapping[str, Any]], names: Sequence[str],
                kept_from: Mapping[str, str]) -> list[dict[str, Any]]:
    """One entry per (rule, check, level) with ``seen`` summed and the ``worker`` whose run its
    record numbers are of: for a failure, the worker whose counterexample was kept (so the
    proof and the counterexample's files agree), otherwise the first that saw it."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for name, r in zip(names, reports, strict=True):
        for v in r.get("violations") or []:
            key = (v.get("rule"), v.get("check"), v.get("level"))
            known = out.get(key)
            if known is None:
                out[key] = {**v, "seen": int(v.get("seen", 1)), "worker": name}
                continue
            seen = known["seen"] + int(v.get("seen", 1))
            if kept_from.get(str(v.get("rule"))) == name != known["worker"] \
                    and v.get("level") == Level.FAIL:
                out[key] = {**v, "worker": name}
            out[key]["seen"] = seen
    return sorted(out.values(), key=lambda v: (v.get("level") != Level.FAIL, str(v.get("rule"))))


def _rules(reports: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for r in reports:
        for rule in r["rules"]:
            known = merged.get(rule["id"])
            if known is None:
                merged[rule["id"]] = dict(rule)
                continue
            for key in ("exercised", "violations", "warnings"):
                known[key] = int(known.get(key) or 0) + int(rule.get(key) or 0)
            known["status"] = min(known["status"], rule["status"], key=_rank)
    for rule in merged.values():  # a rule exercised by one worker, broken by none, held
        if rule["status"] == "not exercised" and rule.get("exercised"):
            rule["status"] = "held"
    return list(merged.values())


def _rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def _counterexamples(reports: Sequence[Mapping[str, Any]], names: Sequence[str]
                     ) -> list[dict[str, Any]]:
    """Per rule, the best worker's program with its own reproduction: one a fresh process
    reproduced beats one none did (only that may be called minimal), then the shorter wins.
    ``workers`` and ``times_seen`` count every worker that saw the rule."""
    best: dict[str, dict[str, Any]] = {}
    for name, r in zip(names, reports, strict=True):
        for ce in r.get("counterexamples") or []:
            rule = ce["rule"]
            replays = int(ce.get("replays") or 0)
            mine = {**ce, "worker": name,
                    "reproduction": f"{ce.get('reproduced', 0)}/{replays}" if replays
                    else "not replayed"}
            known = best.get(rule)
            if known is None:
                best[rule] = {**mine, "workers": [name]}
                continue
            known["workers"].append(name)
            known["times_seen"] = int(known.get("times_seen") or 0) + int(ce.get("times_seen")
                                                                          or 0)
            if _rank_program(mine) < _rank_program(known):
                best[rule] = {**mine, "workers": known["workers"],
                              "times_seen": known["times_seen"]}
    return sorted(best.values(), key=lambda ce: str(ce["rule"]))


def _rank_program(ce: Mapping[str, Any]) -> tuple[bool, int]:
    return not int(ce.get("reproduced") or 0), len(ce.get("actions") or [])


def _notes(reports: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """What the workers noted (why a run ended early, an agent that could not be restarted,
    a failure Hypothesis could not replay): each text once, with the workers that wrote it."""
    by_text: dict[str, list[str]] = {}
    for name, r in zip(names, reports, strict=True):
        texts = [str(n) for n in r.get("notes") or []]
        texts += [f"unusable: {r['unusable']}"] if r.get("unusable") else []
        texts += [f"error: {r['problem']}"] if r.get("problem") else []
        for text in texts:
            by_text.setdefault(text, []).append(name)
    return [f"{text} ({', '.join(who)})" for text, who in by_text.items()]
