"""Record the reference agent's conversation that the one-sided checks compare against.

Run from the repository root (it starts the reference agent for a second or two)::

    flock /tmp/acpm-heavy.lock .venv/bin/python -m tests.data.one_sided.record

It writes ``reference-full.jsonl`` (both directions, the monitor's trace format) next to this
file, and ``reference-agent.jsonl``: the agent's messages only, in the vendors' golden-file shape
(``acp_model.oracle.one_sided.golden_lines``). The conversation: initialize, a session, a turn
whose tool asks for permission (allowed), a plain turn, and a prompt cancelled in the same write.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from acp_model.oracle.one_sided import golden_lines
from acp_model.trace.format import read_trace
from tests.live.agents.client import ScriptedClient, with_permission, without_permission

HERE = Path(__file__).resolve().parent
FULL = HERE / "reference-full.jsonl"
AGENT_ONLY = HERE / "reference-agent.jsonl"


def record() -> None:
    with ScriptedClient.spawn() as client:
        client.initialize()
        sid = client.new_session()
        client.run_turn(sid, client.prompt_text(with_permission, "allowed"), "allow")
        client.run_turn(sid, client.prompt_text(without_permission, "plain"))
        start = client.mark()
        rid = client.prompt_then_cancel(sid, client.prompt_text(without_permission, "cancel"))
        client.wait_response(rid, start)
        client.drive(sid, start)
        client.save(FULL)
    lines = golden_lines(read_trace(FULL))
    AGENT_ONLY.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


if __name__ == "__main__":
    record()
