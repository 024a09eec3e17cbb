"""The drain's last look and what the agent asks while it is in flight (issue 49): a report
must never carry a failure of our own client."""

from __future__ import annotations

import sys
from pathlib import Path

from acp_model.fuzzing.client import FuzzClient
from acp_model.fuzzing.config import FuzzConfig
from acp_model.model.vocab import Level
from acp_model.spec.readings import DEFAULT

AGENT = Path(__file__).resolve().parents[1] / "hostile" / "asks_on_sync.py"


def test_a_permission_request_during_the_last_look_is_answered_not_judged() -> None:
    """The agent writes a permission request just before it answers the look's sync. Before,
    the look took it in unanswered and judged PERM-12 (a rule binding our client: "the client
    never answered session/request_permission within the deadline"); now the drain answers it
    and looks again."""
    cfg = FuzzConfig([sys.executable, str(AGENT)], deadline=1.0,
                     readings=DEFAULT.parse(["SPEC=v1"]))
    client = FuzzClient(cfg)
    try:
        client.initialize()
        client.new_session()
        sid = client.sessions[0].sid
        client.sessions[0].prompts.append(client.proc.calls.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}))
        assert client.wait_until(lambda: client.busy(0), 5.0)
        looked = client.drain([0])
        client.caught_up()
        with client.lock:
            client.monitor.judge_open([sid], 0, client.deadline, looked=looked)
            verdicts = [(v.rule, v.level, v.message) for v in client.monitor.violations]
        asked = [r for r in client.proc.records() if r["dir"] == "a2c"
                 and isinstance(r.get("msg"), dict)
                 and r["msg"].get("method") == "session/request_permission"]
        answered = {r["msg"].get("id") for r in client.proc.records() if r["dir"] == "c2a"
                    and isinstance(r.get("msg"), dict) and "method" not in r["msg"]}
    finally:
        client.close()
    assert asked, "the agent asked during the drain"
    assert "PERM-12" not in {rule for rule, _, _ in verdicts}, verdicts
    assert not [v for v in verdicts if v[1] == Level.FAIL], verdicts
    assert {r["msg"]["id"] for r in asked} <= answered, (asked, answered)
