"""The proxy's judge process reaches ``check``'s verdicts from the relay's frames.

The known-bug traces go to a judge process as the relay sends them (each line cut into chunks
at random points, the chunks batched by ``feed.JudgeFeed`` and read back by the judge in
whatever pieces its pipe gives): its report has the violations, verdict and open obligations
``acp-model check`` finds in the same trace, and the trace it writes holds the same records.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson
import pytest

from acp_model.oracle.offline import check_trace
from acp_model.proxy.feed import A2C, C2A, END, SETUP, JudgeFeed
from acp_model.proxy.judge import JudgeProcess, JudgeSettings
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT

ROOT = Path(__file__).resolve().parents[2]
# Three of the known bugs (a judge process per trace costs a start-up): a failure (CANCEL-07),
# a prompt never answered (PROMPT-04, open at the end) and a warning.
TRACES = [ROOT / "tests" / "data" / "known-bugs" / f"{name}.jsonl" for name in (
    "QwenLM__qwen-code__7295", "agentclientprotocol__claude-agent-acp__442",
    "zed-industries__codex-acp__186")]


def _chunks(line: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(line)), min(3, len(line) - 1)))
    return [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]


def _shown(report: dict, key: str) -> list[tuple]:
    return [(v["rule"], v["index"], v["level"]) for v in report[key]]


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_the_judge_reaches_check_s_verdicts_from_batched_chunks(path: Path,
                                                               tmp_path: Path) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    trace = tmp_path / "trace.jsonl"
    with open(trace, "wb") as out:
        judge = JudgeProcess(JudgeSettings(DEFAULT, revisions.AUTO, "test", trace_fd=out.fileno()),
                             live=lambda _line: None, stderr_fd=None)
    feed = JudgeFeed(judge.stdin_fd, 64 << 20, delay=3600.0)  # batches by size, and at the end
    feed.put(SETUP, 0.0, judge.setup)
    rng = random.Random(path.stem)
    for n, rec in enumerate(records):
        for chunk in _chunks(orjson.dumps(rec["msg"]) + b"\n", rng):
            feed.put(C2A if rec["dir"] == "c2a" else A2C, n / 1000, chunk)
    feed.put(C2A, len(records) / 1000, b"")
    feed.put(A2C, len(records) / 1000, b"")
    feed.put(END, len(records) / 1000, b"{}")
    assert feed.close(60)
    live = judge.result(60)
    assert live is not None
    again = check_trace(path, spec="auto", open_at_end=True)
    assert _shown(live, "violations") == _shown(again, "violations")
    assert _shown(live, "open_at_end") == _shown(again, "open_at_end")
    assert live["verdict"] == again["verdict"]
    written = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [(r["dir"], r["msg"]) for r in written] == [(r["dir"], r["msg"]) for r in records]
    assert [r["t"] for r in written] == [round(n / 1000, 6) for n in range(len(records))]
