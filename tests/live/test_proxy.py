"""``acp-model proxy``: byte-identical forwarding, the same verdicts as ``check``, live lines,
the editor's exit status, hostile ends, and a real SDK client driving agents through it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from acp_model.fuzzing.transport import AgentProcess
from acp_model.oracle.offline import check_trace
from acp_model.proxy.run import ProxyConfig, run_proxy
from tests.helpers import cancel_during_permission, wait_gone

ROOT = Path(__file__).resolve().parents[2]
PROXY = [sys.executable, "-m", "acp_model", "proxy"]
BYTES = [sys.executable, str(ROOT / "tests" / "proxy" / "byte_agent.py")]
REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]
TS = ROOT / "examples" / "sdk-typescript"
MiB = 1 << 20


def _agent_output() -> bytes:
    """What the agent writes: valid messages, an unknown session update variant, odd
    whitespace, CRLF, invalid UTF-8, non-JSON, a 9 MiB line, and a last line with no newline."""
    update = {"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": "s1", "update": {"sessionUpdate": "_future_kind",
                                                      "x": [1, 2, {"y": None}]}}}
    return b"".join([
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"capabilities":{},'
        b'"info":{"name":"bytes","version":"1"}}}\n',
        json.dumps(update, indent=None, separators=(" ,", " :  ")).encode() + b"\n",
        b'  {"jsonrpc" : "2.0", "method": "x"}  \r\n',
        b'{"jsonrpc":"2.0","method":"caf\xe9"}\n',
        b"Starting agent...\n",
        b'{"jsonrpc":"2.0","method":"_big","params":{"pad":"' + b"z" * (9 * MiB) + b'"}}\n',
        b'{"jsonrpc":"2.0","method":"_last"}',
    ])


def _editor_input() -> bytes:
    return b"".join([
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
        b'"capabilities":{},"info":{"name":"ed","version":"1"}}}\n',
        b"garbage \xff\xfe\n",
        b'{"jsonrpc":"2.0","method":"_x","params":{"pad":"' + b"q" * (9 * MiB) + b'"}}\n',
        b"\n\n   \n",
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp"}}',
    ])


def test_forwarding_is_byte_identical_both_ways(tmp_path: Path) -> None:
    out, got = tmp_path / "out.bin", tmp_path / "got.bin"
    out.write_bytes(_agent_output())
    trace, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    proc = subprocess.run([*PROXY, "--trace", str(trace), "--report", str(report), "--quiet",
                           "--", *BYTES, "--out", str(out), "--got", str(got), "--chunk", "7"],
                          input=_editor_input(), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == _agent_output()  # what the editor got
    assert got.read_bytes() == _editor_input()  # what the agent got
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    errors = {(r["dir"], r.get("error")) for r in records}
    assert {("a2c", "invalid-utf8"), ("a2c", "not-json"), ("a2c", "oversize"),
            ("c2a", "oversize"), ("c2a", "invalid-utf8")} <= errors
    unknown = next(r for r in records if r.get("msg", {}).get("params", {}).get("update"))
    assert unknown["msg"]["params"]["update"]["sessionUpdate"] == "_future_kind"
    assert records[-1]["dir"] in ("a2c", "c2a")
    # the trace replays through check with the proxy's verdicts
    live = json.loads(report.read_text())
    again = check_trace(trace, spec="auto", open_at_end=True)
    assert [(v["rule"], v["index"], v["level"]) for v in again["violations"]] == \
        [(v["rule"], v["index"], v["level"]) for v in live["violations"]]
    assert again["verdict"] == live["verdict"] == "fail"  # RPC-04 (the non-JSON line)
    assert [v["rule"] for v in again["open_at_end"]] == [v["rule"] for v in live["open_at_end"]]


@pytest.mark.parametrize(("agent_args", "code"), [(["--exit", "7"], 7), (["--kill-self"], 137)])
def test_the_exit_status_is_the_agent_s(agent_args: list[str], code: int) -> None:
    proc = subprocess.run([*PROXY, "--quiet", "--", *BYTES, *agent_args], input=b"",
                          capture_output=True, timeout=60)
    assert proc.returncode == code, proc.stderr


def _leftover_pids(tag: str) -> list[int]:
    return [int(line.split()[0]) for line in _leftovers(tag)]


def _leftovers(tag: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", tag], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_ends_the_session_and_the_agent_group(sig: int, tmp_path: Path) -> None:
    """The agent ignores SIGTERM and stdin EOF and leaves a SIGTERM-ignoring grandchild: the
    proxy still takes them all down, writes the report, and exits with 128 + the signal."""
    tag = f"proxy-sig-{sig}-{uuid.uuid4().hex[:12]}"  # unique on the machine
    report = tmp_path / "r.json"
    agent = [sys.executable, str(ROOT / "tests" / "fuzz_hostile" / "mini_agent.py"), "--mode",
             "grandchild", "--tag", tag]
    proc = subprocess.Popen([*PROXY, "--grace", "0.5", "--report", str(report), "--", *agent,
                             "--tag", tag], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{'
                     b'"protocolVersion":2,"capabilities":{},"info":{"name":"e","version":"1"}}}\n')
    proc.stdin.flush()
    assert b'"protocolVersion"' in proc.stdout.readline()  # the agent is up and answering
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err[-2000:]
    doc = json.loads(report.read_text())
    assert doc["proxy"]["signal"] == sig
    wait_gone(_leftover_pids(tag), timeout=5)  # killed, perhaps not yet reaped
    assert _leftovers(tag) == []


@pytest.mark.slow
def test_a_flood_is_forwarded_in_full_and_the_trace_stops_at_its_cap(tmp_path: Path) -> None:
    """The API with pipes: 64 MiB from the agent reach the editor, the trace stops at 1 MiB
    and says so; the caller's thread switch interval is its own again afterwards."""
    editor_r, proxy_w = os.pipe()  # the proxy's stdout -> the editor
    proxy_r, editor_w = os.pipe()  # the editor -> the proxy's stdin
    line = len(b'{"jsonrpc":"2.0","method":"_flood","params":{"pad":"') + 1000 + 4
    flood = 64 * 1024 * line
    received = [0]
    closing, closed = threading.Lock(), [False]

    def editor_done() -> None:
        """The editor sends nothing and closes its end once it has the whole flood (then the
        agent exits): closing at once would give the agent only the proxy's grace to deliver
        64 MiB, which a loaded machine may not meet. Once only: the number may be reused."""
        with closing:
            if not closed[0]:
                closed[0] = True
                os.close(editor_w)

    def read_all() -> None:
        while chunk := os.read(editor_r, 1 << 16):
            received[0] += len(chunk)
            if received[0] >= flood:
                editor_done()

    reader = threading.Thread(target=read_all)
    reader.start()
    cap = threading.Timer(120, editor_done)  # a flood cut short never completes: end anyway
    cap.start()
    callers = sys.getswitchinterval()
    sys.setswitchinterval(0.004)  # the caller's own, unlike the proxy's and the default
    try:
        with open(os.devnull, "wb") as devnull:
            result = run_proxy(ProxyConfig([*BYTES, "--flood", "64"], trace=tmp_path / "t.jsonl",
                                           max_trace=1 * MiB, quiet=True, grace=1.0),
                               stdin_fd=proxy_r, stdout_fd=proxy_w, stderr=devnull)
        after = sys.getswitchinterval()
    finally:
        sys.setswitchinterval(callers)
        cap.cancel()
        editor_done()
        os.close(proxy_w)
        reader.join(30)
        os.close(proxy_r)
        os.close(editor_r)
    assert after == pytest.approx(0.004)
    assert received[0] == flood
    assert result.report["proxy"]["trace_truncated"] is True
    assert result.report["verdict"] == "incomplete"  # judged in part: never a pass
    assert (tmp_path / "t.jsonl").stat().st_size <= 1 * MiB


@pytest.mark.slow
def test_a_judge_that_falls_behind_is_cut_off_and_the_wire_goes_on(tmp_path: Path) -> None:
    """64 MiB from the agent while the judge (a process that needs a second to start, then
    judges far slower than a pipe) may fall at most 256 KiB behind: the editor gets every
    byte, judging stops at that point (the line cut there is never judged), the verdict is
    incomplete, and the summary line and the report say so."""
    trace = tmp_path / "t.jsonl"
    proc = subprocess.run([*PROXY, "--trace", str(trace), "--report", str(tmp_path / "r.json"),
                           "--max-queue", "0.25", "--", *BYTES, "--flood", "64"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = len(b'{"jsonrpc":"2.0","method":"_flood","params":{"pad":"') + 1000 + 4
    assert len(proc.stdout) == 64 * 1024 * line
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["proxy"]["judge_overflowed"] is True
    assert report["verdict"] == "incomplete"
    judged = report["proxy"]["records"]
    assert 0 < judged < 64 * 1024
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(records) == judged  # a prefix, whole lines
    assert all("msg" in r for r in records)  # never the fragment of a line cut off with it
    assert b"acp-model proxy: incomplete (" in proc.stderr
    assert b"judging stopped: the judge fell 0.25 MiB behind" in proc.stderr


def test_a_mutant_s_violation_shows_live_and_the_session_goes_on(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    # The agent waits for the permission answer, and the answer follows the response that
    # proves the cancel was read: the end_turn idle is a proven CANCEL-07 whatever the timing.
    argv = [*PROXY, "--log", str(log), "--", *REFERENCE, "--mutant", "cancel_as_end_turn",
            "--design", "perm_cancel=wait"]
    with AgentProcess(argv) as p:
        cancel_during_permission(p, str(tmp_path), prove_read=True)
        p.stderr.wait("CANCEL-07", timeout=10)
        # live, mid-session
        assert re.search(r"acp-model: FAIL CANCEL-07 \(MUST\)", p.stderr_text())
        # the session goes on through the proxy
        assert p.calls.call("session/list", {}) is not None
    assert re.search(r"FAIL CANCEL-07", log.read_text())


# --- a real client: the official TypeScript SDK ----------------------------------------------

_no_node = pytest.mark.skipif(shutil.which("node") is None or not (TS / "node_modules").is_dir(),
                              reason="the TypeScript SDK example is not set up (make examples)")


def needs_node(fn: Any) -> Any:
    return pytest.mark.external(pytest.mark.slow(_no_node(fn)))


def _sdk_client(agent: list[str], tmp_path: Path, name: str, *args: str
                ) -> tuple[list[dict[str, Any]], bytes, bytes]:
    """Run the SDK client against ``agent`` (through tee_agent.py, which records what the
    agent received); returns what the client printed, received and what the agent got."""
    capture, got = tmp_path / f"{name}.cap", tmp_path / f"{name}.got"
    tee = [sys.executable, str(ROOT / "tests" / "proxy" / "tee_agent.py"), str(got)]
    proc = subprocess.run(["node", str(TS / "client.mjs"), *args, "--capture", str(capture),
                           "--", *_wrap(tee, agent)],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1] == {"done": True}
    return lines, capture.read_bytes(), got.read_bytes()


def _wrap(tee: list[str], agent: list[str]) -> list[str]:
    """The proxy goes outside the tee, so the tee sees what the agent itself receives."""
    if agent[:len(PROXY)] == PROXY:
        cut = agent.index("--") + 1
        return [*agent[:cut], *tee, *agent[cut:]]
    return [*tee, *agent]


@needs_node
def test_an_sdk_client_sees_the_same_bytes_through_the_proxy(tmp_path: Path) -> None:
    agent = [*REFERENCE, "--spec", "sdk-2.4.0"]
    report = tmp_path / "r.json"
    direct = _sdk_client(agent, tmp_path, "direct", "--prompts", "3")
    proxied = _sdk_client([*PROXY, "--report", str(report), "--", *agent], tmp_path, "proxied",
                          "--prompts", "3")
    assert proxied[0] == direct[0]  # what the SDK delivered
    assert proxied[1] == direct[1]  # the bytes the client received
    assert proxied[2] == direct[2]  # the bytes the agent received
    doc = json.loads(report.read_text())
    assert doc["verdict"] == "pass" and doc["spec"]["revision"] == "sdk-2.4.0"


@needs_node
def test_an_sdk_client_keeps_working_while_a_violation_shows_live(tmp_path: Path) -> None:
    log = tmp_path / "live.log"
    agent = [*PROXY, "--log", str(log), "--", *REFERENCE, "--mutant",
             "background_removed_early"]
    lines, _, _ = _sdk_client(agent, tmp_path, "mutant", "--prompts", "4")
    assert sum(1 for line in lines if "stop" in line) == 4  # every turn ran to its idle
    assert "FAIL SDK-BG-03 (MUST)" in log.read_text()


@needs_node
@pytest.mark.parametrize("example", ["typescript", "python"])
def test_the_sdk_example_agents_through_the_proxy(example: str, tmp_path: Path) -> None:
    if example == "typescript":
        agent = ["node", str(TS / "agent.mjs")]
    else:
        python = ROOT / "examples" / "sdk-python" / ".venv" / "bin" / "python"
        if not python.exists():
            pytest.skip("the Python SDK example is not set up (make examples)")
        agent = [str(python), str(ROOT / "examples" / "sdk-python" / "agent.py")]
    report = tmp_path / "r.json"
    direct = _sdk_client(agent, tmp_path, "direct", "--prompts", "2")
    proxied = _sdk_client([*PROXY, "--report", str(report), "--", *agent], tmp_path, "proxied",
                          "--prompts", "2")
    assert proxied[0] == direct[0]
    doc = json.loads(report.read_text())
    assert doc["spec"]["revision"] == "sdk-2.4.0"
    assert doc["verdict"] == "pass", doc["violations"]
