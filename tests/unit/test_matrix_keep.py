"""The kept matrix run stays small: a transcript cut around its proof drops the largest
messages the proof does not cite when the ones around it still overflow the bound."""

from __future__ import annotations

import json
from pathlib import Path

from acp_model.matrix import keep
from acp_model.trace.format import read_trace


def _line(n: int, msg: dict[str, object], direction: str = "a2c") -> str:
    return json.dumps({"dir": direction, "t": n / 10, "n": n, "msg": msg})


def test_huge_messages_around_the_proof_are_left_out_as_gaps(tmp_path: Path) -> None:
    """qwen-code's command lists (570 kB each) sat next to its CANCEL-07 proof: the kept
    transcript was 1.6 MB, the run over the repository's bound."""
    huge = {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "available_commands_update",
                                                    "availableCommands": ["x" * 60_000]}}}
    lines = [_line(0, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1}}, "c2a"),
             _line(1, {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})]
    lines += [_line(n, huge) for n in range(2, 8)]
    lines.append(_line(8, {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}))
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    keep._cut(path, {8, 3})
    assert path.stat().st_size <= keep.MAX_TRANSCRIPT
    numbers = [json.loads(line).get("n") for line in path.read_text().splitlines()]
    assert {0, 1, 3, 8} <= set(numbers)  # the handshake and every cited message
    assert any(json.loads(line).get("gap") or "gap" in line
               for line in path.read_text().splitlines())
    assert read_trace(path)  # still a trace the checker reads
