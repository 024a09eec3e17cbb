"""``bench_coverage.py --merge``: one agent measured at a time on a shared machine, the others'
figures kept and the summary recomputed over every agent the results file holds; where guided
does not win, the profile of why. Synthetic runs and files, no agent."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_coverage as bench

MARKS = [60.0, 300.0]


def agent(runtime: str, guided: tuple[float, float], unguided: tuple[float, float],
          seeds: list[int] | None = None, why: str | None = None) -> dict[str, Any]:
    """An agent as ``measure`` returns it, with one row per mode."""
    rows = [["x", runtime, 1, mode, *lines, 900, "3/9", 10, 299.0, "time budget spent"]
            for mode, lines in (("guided", guided), ("unguided", unguided))]
    return {"runtime": runtime,
            "parameters": {"seconds": 300.0, "marks": MARKS, "seeds": seeds or [1, 2, 3]},
            "means": {"guided": dict(zip(("60", "300"), guided, strict=True)),
                      "unguided": dict(zip(("60", "300"), unguided, strict=True))},
            "why": why, "rows": rows, "commit": "abc", "date": "2026-12-06T00:00:00Z"}


def head(summary: dict[str, Any]) -> dict[str, Any]:
    return summary["figures"][0]


def test_merging_replaces_the_agent_measured_and_keeps_the_others() -> None:
    old = {"a": agent("node", (10, 20), (10, 15)), "b": agent("python", (5, 5), (5, 6))}
    new = {"b": agent("python", (7, 9), (5, 6))}
    both = bench.merged(old, new)
    assert list(both) == ["a", "b"] and both["a"] is old["a"] and both["b"] is new["b"]
    s = bench.summary(both)
    assert head(s)["value"] == "2/2"  # b now wins too: recomputed over both agents
    assert head(s)["met"] is None  # one of each runtime held, two of each wanted
    assert "Partial: 1 Node and 1 Python" in s["notes"]
    assert len(s["table"]["rows"]) == 4
    values = {f["name"]: f["value"] for f in s["figures"][1:]}
    assert values["b (python): lines at 300 s, guided / unguided (mean)"] == "9.0 / 6.0"
    assert values["b: examples per run, guided / unguided (mean)"] == "10 / 10"


def test_the_target_is_judged_once_two_node_and_two_python_agents_are_held() -> None:
    four = {"a": agent("node", (1, 9), (1, 5)), "b": agent("node", (1, 9), (1, 5)),
            "c": agent("python", (1, 9), (1, 5)),
            "d": agent("python", (1, 4), (1, 5), why="flat")}
    s = bench.summary(four)
    assert (head(s)["value"], head(s)["met"]) == ("3/4", True)
    assert "Partial" not in s["notes"] and "- **d**: flat" in s["notes"]
    four["c"] = agent("python", (1, 5), (1, 5))  # a tie is no win
    assert (head(bench.summary(four))["value"], head(bench.summary(four))["met"]) \
        == ("2/4", False)


def test_parameters_that_differ_are_stated_per_agent() -> None:
    s = bench.summary({"a": agent("node", (1, 2), (1, 1)),
                       "b": agent("python", (1, 2), (1, 1), seeds=[1])})
    assert set(s["parameters"]["per agent"]) == {"a", "b"}
    assert "b: 300 s, seeds 1." in s["notes"]
    same = bench.summary({"a": agent("node", (1, 2), (1, 1))})
    assert same["parameters"] == {"seconds": 300.0, "marks": MARKS, "seeds": [1, 2, 3]}


def test_agents_measured_at_other_marks_do_not_merge() -> None:
    other = agent("python", (1, 2), (1, 1))
    other["parameters"] = {**other["parameters"], "marks": [30.0, 300.0]}
    with pytest.raises(ValueError, match="different marks"):
        bench.summary({"a": agent("node", (1, 2), (1, 1)), "b": other})


def test_a_file_written_before_the_detail_was_kept_is_read_from_its_table() -> None:
    legacy = {"commit": "f20c", "date": "2026-12-06T07:41:46Z",
              "parameters": {"seconds": 300.0, "marks": MARKS, "seeds": [1, 2]},
              "table": {"columns": ["agent", "runtime", "seed", "mode", "lines at 60 s",
                                    "lines at 300 s", "layer lines", "examples", "run (s)",
                                    "how it ended"],
                        "rows": [["a", "node", 1, "guided", 10, 20, 99, 5, 1.0, ""],
                                 ["a", "node", 1, "unguided", 10, 14, 99, 5, 1.0, ""],
                                 ["a", "node", 2, "guided", 12, 22, 99, 5, 1.0, ""],
                                 ["a", "node", 2, "unguided", 10, 16, 99, 5, 1.0, ""]]}}
    (name, got), = bench.previous(copy.deepcopy(legacy)).items()
    assert name == "a" and got["runtime"] == "node" and got["commit"] == "f20c"
    assert got["means"] == {"guided": {"60": 11.0, "300": 21.0},
                            "unguided": {"60": 10.0, "300": 15.0}}
    assert all(len(r) == len(bench.COLUMNS_AFTER_MARKS) + 6 for r in got["rows"])
    kept = {"detail": {"agents": {"a": got}}}
    assert bench.previous(kept) == {"a": got}  # a new file is read from its detail


BUNDLE = "\n".join(["// src/other.ts", "x();", "// src/acp/cancel.ts",
                    "function onCancel(session) {", "  session.abort();", "}", "y();"])


def run(path: Path, hit: set[int], curve: list[tuple[float, int]], examples: int = 40,
        notes: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"samples": [{"seconds": t, "lines": n} for t, n in curve],
            "files": {str(path): (hit, set(range(1, 101)))}, "examples": examples,
            "notes": list(notes)}


def test_the_profile_of_why_names_flat_curves_and_the_lines_only_unguided_reached(
        tmp_path: Path) -> None:
    agent_js = tmp_path / "agent.js"
    agent_js.write_text(BUNDLE)
    corpus = "coverage guidance: 12 examples continued one of the 9 that reached new code"
    runs = {True: [run(agent_js, {1, 2, 3}, [(10, 3), (300, 3)], 30, ("time", corpus))],
            False: [run(agent_js, {1, 2, 3, 4, 5, 7}, [(10, 6), (300, 6)])]}
    why = bench.why_not(runs, MARKS, 300.0, str(tmp_path))
    assert why.startswith("guided 3 vs unguided 6 lines at 300 s")
    assert "examples per run (mean): guided 30 (12 of them continuing the corpus) vs " \
           "unguided 40" in why
    assert "both mean curves are flat" in why
    assert "no guided run did: 3 (agent.js 3; where: agent.js:4-5 (src/acp/cancel.ts) " \
           "`function onCancel(session) {`; agent.js:7 (src/acp/cancel.ts) `y();`)" in why
    assert "no run reached, by module or file: agent.js 93, agent.js (src/acp/cancel.ts) 1; " \
           "the largest spans no run reached: agent.js:8-100; agent.js:6 (src/acp/cancel.ts)" \
           in why  # a bundle's lines by the module holding them
    growing = {True: [run(agent_js, {1}, [(10, 1), (300, 40)])], False: runs[False]}
    assert "still growing at the end: guided" in bench.why_not(growing, MARKS, 300.0,
                                                               str(tmp_path))


def test_line_ranges() -> None:
    assert bench.ranges({9, 3, 4, 5, 11, 12}) == [(3, 5), (9, 9), (11, 12)]
    assert bench.ranges(set()) == []


def test_a_measurement_kept_as_before_is_stated_in_the_notes() -> None:
    old = {"commit": "abc", "parameters": {"seconds": 300.0, "marks": MARKS, "seeds": [1, 2]},
           "detail": {"agents": {"a": agent("node", (10, 20), (11, 21))}}}
    before = bench.before_of(old)
    assert bench.before_of({"detail": {"before": before}}) == before  # passed on as it is
    notes = bench.before_notes(before)
    assert "measured at abc with 300 s runs, seeds 1 2" in notes
    assert "a: 60 s 10.0 / 11.0, 300 s 20.0 / 21.0." in notes
    assert "Not measured again at 300 s" in bench.before_notes(before, [60.0])
    assert "Not measured again" not in bench.before_notes(before, MARKS)
