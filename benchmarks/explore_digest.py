"""Digests of explorations, so a change to the explorer's speed can prove it changed no verdict.

    .venv/bin/python benchmarks/explore_digest.py --save before.json   # on the old code
    .venv/bin/python benchmarks/explore_digest.py --compare before.json  # on the new code
    .venv/bin/python benchmarks/explore_digest.py --only one,diff-a04 --save part.json

``tests/unit/test_explore_digest.py`` pins the two ``pinned-*`` cases against
``tests/data/explore-digests.json``; an intended change of the graph rewrites that file with
``--only pinned-perms,pinned-two --save tests/data/explore-digests.json``.

For each case (about twenty: every exploration the tests make, the benchmark's rows and a few
revisions and readings besides) it hashes, separately:

* ``graph``: per node its depth, label, control states and obligations, the BFS-tree parent;
  every edge (source, target, action, source state, readings allowing it, warnings, broken
  properties, session reordering) and every refusal (source, action, state, rules), in order;
* ``keys``: the canonical keys (their shape may change with a faster representation while the
  graph above stays the same, so they are apart);
* ``verdicts``: :func:`check_properties` with its witnesses (the concrete traces), and for the
  diff cases the whole :func:`diff_readings` report.

``--compare`` prints which digests differ and exits 1 if one of ``graph``/``verdicts`` does.
Each case prints its exploration time too (not a benchmark: the machine is shared).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.explorer import (
    Bounds,
    Exploration,
    check_properties,
    contradictions,
    diff_readings,
    explore,
    parse_diff,
)
from acp_model.model.check import CheckMeta
from acp_model.model.engine import CheckSpec, compile_machine
from acp_model.model.lifecycle import SessionLifecycle
from acp_model.model.session import SessionModel
from acp_model.model.vocab import Role
from acp_model.spec.readings import DEFAULT
from tests.unit.test_explore import LEAN_2, CancelForgotten, CancelledWithoutCause


def _missing_table() -> Any:
    table = compile_machine(SessionLifecycle, SessionModel)
    gone = {("requires_action", "idle_reported"), ("requires_action", "running_reported"),
            ("requires_action", "custom_reported")}
    return dataclasses.replace(table, transitions={k: v for k, v in table.transitions.items()
                                                   if k not in gone})


def _no_second_turn_table() -> Any:
    table = compile_machine(SessionLifecycle, SessionModel)
    never = CheckSpec(CheckMeta("no_second_turn", "PROMPT-01", __name__, Role.GUARD,
                                "a broken guard: idle refuses prompts"), lambda m, ev: False)
    tr = table.transitions[("idle", "prompt")]
    return dataclasses.replace(table, transitions={
        **table.transitions, ("idle", "prompt"): dataclasses.replace(tr, checks=(never,))})


WIDER_READINGS = DEFAULT.parse(["A-04=idle-cancelled", "A-10=cancel"])


def _explorations() -> dict[str, Callable[[], Exploration]]:
    return {
        "one": lambda: explore(),
        "two-default": lambda: explore(sessions=2),
        "two-lean": lambda: explore(bounds=LEAN_2),
        "forgotten-cancel": lambda: explore(model=CancelForgotten),
        "unguarded-cancelled": lambda: explore(model=CancelledWithoutCause),
        "missing-transition": lambda: explore(table=_missing_table(), max_permissions=0),
        "no-second-turn": lambda: explore(table=_no_second_turn_table(), max_permissions=0),
        "a04-idle-cancelled": lambda: explore(readings=DEFAULT.parse(["A-04=idle-cancelled"])),
        "a11-never": lambda: explore(readings=DEFAULT.parse(["A-11=never"]),
                                     max_permissions=0),
        "two-requests": lambda: explore(bounds=Bounds(max_permissions=2, custom=False,
                                                      lean=True), readings=WIDER_READINGS),
        "two-prompts-two-cancels": lambda: explore(bounds=Bounds(
            max_prompts=2, max_cancels=2, max_permissions=0, custom=False, lean=True),
            readings=WIDER_READINGS),
        "tool-call-lean": lambda: explore(bounds=Bounds(max_tools=1, custom=False, lean=True),
                                          readings=WIDER_READINGS),
        "uncompacted": lambda: explore(bounds=Bounds(custom=False, lean=True), compact=False),
        "one-two-prompts-lean": lambda: explore(bounds=Bounds(max_prompts=2, custom=False,
                                                              lean=True, max_permissions=0)),
        "one-sdk-2.4.0": lambda: explore(readings=DEFAULT.parse(["SPEC=sdk-2.4.0"])),
        "one-v1": lambda: explore(readings=DEFAULT.parse(["SPEC=v1"]), max_permissions=0),
        # small enough for a unit test to pin (tests/unit/test_explore_digest.py): one session
        # with a permission request (compaction), and two sessions (renaming, reused ranks)
        "pinned-perms": lambda: explore(bounds=Bounds(custom=False, lean=True,
                                                      reasons=("end_turn", "cancelled"))),
        "pinned-two": lambda: explore(bounds=Bounds(sessions=2, max_permissions=0,
                                                    max_cancels=0, custom=False, lean=True,
                                                    reasons=("end_turn",))),
        # three sessions (canonical orders of three); with cancels the smallest has 68k states
        "three-no-cancel": lambda: explore(bounds=Bounds(sessions=3, max_permissions=0,
                                                         max_cancels=0, custom=False, lean=True,
                                                         reasons=("end_turn",)),
                                           readings=DEFAULT.parse(["A-03=diagram",
                                                                   "A-07=forbid"])),
    }


DIFFS = {"diff-a01": "A-01=join,forbid", "diff-a04": "A-04", "diff-spec": "SPEC=seed,sdk-2.4.0"}


def _h(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=repr).encode()).hexdigest()


def graph_digest(exp: Exploration) -> str:
    nodes = [(exp.depth[n], exp.info[n]["label"], exp.info[n]["states"],
              exp.info[n]["obligations"], None if (p := exp.parent[n]) is None
              else (p.src, p.action.label)) for n in range(exp.nodes)]
    edges = [(e.src, e.dst, e.action.label, repr(e.action.arg), e.src_state, e.allowed,
              e.warns, e.breaks, e.order) for e in exp.edges]
    refusals = [(r.src, r.action.label, r.src_state, r.rules) for r in exp.refusals]
    return _h([nodes, edges, refusals])


def digests(name: str) -> tuple[dict[str, str], float]:
    t0 = time.perf_counter()
    if name in DIFFS:
        (a, b), = parse_diff(DIFFS[name])
        d = diff_readings(a, b, max_prompts=2, max_permissions=0)
        exp = d.pop("exploration")
        d.pop("seconds")
        return {"graph": graph_digest(exp), "keys": _h(exp.keys), "verdicts": _h(d)}, \
            exp.seconds
    if name == "contradictions":
        rep = contradictions(explore_kw={"max_permissions": 0})
        return {"verdicts": _h(rep)}, time.perf_counter() - t0
    exp = _explorations()[name]()
    props = [p.to_json() for p in check_properties(exp, limit=3)]
    return {"graph": graph_digest(exp), "keys": _h(exp.keys), "verdicts": _h(props),
            "size": f"{exp.nodes}/{len(exp.edges)}/{len(exp.refusals)}"}, exp.seconds


def main() -> int:
    names = [*_explorations(), *DIFFS, "contradictions"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated cases of: {', '.join(names)}")
    parser.add_argument("--save", type=Path, help="write the digests here (merged into it)")
    parser.add_argument("--compare", type=Path, help="compare with digests saved before")
    args = parser.parse_args()
    chosen = args.only.split(",") if args.only else names
    unknown = [n for n in chosen if n not in names]
    if unknown:
        parser.error(f"unknown case(s): {', '.join(unknown)}")
    saved = json.loads(args.compare.read_text()) if args.compare else {}
    out = json.loads(args.save.read_text()) if args.save and args.save.exists() else {}
    bad = 0
    for name in chosen:
        d, seconds = digests(name)
        out[name] = d
        verdict = ""
        if name in saved:
            diff = [k for k in d if saved[name].get(k) != d[k]]
            bad += any(k in ("graph", "verdicts") for k in diff)
            verdict = "same" if not diff else "DIFFERS: " + ", ".join(diff)
        print(f"{name:26} {seconds:7.2f} s  {d.get('size', ''):22} {verdict}", flush=True)
        if args.save:
            args.save.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
