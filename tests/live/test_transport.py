"""acp_model.transport against hostile agents (tiny scripts in this folder).

Each test checks what the transport records, that memory stays within its caps, that calls
return within their deadlines, and that no process of the agent's group survives ``close``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_model.fuzzing.transport import AgentExited, AgentProcess, Record, RpcError, decode_line

HERE = Path(__file__).resolve().parents[1] / "hostile"
MiB = 1024 * 1024


def spawn(script: str, **kwargs: Any) -> AgentProcess:
    kwargs.setdefault("close_grace", 0.3)
    return AgentProcess([sys.executable, str(HERE / script)], **kwargs)


def live_members(pgid: int) -> list[int]:
    """Pids of non-zombie processes in process group ``pgid`` (independent /proc scan)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            pids.append(int(entry))
    return pids


def is_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_fresh_process(test: str) -> float:
    """Run ``test`` (a function of this module) in a fresh interpreter; returns how much its
    peak RSS grew while the test ran. This process's peak is shared by every test run before
    (the explorer's allocate hundreds of MB), so measured here a growth would read as 0."""
    code = (f"import sys; sys.path.insert(0, {str(HERE.parents[1])!r})\n"
            "from tests.live import test_transport as t\n"
            "before = t.peak_rss_mib()\n"
            f"t.{test}()\n"
            "print(t.peak_rss_mib() - before)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return float(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ normal peer


def test_call_notify_respond_and_trace(tmp_path: Path) -> None:
    with spawn("echo_agent.py") as agent:
        assert agent.calls.call("ping", {"n": 1}, timeout=5) == {"echo": {"n": 1}}
        agent.calls.notify("note", {"x": 1})
        second = agent.calls.request("ping", {"n": 2})
        third = agent.calls.request("ping", {"n": 3})
        assert (second, third) == (1, 2)  # auto-incrementing integer ids
        # the agent asks us something mid-call; we answer it with respond()
        ask = agent.calls.request("ask", {})
        question = agent.calls.wait_for(lambda m: m.get("method") == "question", 5, start=0)
        assert question is not None
        agent.calls.respond(question["msg"]["id"], result={"ok": True})
        answer = agent.calls.wait_for(lambda m: m.get("id") == ask, 5, start=0)
        assert answer is not None and answer["msg"]["result"]["result"] == {"ok": True}
        path = agent.write_trace(tmp_path / "echo.jsonl")
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert lines == agent.transcript
    assert [r["dir"] for r in lines[:2]] == ["c2a", "a2c"]
    assert all(set(r) == {"dir", "t", "msg"} for r in lines)
    times = [r["t"] for r in lines]
    assert times == sorted(times) and times[0] >= 0


def test_wait_for_cursor_finds_successive_matches() -> None:
    with spawn("echo_agent.py") as agent:
        for n in range(3):
            agent.calls.request("ping", {"n": n})
        is_result = lambda m: "result" in m  # noqa: E731
        got = [agent.calls.wait_for(is_result, 5) for _ in range(3)]
        assert [r["msg"]["id"] for r in got if r] == [0, 1, 2]
        assert agent.calls.wait_for(is_result, 0.2) is None  # no fourth one: times out


def test_call_raises_rpc_error_and_timeout() -> None:
    with spawn("hang.py") as agent:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError):
            agent.calls.call("ping", {}, timeout=0.3)
        assert time.monotonic() - t0 < 2
    err = RpcError({"code": -32601, "message": "nope"})
    assert err.code == -32601 and "nope" in str(err)


def test_listener_sees_every_record_in_order_and_may_send() -> None:
    seen: list[Record] = []
    threads: set[str] = set()

    with spawn("echo_agent.py") as agent:

        def listener(record: Record) -> None:
            seen.append(record)
            threads.add(threading.current_thread().name)
            msg = record.get("msg") or {}
            if record["dir"] == "a2c" and msg.get("method") == "question":
                agent.calls.respond(msg["id"], result={"auto": True})  # sending from a callback

        agent.on_record(listener)
        ask = agent.calls.request("ask", {})
        assert agent.calls.wait_for(lambda m: m.get("id") == ask, 5, start=0) is not None
        for n in range(20):
            agent.calls.request("ping", {"n": n})
        assert agent.calls.wait_for(lambda m: m.get("id") == ask + 20, 5, start=0) is not None
    assert seen == agent.transcript  # same records, same order
    # the reader only reads: every listener call, the one that sent too, ran on the delivery
    # thread, never on the stdout reader or the sending thread
    assert threads == {f"acp-deliver-{agent.pid}"}


def test_listener_exception_does_not_kill_the_reader() -> None:
    with spawn("echo_agent.py") as agent:
        agent.on_record(lambda r: 1 / 0)
        assert agent.calls.call("ping", {}, timeout=5) == {"echo": {}}
    assert agent.listener_errors and isinstance(agent.listener_errors[0], ZeroDivisionError)


def test_clean_exit_code_is_returned() -> None:
    agent = spawn("echo_agent.py")
    agent.calls.notify("exit")
    assert agent.wait_exit(5) == 7
    assert agent.close() == 7
    assert not live_members(agent.pgid)


# -------------------------------------------------------------------- hostile


def test_crash_at_start_is_agent_exited_not_a_hang() -> None:
    agent = spawn("crash_at_start.py")
    t0 = time.monotonic()
    assert agent.wait_exit(5) == 3
    with pytest.raises(AgentExited):
        agent.calls.call("initialize", {}, timeout=10)
    assert agent.calls.wait_for(lambda m: True, 10) is None  # returns at once: nothing can come
    assert time.monotonic() - t0 < 3
    assert agent.close() == 3
    assert "cannot start" in agent.stderr_text()


def test_writing_to_a_dead_agent_raises_agent_exited() -> None:
    agent = spawn("dies_on_input.py")
    agent.calls.notify("first")
    assert agent.wait_exit(5) == 0
    with pytest.raises(AgentExited):
        for _ in range(100):  # the pipe may absorb a write or two before EPIPE
            agent.calls.notify("more", {"pad": "z" * 1000})
    agent.close()


def test_hang_is_terminated_within_the_grace() -> None:
    agent = spawn("hang.py")
    t0 = time.monotonic()
    code = agent.close(grace=0.3)
    assert code == -15  # SIGTERM after stdin close did not end it
    assert time.monotonic() - t0 < 2
    assert not live_members(agent.pgid)


def test_agent_that_never_reads_stdin_times_out_the_writer() -> None:
    agent = spawn("hang.py", write_timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        for _ in range(1000):  # fills the 64 KiB pipe buffer quickly
            agent.calls.notify("stuff", {"pad": "p" * 65536})
    assert time.monotonic() - t0 < 3
    with pytest.raises(AgentExited, match="mid-line"):  # half a line is in the pipe now
        agent.calls.notify("more")
    agent.close(grace=0.2)


def test_sigterm_ignored_needs_sigkill() -> None:
    agent = spawn("ignore_sigterm.py")
    assert agent.calls.wait_for(lambda m: m.get("method") == "ready", 5) is not None
    t0 = time.monotonic()
    code = agent.close(grace=0.3)
    assert code == -9
    assert time.monotonic() - t0 < 3
    assert not live_members(agent.pgid)


def test_an_exit_during_a_close_still_ends_the_agent() -> None:
    """A replay's agent is closed on a daemon thread (its grace is not the replay's time): a
    run that exits while that close waits out its grace must still end the group, or the
    agent outlives the run (the hostile ``hang`` runs left such processes behind)."""
    from acp_model.fuzzing.transport import _end_live_agents

    agent = spawn("ignore_sigterm.py", close_grace=30.0)
    assert agent.calls.wait_for(lambda m: m.get("method") == "ready", 5) is not None
    closer = threading.Thread(target=agent.close, daemon=True)
    closer.start()
    assert agent.wait_exit(0.5) is None  # in its grace, still running
    t0 = time.monotonic()
    _end_live_agents()  # what the run's exit does (atexit)
    assert time.monotonic() - t0 < 3
    assert not live_members(agent.pgid)


def test_lingering_grandchild_is_killed() -> None:
    agent = spawn("grandchild.py")
    record = agent.calls.wait_for(lambda m: m.get("method") == "grandchild", 10)
    assert record is not None
    grandchild = record["msg"]["params"]["pid"]
    assert agent.wait_exit(5) == 0  # the agent itself is gone already...
    assert is_alive(grandchild)  # ...but its child lingers (and ignores SIGTERM)
    t0 = time.monotonic()
    agent.close(grace=0.3)
    assert time.monotonic() - t0 < 4
    assert not is_alive(grandchild)
    assert not live_members(agent.pgid)


def test_closed_stdout_is_detected_while_the_process_lives() -> None:
    agent = spawn("close_stdout.py")
    assert agent.calls.wait_for(lambda m: m.get("method") == "hello", 5) is not None
    t0 = time.monotonic()
    with pytest.raises(AgentExited):
        agent.calls.call("ping", {}, timeout=10)
    assert time.monotonic() - t0 < 3
    assert agent.log.ended and not agent.exited
    assert agent.close(grace=0.3) is not None
    assert not live_members(agent.pgid)


def test_garbage_lines_are_recorded_raw_with_a_flag() -> None:
    with spawn("garbage.py") as agent:
        assert agent.calls.wait_for(lambda m: m.get("method") == "ok", 5) is not None
        records = agent.records()
    raw = [(r.get("error"), r.get("raw")) for r in records if "raw" in r]
    assert raw[0] == ("not-json", "Agent v1.0 starting...")
    assert raw[1][0] == "invalid-utf8" and "\ufffd" in raw[1][1]
    assert raw[2] == ("not-json", "{not json}")
    assert raw[3][0] == "not-json" and "NaN" in raw[3][1]
    parsed = [r["msg"]["method"] for r in records if "msg" in r]
    assert parsed == ["surrogate", "ok"]  # valid JSON even if orjson refuses it


def test_decode_line_edge_cases() -> None:
    assert decode_line(b'{"a": 1}') == ({"a": 1}, None, None)
    assert decode_line(b"") == (None, "", "not-json")
    assert decode_line(b"\xc3\x28")[2] == "invalid-utf8"
    assert decode_line(b"Infinity")[2] == "not-json"


@pytest.mark.slow  # writes 50 MB through a pipe
def test_one_50mb_line_is_never_held_whole() -> None:
    assert in_fresh_process("huge_line_scenario") < 40, "the reader buffered the whole line"


def huge_line_scenario() -> None:
    with spawn("huge_line.py", max_line_bytes=1 * MiB) as agent:
        after = agent.calls.wait_for(lambda m: m.get("method") == "after", 30)
        assert after is not None
        records = agent.records()
    oversize = [r for r in records if r.get("error") == "oversize"]
    assert len(oversize) == 1
    assert oversize[0]["bytes"] > 50 * MiB
    assert oversize[0]["raw"].startswith('{"jsonrpc":"2.0","method":"big"')
    assert len(oversize[0]["raw"]) <= 4096


@pytest.mark.slow  # writes 100 MB through a pipe
def test_100mb_flood_is_capped_and_counted() -> None:
    assert in_fresh_process("flood_scenario") < 80, "transcript cap did not bound memory"


def flood_scenario() -> None:
    cap = 4 * MiB
    # the flood starts once a line arrives, after the listener is registered: a listener sees
    # only later records, and a loaded machine once delivered some before the registration
    go = f"import runpy, sys; sys.stdin.readline(); runpy.run_path({str(HERE / 'flood.py')!r})"
    agent = AgentProcess([sys.executable, "-c", go], close_grace=0.3,
                         max_transcript_bytes=cap)
    seen = [0]
    agent.on_record(lambda r: seen.__setitem__(0, seen[0] + (r["dir"] == "a2c")))
    agent.send({"jsonrpc": "2.0", "method": "go"})
    deadline = time.monotonic() + 60
    while agent.reader.bytes_read < 100 * MiB and time.monotonic() < deadline:
        time.sleep(0.05)  # test-side progress polling only
    assert agent.reader.bytes_read >= 100 * MiB
    code = agent.close(grace=0.3)
    assert code == -15
    # close() joins the reader for 2 s at most; on a loaded machine it may still be reading
    # what the pipe held: the counts are compared once it has read to the end
    assert agent.log.wait_eof(timeout=60)
    assert agent.log.truncated and agent.stored_bytes <= cap
    assert agent.transcript[-1]["error"] == "transcript-cap"
    # the transcript: the line sent, what was stored, the cap's marker
    assert agent.reader.lines_read == len(agent.transcript) - 2 + agent.log.dropped_records
    assert agent.log.dropped_records > 90_000
    # listeners still see everything (once the delivery thread has handed them the last)
    assert agent.wait_delivered(timeout=30)
    assert seen[0] == agent.reader.lines_read
    assert agent.calls.wait_for(lambda m: True, 1, start=len(agent.transcript)) is None
    assert not live_members(agent.pgid)


def test_stderr_is_a_bounded_ring(tmp_path: Path) -> None:
    script = "import sys\nfor i in range(20000): sys.stderr.write(f'line {i}\\n')\n"
    path = tmp_path / "stderr.txt"
    agent = AgentProcess(
        [sys.executable, "-c", script], stderr_bytes=1024, stderr_path=path, stderr_file_bytes=4096
    )
    agent.wait_exit(10)
    agent.close()
    text = agent.stderr_text()
    assert len(text) <= 1024 and text.endswith("line 19999\n")
    assert agent.stderr.total > 100_000
    assert path.stat().st_size == 4096 and path.read_text().startswith("line 0\n")
