"""A corpus shared across machines: a real ``redis-server`` (started on a free loopback port
and stopped here), Hypothesis' own database classes behind ``--db``, and ``acp-model merge``
over the workers' reports."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis.database import MultiplexedDatabase, ReadOnlyDatabase

from acp_model.cli.main import main
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.database import DatabaseError, example_database, locations
from acp_model.report.merge import MergeError, merge_reports
from tests.helpers import S, base, turn_start
from tests.live.shared import first_seed_finding

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
# Needs a notification-only batch: seed 3 mostly generates one in its 10th example, seed 1
# only in its 88th (tests/live/test_campaigns.py); the trigger does not depend on timing.
RULE = "RPC-09"
MUTANT = [*REFERENCE, "--mutant", "empty_batch_reply"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed: run `make services` (make test does)")
    port = _free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:  # the server says when it accepts connections
        if "Ready to accept connections" in line:
            break
    else:
        pytest.fail(f"redis-server exited ({proc.wait()})")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


def _cfg(seed: int, **kw: object) -> FuzzConfig:
    """(What follows generation, minimizing the failure, is not what these tests read.)"""
    return FuzzConfig(MUTANT, max_examples=150, steps=15, seed=seed, deadline=1.0,
                      max_rounds=1, replay_runs=0, shrink_budget=3.0, minimize_budget=0.5,
                      stop_on=frozenset({RULE}), **kw)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.external  # redis-server
def test_a_failure_found_by_one_worker_replays_first_on_another(redis_url: str,
                                                                tmp_path: Path) -> None:
    # Worker A (this process) finds it and stores it in Redis, multiplexed with its directory
    # (on a loaded machine, maybe with another seed; the trigger does not depend on timing).
    found = first_seed_finding(RULE, lambda seed: _cfg(seed, database=str(tmp_path / "a"),
                                                       shared_databases=(redis_url,)))
    assert found[-1] is not None, found
    import redis

    keys = redis.Redis.from_url(redis_url).keys("acp-model:*")
    assert keys, "worker A stored its failure in Redis"
    # Worker B: a fresh process on a fresh agent, its own seed (alone it needs 88 examples),
    # a budget of 3 examples and another local directory: it fails at once.
    report = tmp_path / "b.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--seed", "1", "--max-examples", "3",
         "--steps", "15", "--deadline", "1", "--replay-runs", "1", "--minimize-budget", "1",
         "--db", redis_url,
         "--db", str(tmp_path / "b"), "--report", str(report), "--", *MUTANT],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    assert RULE in {ce["rule"] for ce in doc["counterexamples"]}
    # The control: the same worker without the shared store does not find it in 3 examples.
    control = tmp_path / "c.json"
    proc = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--seed", "1", "--max-examples", "3",
         "--steps", "15", "--deadline", "1", "--replay-runs", "1", "--report", str(control),
         "--", *MUTANT], capture_output=True, text=True, timeout=300)
    assert RULE not in {ce["rule"] for ce in json.loads(control.read_text())["counterexamples"]}
    # The two workers' reports merge into one.
    merged = tmp_path / "merged.json"
    assert main(["merge", str(report), str(control), "--report", str(merged)]) == 1
    m = json.loads(merged.read_text())
    assert m["summary"]["workers"] == 2
    assert m["summary"]["examples"] == doc["summary"]["examples"] + json.loads(
        control.read_text())["summary"]["examples"]
    assert [ce["rule"] for ce in m["counterexamples"]].count(RULE) == 1


@pytest.mark.external  # redis-server
def test_read_only_and_multiplexed_stores(redis_url: str, tmp_path: Path) -> None:
    both = example_database(FuzzConfig(MUTANT, database=str(tmp_path),
                                       shared_databases=(redis_url,)))
    assert isinstance(both, MultiplexedDatabase)
    ro = example_database(FuzzConfig(MUTANT, database=str(tmp_path),
                                     shared_databases=(redis_url,), database_readonly=True))
    assert isinstance(ro, MultiplexedDatabase)
    ro.save(b"k", b"v")  # reaches the directory only
    import redis

    assert redis.Redis.from_url(redis_url).keys("acp-model:*") == []
    assert any(isinstance(d, ReadOnlyDatabase) for d in ro._wrapped)
    # Keys per agent, readings and revision: another agent sees nothing of this one.
    other = example_database(FuzzConfig(REFERENCE, shared_databases=(redis_url,)))
    mine = example_database(FuzzConfig(MUTANT, shared_databases=(redis_url,)))
    assert other is not None and mine is not None
    mine.save(b"key", b"value")
    assert list(mine.fetch(b"key")) == [b"value"] and list(other.fetch(b"key")) == []


def test_database_locations_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    assert locations(["d", "redis://h:1/0,redis://h:2/0"], tmp_path) == (
        str(tmp_path / "d"), ("redis://h:1/0", "redis://h:2/0"))
    with pytest.raises(DatabaseError, match="one local database directory"):
        locations(["a", "b"])
    port = _free_port()  # nothing listens there
    code = main(["fuzz", "--db", f"redis://127.0.0.1:{port}/0", "--", *REFERENCE])
    assert code == 2
    assert "cannot reach the Redis server" in capsys.readouterr().err


def test_merge_check_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = turn_start(base(), 10).cancel(S).sync().idle(S, "end_turn").log.write(
        tmp_path / "b.jsonl")
    good = turn_start(base(), 10).agent_message(S).idle(S, "end_turn").log.write(
        tmp_path / "g.jsonl")
    for trace in (bad, good):
        main(["check", str(trace), "--report", str(trace.with_suffix(".json"))])
    reports = [json.loads(t.with_suffix(".json").read_text()) for t in (bad, good)]
    merged = merge_reports(reports, ["bad", "good"])
    assert merged["verdict"] == "fail"
    rules = {r["id"]: r for r in merged["rules"]}
    assert rules["CANCEL-07"]["status"] == "violated"
    for rid in ("CANCEL-07", "STATE-05"):
        assert rules[rid]["exercised"] == sum(
            {r["id"]: r for r in rep["rules"]}[rid]["exercised"] for rep in reports)
    assert merged["summary"]["messages"] == sum(r["summary"]["messages"] for r in reports)
    with pytest.raises(MergeError, match="different spec revisions"):
        merge_reports([reports[0], {**reports[1], "spec": {"revision": "sdk-2.4.0"}}])
    assert main(["merge", str(tmp_path / "nope.json")]) == 2
    (tmp_path / "x.json").write_text("[]")
    assert main(["merge", str(tmp_path / "x.json")]) == 2
    assert "not an acp-model" in capsys.readouterr().err


@pytest.mark.slow
def test_hypofuzz_runs_the_campaign_and_finds_a_planted_bug(tmp_path: Path) -> None:
    """``hypothesis fuzz`` on fuzz/test_hypofuzz.py: collected, fuzzed, the failure reported
    (awaited on the worker's own line, said as the rule fails, then the workers are stopped:
    HypoFuzz's console line waits for its minute-long rebalancing interval)."""
    import contextlib
    import os
    import signal
    import threading
    import time

    root = Path(__file__).resolve().parents[2]
    hypothesis = Path(sys.executable).with_name("hypothesis")
    # HypoFuzz is itself a Hypothesis plugin: the variable the suite sets must not reach it
    own = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_NO_PLUGINS"}
    env = {**own, "ACP_AGENT": " ".join([*MUTANT[:-2], "--mutant", "cancel_as_end_turn"]),
           "ACP_DB": str(tmp_path / "db"), "ACP_DEADLINE": "1",
           "CI": "true"}  # Hypothesis' ci profile (derandomize) must not reach HypoFuzz
    proc = subprocess.Popen([str(hypothesis), "fuzz", "-n", "1", "--no-dashboard", "--",
                             str(root / "fuzz" / "test_hypofuzz.py")], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    lines = []
    # a campaign that never reports runs forever: stopped after 3 minutes, the output is read
    # to its end and the assertion below shows it
    watchdog = threading.Timer(180, os.killpg, (proc.pid, signal.SIGTERM))
    watchdog.start()
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("acp-model: CANCEL-07 failed (worker "):
                break
        # HypoFuzz saves the failing input as the exception reaches it, just after the line
        store = tmp_path / "db"
        waited = 0
        while not any(p.is_file() for p in store.rglob("*")) and waited < 300:
            time.sleep(0.1)  # no event to await in a directory another process fills
            waited += 1
    finally:
        watchdog.cancel()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    assert any(line.startswith("acp-model: CANCEL-07 failed") for line in lines), \
        "".join(lines)
    assert "idle" in lines[-1] and "end_turn" in lines[-1], lines[-1]  # the proof, at once
    # HypoFuzz's corpus and the failure are in the agent's store under ACP_DB
    assert any(p.is_file() for p in store.rglob("*")), "nothing in ACP_DB"
