"""Properties (a)-(e) judged on an exploration, each with its shortest witnesses."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from acp_model.explorer.alphabet import _ALPHABET_EVENTS, alphabet
from acp_model.explorer.search import _HELP_FREE, Edge, Exploration, Refusal
from acp_model.model.vocab import WORK, Event, StopReason

PROPERTIES = {
    "a": "every reachable state can return to a quiescent idle with agent events and the "
         "client's own obligations (permission and elicitation answers) only: no deadlock, "
         "no livelock",
    "b": "once the agent provably read a cancel sent during work, every idle ending that work "
         "says cancelled (an unread cancel may race with another stop reason), and the agent "
         "can still end it so",
    "c": "every state and every (state, event) transition of the machine is reachable, and "
         "the machine has a transition for every (state, event)",
    "d": "the idle that ends a turn accepts a new prompt",
    "e": "stop reasons only where the rules put them: cancelled only after the client stopped "
         "something (a cancel, a withdrawn prompt, a refused permission), and every idle that "
         "ends reported work carries a reason, or is judged by the rule that asks for one "
         "(STATE-03: a MUST in the seed, a SHOULD with its warning in sdk-2.4.0)",
}


PROPERTY_NAMES = {"a": "every state can settle (no deadlock / livelock)",
                  "b": "a read cancel ends the work with cancelled",
                  "c": "every state and transition reachable",
                  "d": "the idle ending a turn accepts a prompt",
                  "e": "stop reasons only where the rules put them"}


@dataclass
class PropertyResult:
    id: str
    holds: bool
    summary: str
    checked: int
    violations: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": PROPERTY_NAMES[self.id],
                "statement": PROPERTIES[self.id], "holds": self.holds,
                "summary": self.summary, "checked": self.checked,
                "violations": self.violations, **self.details}


def _violation(exp: Exploration, what: str, path: list[Edge], **extra: Any) -> dict[str, Any]:
    return {"what": what, **extra, "witness": exp.witness(path).to_json()}


def check_properties(exp: Exploration, limit: int = 3) -> list[PropertyResult]:
    """Judge properties (a)-(e) on the graph under its first readings."""
    idle_edges = sum(1 for e in exp.edges
                     if e.action.event == Event.IDLE_REPORTED and e.allowed & 1)
    results = [_prop_a(exp, limit), _prop_b(exp, limit), _prop_c(exp, limit)]
    for pid, what in (("d", "after this idle the model refuses a new prompt"),
                      ("e", "a stop reason where the rules put none (or none where they "
                            "require one)")):
        bad = sorted((e for e in exp.edges if pid in e.breaks), key=lambda e: exp.depth[e.src])
        results.append(PropertyResult(
            pid, not bad, f"{len(bad)} of {idle_edges} idle transitions break it" if bad
            else f"{idle_edges} idle transitions checked", idle_edges,
            [_violation(exp, what, [*exp.path_to(e.src), e]) for e in bad[:limit]]))
    return results


def _prop_a(exp: Exploration, limit: int) -> PropertyResult:
    rev: dict[int, list[int]] = {}
    for e in exp.edges:
        if e.allowed & 1 and e.action.event in _HELP_FREE:
            rev.setdefault(e.dst, []).append(e.src)
    good = {n for n in range(exp.nodes) if not exp.info[n]["obligations"][0]}
    quiescent = len(good)
    _close_backwards(good, rev)
    stuck = sorted((n for n in range(exp.nodes) if n not in good), key=lambda n: exp.depth[n])
    viol = [_violation(exp, "no help-free way back to a quiescent idle from here",
                       exp.path_to(n), state=exp.info[n]["label"],
                       owes=list(exp.info[n]["obligations"][0])) for n in stuck[:limit]]
    return PropertyResult("a", not stuck, f"{len(stuck)} of {exp.nodes} states cannot settle"
                          if stuck else f"all {exp.nodes} states can settle "
                          f"({quiescent} quiescent)", exp.nodes, viol,
                          {"stuck_states": len(stuck), "quiescent_states": quiescent})


def _prop_b(exp: Exploration, limit: int) -> PropertyResult:
    bad = sorted((e for e in exp.edges if "b" in e.breaks), key=lambda e: exp.depth[e.src])
    viol = [_violation(exp, "work ended without cancelled after the agent provably read a "
                       "cancel sent during it", [*exp.path_to(e.src), e]) for e in bad[:limit]]
    # Ending it with cancelled must stay possible from every such state (help-free).
    read_cancel = set()
    for n, key in enumerate(exp.keys):
        for s, (_, wc, *_) in enumerate(key):
            if wc and wc[0] < 0 and exp.info[n]["states"][s] in WORK:  # read: negative
                read_cancel.add((n, s))
    can_cancel = _can_reach_cancelled_idle(exp)
    blocked = sorted((n for n, s in read_cancel if (n, s) not in can_cancel),
                     key=lambda n: exp.depth[n])
    viol += [_violation(exp, "the agent can no longer end the cancelled work with cancelled",
                        exp.path_to(n)) for n in blocked[:limit]]
    holds = not bad and not blocked
    summary = (f"{len(read_cancel)} state(s) with a read cancel checked" if holds else
               f"{len(bad)} non-cancelled idle(s) after a read cancel, {len(blocked)} state(s) "
               "that cannot end with cancelled")
    return PropertyResult("b", holds, summary, len(read_cancel), viol)


def _can_reach_cancelled_idle(exp: Exploration) -> set[tuple[int, int]]:
    """(node, canonical session) pairs with a help-free path to an idle(cancelled) of that
    session ending work (sessions are tracked through canonical reorderings)."""
    good: set[tuple[int, int]] = set()
    rev: dict[tuple[int, int], list[tuple[int, int]]] = {}
    n_s = exp.bounds.sessions
    for e in exp.edges:
        if not e.allowed & 1 or e.action.event not in _HELP_FREE:
            continue
        if e.action.event == Event.IDLE_REPORTED and e.action.arg == StopReason.CANCELLED \
                and e.src_state in WORK:
            good.add((e.src, e.action.session))  # type: ignore[arg-type]
        order = e.order or tuple(range(n_s))
        for j in range(n_s):  # canonical position j of dst is position order[j] of src
            rev.setdefault((e.dst, j), []).append((e.src, order[j]))
    _close_backwards(good, rev)
    return good


def _close_backwards(good: set[Any], rev: dict[Any, list[Any]]) -> None:
    """Add to ``good`` everything from which some edge path (``rev`` reversed) reaches it."""
    queue = deque(good)
    while queue:
        v = queue.popleft()
        for u in rev.get(v, ()):
            if u not in good:
                good.add(u)
                queue.append(u)


def _prop_c(exp: Exploration, limit: int) -> PropertyResult:
    table = exp.table
    legal: set[tuple[str, str]] = set()
    for e in exp.edges:
        if e.action.session is not None and e.allowed & 1:
            legal.add((e.src_state, e.action.event))
    refused: dict[tuple[str, str], tuple[Refusal, set[str]]] = {}
    for rf in exp.refusals:
        if rf.rules[0]:
            key = (rf.src_state, rf.action.event)
            if key in refused:
                refused[key][1].update(rf.rules[0])
            else:
                refused[key] = (rf, set(rf.rules[0]))
    reached = {s for inf in exp.info for s in inf["states"]}
    tried = alphabet(exp.bounds)
    # what the bounds leave out: events never tried, states only those events enter
    explorable = {table.initial}
    grow = True
    while grow:
        grow = False
        for (src, ev), tr in table.transitions.items():
            if src in explorable and ev in tried and tr.target not in explorable:
                explorable.add(tr.target)
                grow = True
    in_scope = [k for k in table.transitions if k[0] in explorable and k[1] in tried]
    out_of_scope = [k for k in table.transitions if k not in set(in_scope)]
    unreached = [s for s in table.states if s in explorable and s not in reached]
    events = list(dict.fromkeys([*table.events, *_ALPHABET_EVENTS]))
    missing = [(s, e) for s in table.states for e in events if (s, e) not in table.transitions]
    never = [k for k in in_scope if k not in legal and k not in refused]
    only_refused = [k for k in in_scope if k not in legal and k in refused]
    viol: list[dict[str, Any]] = []
    viol += [{"what": f"state {str(s)!r} is never reached"} for s in unreached]
    viol += [{"what": f"no transition for {str(e)!r} in state {str(s)!r}: the monitor could "
              "not follow such a message"} for s, e in missing]
    viol += [{"what": f"transition {s}:{e} is never attempted within the bounds"}
             for s, e in never]
    violation_only = []
    for key in only_refused:
        rf, rules = refused[key]
        violation_only.append({
            "transition": f"{key[0]}:{key[1]}", "refused_by": sorted(rules),
            "witness": exp.witness(exp.path_to(rf.src), rf.action).to_json()})
    holds = not unreached and not missing and not never
    total = len(table.transitions)
    summary = (f"{len(legal)} of {total} transitions legal somewhere, "
               f"{len(only_refused)} violation-only (always refused), {len(never)} never "
               f"attempted, {len(missing)} missing, {len(out_of_scope)} outside the bounds' "
               f"alphabet; {len(reached)} of {len(table.states)} states reached")
    return PropertyResult("c", holds, summary, total, viol[: limit * 10], {
        "outside_alphabet": [f"{s}:{e}" for s, e in out_of_scope],
        "legal_transitions": sorted(f"{s}:{e}" for s, e in legal),
        "violation_only": violation_only,
        "never_attempted": [f"{s}:{e}" for s, e in never],
        "missing_transitions": [f"{s}:{e}" for s, e in missing],
        "unreached_states": unreached})
