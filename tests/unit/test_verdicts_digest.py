"""``benchmarks/verdicts.py``: the digest of a check, the comparison of two digests and the
rule that a racy fuzz difference counts only when it persists over reruns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_model.cli.main import main
from benchmarks.verdicts import (
    FAILURES,
    PLACES,
    VERDICT,
    WARNINGS,
    atoms,
    compare,
    digest_report,
)
from tests.helpers import S, base, turn_start

SEED = Path(__file__).resolve().parents[2] / "examples" / "traces" / "seed-flow.jsonl"


def _digest(trace: Path, tmp: Path) -> dict[str, Any]:
    out = tmp / f"{trace.stem}.report.json"
    main(["check", str(trace), "--report", str(out), "--spec", "seed"])
    return digest_report(json.loads(out.read_text()))


def _doc(traces: dict[str, Any] | None = None, zoo: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    return {"traces": traces or {}, "zoo": zoo or {}, "agents": {}}


def test_a_verdict_change_of_a_trace_is_found_and_split_into_its_rules(tmp_path: Path) -> None:
    good = _digest(SEED, tmp_path)
    bad_trace = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn")
    bad = _digest(bad_trace.log.write(tmp_path / "bad.jsonl"), tmp_path)
    assert good["verdict"] == "pass" and bad["verdict"] == "fail"
    assert compare(_doc({"t [seed]": good}), _doc({"t [seed]": good})) == []
    diffs = compare(_doc({"t [seed]": good}), _doc({"t [seed]": bad}))
    assert [(d["item"], d["status"]) for d in diffs] == [("t [seed]", "verdict change")]
    assert ("rule", ["CANCEL-07", "fail", "+"]) in atoms(good, bad)
    assert ("rule", ["CANCEL-07", "fail", "-"]) in atoms(bad, good)


def test_a_trace_difference_is_named_by_what_it_changes() -> None:
    """Only a changed exit code, pass/fail or decided revision is a verdict change; the
    failures under the same verdict, the warnings alone and the same findings at other
    messages are each a difference of their own (the 2026-12-05 record counted all 265 as
    verdict changes, of which one changed a verdict)."""
    def entry(verdict: str, *found: tuple[str, str, int]) -> dict[str, Any]:
        return {"exit": int(verdict == "fail"), "verdict": verdict, "revision": "v1",
                "violations": sorted([r, lv, i] for r, lv, i in found)}

    fail = entry("fail", ("INIT-03", "fail", 2))
    cases = {"verdict": (fail, entry("pass", ("INIT-03", "warn", 2))),
             "failures": (fail, entry("fail", ("INIT-03", "fail", 2), ("RPC-09", "fail", 4))),
             "warnings": (fail, entry("fail", ("INIT-03", "fail", 2), ("ENUM-12", "warn", 3))),
             "places": (fail, entry("fail", ("INIT-03", "fail", 5)))}
    found = {name: compare(_doc({"t [v1]": a}), _doc({"t [v1]": b}))[0]["status"]
             for name, (a, b) in cases.items()}
    assert found == {"verdict": VERDICT, "failures": FAILURES, "warnings": WARNINGS,
                     "places": PLACES}


def test_an_error_is_compared_without_the_checkout_it_ran_in() -> None:
    """Two sides run from two checkouts: an unusable trace's error names it under each one's
    path, which is no difference; another error is."""
    def err(text: str) -> dict[str, Any]:
        return {"exit": 2, "error": text}

    old = err("error: unusable trace: /tmp/old/tests/data/x.jsonl:1: 'dir' must be set")
    new = err("error: unusable trace: /work/new/tests/data/x.jsonl:1: 'dir' must be set")
    assert compare(_doc({"x [seed]": old}), _doc({"x [seed]": new})) == []
    other = err("error: unusable trace: /work/new/tests/data/x.jsonl:2: 'dir' must be set")
    assert compare(_doc({"x [seed]": old}), _doc({"x [seed]": other}))[0]["status"] == VERDICT


def _run(*failures: str) -> dict[str, Any]:
    return {"verdict": "fail" if failures else "pass", "failures": list(failures),
            "warnings": []}


def test_a_fuzz_difference_counts_only_when_every_run_of_one_side_shows_it() -> None:
    old = _doc(zoo={"m": [_run("CANCEL-07")]})
    one_run = compare(old, _doc(zoo={"m": [_run("CANCEL-07", "RPC-09")]}))
    assert one_run[0]["status"] == "rerun both sides"
    racy = compare(_doc(zoo={"m": [_run("CANCEL-07"), _run("CANCEL-07", "RPC-09")]}),
                   _doc(zoo={"m": [_run("CANCEL-07", "RPC-09"), _run("CANCEL-07")]}))
    assert racy == []  # the same outcomes, in another order
    flaky = compare(_doc(zoo={"m": [_run("CANCEL-07"), _run("CANCEL-07", "RPC-09")]}),
                    _doc(zoo={"m": [_run("CANCEL-07", "RPC-09"), _run("CANCEL-07", "X-1")]}))
    assert flaky[0]["status"] == "racy (not persistent)"
    lost = compare(_doc(zoo={"m": [_run("CANCEL-07"), _run("CANCEL-07")]}),
                   _doc(zoo={"m": [_run(), _run()]}))
    assert (lost[0]["status"], lost[0]["persistent"]) == ("persistent",
                                                          ["failure CANCEL-07 (old only)"])


def test_a_part_s_checks_in_one_process_digest_as_a_process_per_check_does(
        tmp_path: Path) -> None:
    """The trace part's checks run in one process of the side's Python; each entry is the one
    a process of its own gives, a usage error (exit 2, its last line) included."""
    import sys

    from benchmarks.verdicts import Side, check, checks

    exe = Path(sys.executable).with_name("acp-model")
    side = Side(exe.absolute())
    items = [("seed [seed]", SEED, ("--spec", "seed")),
             ("seed [bad]", SEED, ("--spec", "seed", "--reading", "NOPE=1"))]
    batched = {key: entry for _, key, entry in checks(side, items, tmp_path)}
    alone = {key: check(side, trace, flags, tmp_path) for key, trace, flags in items}
    assert batched == alone
    assert batched["seed [seed]"]["verdict"] == "pass" and batched["seed [bad]"]["exit"] == 2
