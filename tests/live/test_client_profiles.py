"""Client profiles as a dimension: the fuzz client sends an editor's capabilities (a preset,
one drawn per run, or exactly what ``--client-capabilities`` gives), serves what they promise
inside the run's workspace (``fs/*``, ``terminal/*``), plays its habits (a cancel before every
prompt), and the report and the replay file name the client played."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.actions import NewSession, Prompt
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.client import FuzzClient
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import PRESETS, custom, named, serves
from acp_model.model.vocab import ErrorCode
from acp_model.spec.readings import DEFAULT

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, str(ROOT / "tests" / "hostile" / "services_agent.py")]
V1 = DEFAULT.parse(["SPEC=v1"])


def one_turn(profile: Any, tmp_path: Path) -> tuple[FuzzClient, dict[str, Any]]:
    """A connection of the services agent that plays ``profile``: one session, one prompt,
    awaited to its end; what the agent said each of its requests got."""
    cfg = FuzzConfig(AGENT, readings=V1, client=profile, deadline=10)
    with backend(cfg) as running:
        client = FuzzClient(running)
        try:
            client.initialize()
            client.perform(NewSession())
            client.perform(Prompt(0, [{"type": "text", "text": "use what the client offers"}]))
            assert client.wait_until(lambda: not client.pending_prompts(0), 30)
            client.caught_up()
            said = next(json.loads(r["msg"]["params"]["update"]["content"]["text"])
                        for r in client.proc.records() if r["dir"] == "a2c"
                        and r["msg"].get("method") == "session/update")
            # the agent's deliberate read of /etc/hostname lies outside the session's root set
            found = [(v.rule, v.level) for v in client.monitor.violations]
            assert found in ([], [("SESS-17", "warn")]), client.monitor.violations
            assert all("/etc/hostname" in v.message for v in client.monitor.violations)
            assert running.workspace is not None or not any(serves(
                profile.capabilities(1)).values())
            return client, said
        finally:
            client.close()


def result(said: dict[str, Any], key: str) -> Any:
    return said["said"][key].get("result")


def error(said: dict[str, Any], key: str) -> int:
    return said["said"][key]["error"]["code"]


def test_zed_serves_files_and_terminals_inside_the_workspace(tmp_path: Path) -> None:
    client, said = one_turn(PRESETS["zed"], tmp_path)
    init = client.proc.records()[0]["msg"]
    assert init["params"]["clientCapabilities"] == dict(PRESETS["zed"].v1)
    assert init["params"]["clientInfo"]["name"] == "zed"
    assert said["capabilities"]["terminal"] is True
    assert result(said, "write") == {}
    assert result(said, "read") == {"content": "two\n"}  # line 2, one line
    assert error(said, "missing") == ErrorCode.RESOURCE_NOT_FOUND
    assert error(said, "outside") == ErrorCode.INVALID_PARAMS  # outside the workspace
    assert result(said, "exit") == {"exitCode": 0, "signal": None}
    assert result(said, "output") == {"output": "out-ok", "truncated": False,
                                      "exitStatus": {"exitCode": 0, "signal": None}}
    assert result(said, "release") == {}
    assert error(said, "after_release") == ErrorCode.INVALID_PARAMS
    assert client.handshake.served == {"fs/write_text_file": 1, "fs/read_text_file": 3,
                             "terminal/create": 1, "terminal/wait_for_exit": 1,
                             "terminal/output": 2, "terminal/release": 1}


def test_a_client_serves_only_what_it_advertised(tmp_path: Path) -> None:
    client, said = one_turn(PRESETS["codecompanion"], tmp_path)
    assert set(said["said"]) == {"write", "read", "missing", "outside"}  # no terminal asked
    assert set(client.handshake.served) == {"fs/write_text_file", "fs/read_text_file"}
    client, said = one_turn(PRESETS["bare"], tmp_path)
    assert said["said"] == {} and not client.handshake.served


def test_the_capabilities_given_are_sent_exactly(tmp_path: Path) -> None:
    given = {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": False,
             "_meta": {"editor.example/flag": [1, 2]}}
    file = tmp_path / "caps.json"
    file.write_text(json.dumps(given))
    client, said = one_turn(custom(f"@{file}"), tmp_path)
    assert client.proc.records()[0]["msg"]["params"]["clientCapabilities"] == given
    assert said["capabilities"] == given
    assert set(said["said"]) == {"read", "missing", "outside"}
    assert error(said, "missing") == ErrorCode.RESOURCE_NOT_FOUND


def test_a_cancel_first_client_writes_a_cancel_right_before_every_prompt(
        tmp_path: Path) -> None:
    client, _ = one_turn(PRESETS["cancel-first"], tmp_path)
    sent = [r["msg"] for r in client.proc.records() if r["dir"] == "c2a"]
    at = next(n for n, m in enumerate(sent) if m.get("method") == "session/prompt")
    assert sent[at - 1] == {"jsonrpc": "2.0", "method": "session/cancel",
                            "params": {"sessionId": sent[at]["params"]["sessionId"]}}


def test_a_run_draws_its_client_from_the_seed_and_names_it(tmp_path: Path) -> None:
    """The report names the client played and what it served; the replay file carries it, so
    a replay plays the same client."""
    assert named("random", 4) == named("random", 4)  # the seed decides
    assert len({named("random", s).name for s in range(40)}) == len(PRESETS)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--client-profile", "zed", "--max-examples",
         "4", "--seed", "1", "--protocol", "v1", "--report", str(report), "--", *AGENT],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "client: zed: Zed" in done.stdout
    client = json.loads(report.read_text())["client"]
    assert client["profile"] == "zed" and not client["drawn"]
    assert client["served"]["terminal/create"] >= 1
    drawn = subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--max-examples", "2", "--seed", "4",
         "--protocol", "v1", "--report", str(report), "--", *AGENT],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert drawn.returncode == 0, drawn.stdout + drawn.stderr
    played = json.loads(report.read_text())["client"]
    assert played["drawn"] and played["profile"] == named("random", 4).name


@pytest.mark.parametrize(("argv", "said"), [
    (["--client-profile", "emacs"], "no client profile 'emacs'"),
    (["--client-capabilities", "[1]"], "JSON object, not list"),
    (["--client-capabilities", "{nope"], "not JSON"),
    (["--client-capabilities", "@/nonexistent/caps.json"], "cannot read"),
    (["--client-profile", "zed", "--client-capabilities", "{}"], "not both"),
])
def test_a_bad_client_option_is_a_usage_error(argv: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "acp_model", "fuzz", *argv, "--", *AGENT],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and said in done.stdout + done.stderr, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


class Answers:
    """What a :class:`ClientServices` answered, awaited per request id."""

    def __init__(self) -> None:
        import threading

        self.got: dict[Any, dict[str, Any]] = {}
        self.changed = threading.Condition()

    def __call__(self, rid: Any, result: Any = None, error: Any = None) -> None:
        with self.changed:
            self.got[rid] = {"result": result} if error is None else {"error": error}
            self.changed.notify_all()

    def of(self, rid: Any) -> dict[str, Any]:
        with self.changed:
            assert self.changed.wait_for(lambda: rid in self.got, timeout=30), rid
            return self.got[rid]


def test_terminals_keep_the_newest_output_and_die_with_the_connection(tmp_path: Path) -> None:
    """Output past the agent's byte limit drops the oldest bytes, never half a character;
    kill ends a running command (its exit shows the signal); closing the connection kills
    what still runs; a working directory outside the workspace is refused."""
    from acp_model.fuzzing.services import ClientServices

    answers = Answers()
    svc = ClientServices({"terminal": True}, str(tmp_path), answers)

    def call(rid: int, method: str, **params: Any) -> dict[str, Any]:
        svc.serve({"id": rid, "method": method, "params": {"sessionId": "s", **params}})
        return answers.of(rid)

    made = call(1, "terminal/create", command="printf 'aé%.0s' $(seq 50)",
                outputByteLimit=7)["result"]
    tid = made["terminalId"]
    assert call(2, "terminal/wait_for_exit", terminalId=tid)["result"] == {
        "exitCode": 0, "signal": None}
    out = call(3, "terminal/output", terminalId=tid)["result"]
    assert out["truncated"] and out["output"].endswith("aé") and len(out["output"]) <= 7
    assert out["output"].encode() == out["output"].encode("utf-8")  # whole characters
    sleeper = call(4, "terminal/create", command="sleep", args=["60"])["result"]["terminalId"]
    assert call(5, "terminal/kill", terminalId=sleeper)["result"] == {}
    assert call(6, "terminal/wait_for_exit", terminalId=sleeper)["result"] == {
        "exitCode": None, "signal": "SIGKILL"}
    outside = call(7, "terminal/create", command="true", cwd="/")
    assert outside["error"]["code"] == ErrorCode.INVALID_PARAMS
    left = call(8, "terminal/create", command="sleep", args=["60"])["result"]["terminalId"]
    proc = svc.terminals[left].proc
    svc.close()
    assert proc.wait(timeout=10) == -9
