"""The fuzz client with form elicitation offered (``--client-capabilities``: no editor profile
advertises it) reaches the reference agent's elicitations, answers each with the schema's
actions in turn, and the session machine sees every request and answer as a user-action wait."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from acp_model.agents.turns import plan_turn
from acp_model.fuzzing.actions import AnswerPermission, NewSession, Prompt
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.client import FuzzClient
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import custom
from acp_model.spec.readings import DEFAULT

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, "-m", "acp_model.agents.reference", "--spec", "sdk-2.4.0"]
SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])
OFFERED = '{"elicitation": {"form": {}}}'


def _asking_twice() -> str:
    """A prompt whose scripted work asks about two tools: the agent asks the first with a
    permission request, the second with an elicitation (it alternates when offered)."""
    return next(text for n in range(500) if plan_turn(text := f"edit things {n}").permissions
                >= 2)


def test_the_machine_sees_the_reference_agent_s_elicitation_and_its_answer() -> None:
    cfg = FuzzConfig(AGENT, readings=SDK, client=custom(OFFERED), deadline=10)
    with backend(cfg) as running:
        client = FuzzClient.from_config(running)
        try:
            client.initialize()
            client.perform(NewSession())
            client.perform(Prompt(0, [{"type": "text", "text": _asking_twice()}]))
            client.perform(AnswerPermission(0))  # the permission request comes first
            assert client.wait_until(lambda: not client.pending_prompts(0) and
                                     not client.busy(0), 30)
            client.caught_up()
            sent = [r["msg"] for r in client.proc.records() if r["dir"] == "a2c"
                    and r["msg"].get("method") == "elicitation/create"]
            assert sent and sent[0]["params"]["toolCallId"]
            book = client.monitor.machines.sessions[client.sessions[0].sid].perm_book
            seen = [p for p in (*book.perms.values(), *book.retired.values())
                    if p.elicitation]
            assert [p.id for p in seen] == [m["id"] for m in sent]
            assert seen[0].answer == "accept"  # the first of the actions in turn
            assert client.monitor.violations == []
            assert client.handshake.served["elicitation/create"] == len(sent)
        finally:
            client.close()


def test_a_fuzz_run_offering_elicitation_reaches_it_and_passes(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--client-capabilities", OFFERED,
         "--spec", "sdk-2.4.0", "--max-examples", "30", "--seed", "1", "--report",
         str(report), "--", *AGENT],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text())
    assert data["client"]["served"]["elicitation/create"] >= 1
    assert data["violations"] == []
