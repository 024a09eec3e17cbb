"""Ctrl-C at any moment of a fuzz run stops it promptly and still writes the report.

Each test waits for the run to say it reached a phase (``phase: ...`` lines, printed when the
output is not a terminal) and only then sends SIGINT, so no test depends on how fast the
machine is. The old failure mode: an interrupt during start-up was swallowed and the run kept
fuzzing.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from acp_model.cli.main import main

pytestmark = pytest.mark.slow  # interrupts real fuzz runs at each phase

REFERENCE = [sys.executable, "-m", "acp_model.agents.reference"]


MARK = "ACPM_TEST_RUN"  # in a run's environment, which its agents inherit


def _ours(line: str, mark: str) -> bool:
    """Is this process one of this test's (another suite on the machine may run the same
    test, with the same command lines, at the same time)?"""
    try:
        environ = Path(f"/proc/{line.split()[0]}/environ").read_bytes()
    except OSError:
        return False  # gone already
    return f"{MARK}={mark}".encode() in environ.split(b"\0")


def _agents_left(marker: str, mark: str, within: float = 5.0) -> list[str]:
    """This run's agent processes (not fuzz runs) whose command line contains ``marker``, once
    the ones being ended are gone: the run's exit may come an instant before its agent's (it
    saw the signal, the kernel has not reaped the agent yet); one still there after
    ``within`` seconds is left behind."""
    end = time.monotonic() + within
    while True:
        out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
        left = [line for line in out.splitlines()
                if "pgrep" not in line and "acp_model fuzz" not in line and _ours(line, mark)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


class Run:
    """A fuzz run in a subprocess whose output lines can be awaited."""

    def __init__(self, tmp: Path, *agent: str, options: tuple[str, ...] = ()) -> None:
        self.report = tmp / "report.json"
        self.mark = uuid.uuid4().hex
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acp_model", "fuzz", "--max-examples", "100000",
             "--seed", "1", "--deadline", "1", *options, "--report", str(self.report),
             "--out", str(tmp / "out"), "--", *agent],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, MARK: self.mark})
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix: str, timeout: float = 180) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if line.startswith(prefix):
                return
        pytest.fail(f"never saw {prefix!r}; output so far: {self.seen[-20:]}")

    def interrupt(self) -> tuple[int, float]:
        started = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=60)
        took = time.monotonic() - started
        while (line := self.lines.get(timeout=10)) is not None:
            self.seen.append(line)  # the whole output, for the assertion messages
        return code, took


@pytest.mark.parametrize(("phase", "seed"), [("phase: start-up", "4241"),
                                           ("phase: initialize", "4242"),
                                           ("phase: fuzzing", "4243")])
def test_interrupt_before_any_failure(phase: str, seed: str, tmp_path: Path) -> None:
    run = Run(tmp_path, *REFERENCE, "--seed", seed, "--timing", "real")
    run.wait_for(phase)
    code, took = run.interrupt()
    assert code == 130, "\n".join(run.seen)
    assert took < 10, f"took {took:.1f} s to stop"
    report = json.loads(run.report.read_text())
    assert report["summary"]["interrupted"] is True
    assert _agents_left(f"reference --seed {seed} --timing real", run.mark) == []


def _seeded(tmp: Path, seed: str) -> tuple[str, ...]:
    """An example database that holds a CANCEL-07 failure of the mutant, for the run to replay
    first. Whether 10 s of random programs draw a cancel during work is chance, and a loaded
    machine runs fewer of them (ci-75: five examples, none, so the run never reached its
    replaying phase); a search bounded only by its rule (``--stop-on``) finds one, minimized and
    replayed once only, since this run is not the one interrupted."""
    db = tmp / "db"
    report = tmp / "report.json"
    subprocess.run(
        [sys.executable, "-m", "acp_model", "fuzz", "--max-examples", "100000", "--seed", seed,
         "--deadline", "1", "--time-budget", "120", "--stop-on", "CANCEL-07",
         "--minimize-trials", "1", "--replay-runs", "1", "--db", str(db),
         "--report", str(report), "--out", str(tmp / "out"), "--",
         *REFERENCE, "--mutant", "cancel_as_end_turn", "--seed", seed],
        capture_output=True, text=True, timeout=600, check=False)
    found = json.loads(report.read_text())
    assert "CANCEL-07" in {v["rule"] for v in found["violations"]}, found["summary"]
    return ("--db", str(db))


@pytest.mark.parametrize(("phase", "seed", "replays"), [
    ("phase: shrinking CANCEL-07", "4341", "50"), ("phase: replaying CANCEL-07", "4342", "50"),
    ("phase: writing", "4343", "1")])
def test_interrupt_after_a_failure_keeps_it(phase: str, seed: str, replays: str,
                                            tmp_path: Path) -> None:
    # generation stops once the failure is found: the later phases come sooner
    database = _seeded(tmp_path / "search", seed)
    run = Run(tmp_path, *REFERENCE, "--mutant", "cancel_as_end_turn", "--seed", seed,
              options=("--time-budget", "10", "--replay-runs", replays,
                       "--stop-on", "CANCEL-07", *database))
    run.wait_for(phase)
    code, took = run.interrupt()
    assert code == 1, "\n".join(run.seen)  # a failure was found: that is the verdict
    assert took < 10, f"took {took:.1f} s to stop"
    report = json.loads(run.report.read_text())
    assert report["verdict"] == "fail"
    assert "CANCEL-07" in {v["rule"] for v in report["violations"]}
    if phase != "phase: writing":
        assert report["summary"]["interrupted"] is True
    assert _agents_left(f"--mutant cancel_as_end_turn --seed {seed}", run.mark) == []


def test_an_oracle_that_raises_is_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A crash of the monitor during fuzzing ends the run with exit 3, never a pass."""
    from acp_model.oracle.monitor import Monitor

    real = Monitor.feed

    def feed(self: Monitor, record: object) -> object:
        if self.count >= 6:
            raise RuntimeError("planted oracle bug")
        return real(self, record)  # type: ignore[arg-type]

    monkeypatch.setattr(Monitor, "feed", feed)
    report = tmp_path / "r.json"
    code = main(["fuzz", "--max-examples", "5", "--seed", "1", "--report", str(report), "--",
                 *REFERENCE])
    assert code == 3
    out = capsys.readouterr().out
    assert "internal error of acp-model" in out and "planted oracle bug" in out
    assert not report.exists()  # no verdict was reached


def test_debug_shows_the_oracle_traceback(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from acp_model.oracle.monitor import Monitor

    def feed(self: Monitor, record: object) -> object:
        raise RuntimeError("planted oracle bug")

    monkeypatch.setattr(Monitor, "feed", feed)
    assert main(["--debug", "fuzz", "--max-examples", "2", "--", *REFERENCE]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "planted oracle bug" in err
