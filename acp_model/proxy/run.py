"""``acp-model proxy``: the oracle live, between a real editor and a real agent.

Put ``acp-model proxy -- AGENT_CMD ...`` where the editor's agent command goes. The relay
forwards both directions byte for byte (``relay.py``); the judge records the trace and runs
the same Monitor as ``acp-model check`` in a process of its own (``judge.py``); each violation
is one line on stderr (and ``--log``) the moment it is decided. At the end (stdin EOF, the agent's
exit, SIGINT / SIGTERM / SIGHUP) the agent gets the fuzzer's shutdown ladder, what is still owed
is listed as *open at end* (the user may simply have quit mid-turn), the report is written and
the proxy exits with the agent's status (or 128 + the signal), so the editor sees what it would
have seen without the proxy.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from acp_model.oracle.monitor import Monitor
from acp_model.oracle.offline import report_for
from acp_model.proxy.feed import END, SETUP, JudgeFeed
from acp_model.proxy.judge import JudgeProcess, JudgeSettings, covered_verdict
from acp_model.proxy.relay import Relay
from acp_model.report.document import write_json
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings

MiB = 1 << 20
SWITCH_INTERVAL = 0.0002  # seconds (CPython's default is 0.005)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ProxyError(Exception):
    """The proxy cannot start (the agent command cannot be run, a file cannot be written)."""


@dataclass
class ProxyConfig:
    argv: list[str]
    trace: Path | None = None
    report: Path | None = None
    html: Path | None = None
    log: Path | None = None
    readings: Readings = DEFAULT
    spec: str = revisions.AUTO
    grace: float = 3.0  # seconds the agent gets to exit (and to deliver) after stdin EOF
    quiet: bool = False  # no live lines on stderr (the log still gets them)
    max_line: int = 8 * MiB  # a longer line is recorded as oversize (still forwarded whole)
    max_trace: int = 256 * MiB  # the trace (and judging) stops here; forwarding never does
    max_queue: int = 64 * MiB  # bytes waiting for the judge before judging is cut off
    #                            (the wire never waits for the judge: feed.JudgeFeed)
    validate: bool = True
    cwd: str | None = None


@dataclass
class ProxyResult:
    exit_code: int
    report: dict[str, Any]
    open_at_end: list[dict[str, Any]] = field(default_factory=list)  # as in the report


def run_proxy(cfg: ProxyConfig, *, stdin_fd: int = 0, stdout_fd: int = 1,
              stderr: IO[bytes] | None = None) -> ProxyResult:
    out = _Output(cfg, stderr)
    judge = JudgeProcess(JudgeSettings(cfg.readings, cfg.spec, " ".join(cfg.argv),
                                       cfg.validate, cfg.max_line, cfg.max_trace,
                                       out.trace_fd, str(cfg.html) if cfg.html else None),
                         live=out.emit, stderr_fd=out.err_fd())
    out.handed_trace()
    feed = JudgeFeed(judge.stdin_fd, cfg.max_queue)
    feed.put(SETUP, 0.0, judge.setup)
    with _quick_switches():  # the caller's interval comes back on return
        got = _SignalCatcher()
        # Caught from before the first byte is relayed: an editor that sees the agent answer may
        # send a signal at once, and the default action would leave the agent's group behind.
        with got.installed():
            try:
                relay = Relay(cfg.argv, feed, stdin_fd=stdin_fd, stdout_fd=stdout_fd,
                              stderr_write=out.write_err, cwd=cfg.cwd)
            except OSError as exc:
                feed.close(0.0)
                judge.kill()
                out.close()
                raise ProxyError(f"cannot start {cfg.argv[0]!r}: {exc.strerror or exc}") from None
            code = _wait_for_the_end(relay, got, cfg.grace)
        relay.join()
    relayed = {"agent_exit": code, "signal": got.signum, "bytes": dict(relay.bytes),
               "judge_overflowed": feed.overflowed,
               "editor_stopped_reading": not relay.editor_reading,
               "cpu_seconds": {"forwarding": relay.forwarding_cpu()}}
    feed.put(END, relay.elapsed(), json.dumps(relayed).encode())
    delivered = feed.close(cfg.grace + 5.0)
    relayed["cpu_seconds"]["forwarding"] = relay.forwarding_cpu()  # the feed's drain too, now
    report = judge.result(timeout=cfg.grace + 5.0 if delivered else 0.0)
    if report is None:
        report = _judge_lost(cfg, judge.proc.returncode)
    judged = report.get("proxy", {})
    report["proxy"] = {**judged, **relayed, "cpu_seconds": {
        **judged.get("cpu_seconds", {}), **relayed["cpu_seconds"]}}
    report["verdict"] = covered_verdict(report["verdict"], report["proxy"])
    exit_code = 128 + got.signum if got.signum else (128 - code if code is not None and code < 0
                                                     else code or 0)
    if cfg.report is not None:
        write_json(report, cfg.report)
    open_at_end = report.get("open_at_end") or []
    proxy = report["proxy"]
    notes = [f"{len(open_at_end)} open at end"] if open_at_end else []
    if feed.overflowed:
        notes.append(f"judging stopped: the judge fell {cfg.max_queue / MiB:g} MiB behind the "
                     "wire; later messages were forwarded but not judged")
    elif proxy.get("trace_truncated"):
        notes.append("trace truncated: later messages were forwarded but not judged")
    if proxy.get("judging_cut_short"):
        notes.append("judging cut short at exit: the last messages were not judged")
    if proxy.get("internal_error"):
        notes.append(f"internal error of the oracle: {proxy['internal_error']}")
    out.emit(summary_line(report, notes, cfg.report))
    out.close()
    return ProxyResult(exit_code, report, open_at_end)


def _judge_lost(cfg: ProxyConfig, status: int | None) -> dict[str, Any]:
    """The report when the judge process ended without one: nothing was judged to the end,
    so the verdict is ``error``, never a pass."""
    report = report_for(Monitor(cfg.readings, validate=False), command="proxy",
                        source=" ".join(cfg.argv))
    report["verdict"] = "error"
    report["proxy"] = {"internal_error": f"the judge process ended without a report "
                                         f"(exit status {status})"}
    return report


def summary_line(report: dict[str, Any], notes: list[str], path: Path | None) -> str:
    """The proxy's last line: the verdict, its counts and ``notes``, the revision judged."""
    s = report["summary"]
    return (f"acp-model proxy: {report['verdict']} ({s['failures']} failure(s), "
            f"{s['warnings']} warning(s){''.join(', ' + n for n in notes)}; "
            f"spec {report['spec']['revision']}: {report['spec']['evidence']})"
            + (f"; report {path}" if path else ""))


class _Output:
    """Where the proxy writes besides the editor's stdout: stderr (shared with the agent's
    own), the ``--log`` file; one lock, so lines never interleave. The trace file is opened
    here (a path that cannot be written stops the proxy before the agent starts) and handed to
    the judge process, which writes it."""

    def __init__(self, cfg: ProxyConfig, stderr: IO[bytes] | None) -> None:
        self.err = stderr if stderr is not None else sys.stderr.buffer
        self.quiet = cfg.quiet
        self.lock = threading.Lock()
        self.log = _open(cfg.log, "ab")
        self.trace = _open(cfg.trace, "wb")
        self.trace_fd = self.trace.fileno() if self.trace is not None else None

    def err_fd(self) -> int | None:
        """The descriptor under stderr, for the judge's own (a traceback, should it crash)."""
        try:
            return self.err.fileno()
        except (AttributeError, OSError, ValueError):
            return None

    def handed_trace(self) -> None:
        """The judge has the trace file now: this process's copy closes."""
        if self.trace is not None:
            self.trace.close()
            self.trace = None

    def write_err(self, data: bytes) -> None:
        with self.lock, contextlib.suppress(OSError, ValueError):
            self.err.write(data)
            self.err.flush()

    def emit(self, text: str) -> None:
        """One line on stderr (unless quiet) and in the log."""
        data = (text + "\n").encode("utf-8", errors="replace")
        if not self.quiet:
            self.write_err(data)
        if self.log is not None:
            with self.lock, contextlib.suppress(OSError, ValueError):
                self.log.write(data)
                self.log.flush()

    def close(self) -> None:
        for f in (self.log, self.trace):
            if f is not None:
                f.close()


def _wait_for_the_end(relay: Relay, got: _SignalCatcher, grace: float) -> int | None:
    """Until the agent exits, the editor closes stdin, or a signal; returns the agent's status
    after the shutdown ladder."""
    while True:
        if got.signum:
            return relay.shut_down(grace)
        if relay.proc.poll() is not None:
            return relay.shut_down(grace)  # reap anything it left in its group
        if relay.editor_gone.is_set():
            code = relay.wait_exit(grace)  # the agent sees EOF, as without the proxy
            return relay.shut_down(grace) if code is None else relay.shut_down(0.2)
        if relay.agent_out_closed.is_set():
            relay.wait_exit(0.1)  # its exit follows
        else:
            # Asleep until a direction ends (an agent's exit closes its stdout), a tenth of a
            # second (an exit that did not close it, a signal): ``Popen.wait`` with a timeout
            # wakes every few milliseconds, taking the interpreter lock from the relay's loop.
            relay.news.wait(0.1)


@contextlib.contextmanager
def _quick_switches() -> Iterator[None]:
    """A short thread switch interval while the proxy runs, the caller's afterwards.

    The relay's loop shares the process with the stderr pump, the reader of the judge's lines
    and the main thread: at ``SWITCH_INTERVAL`` the loop, once ready, takes the GIL within a
    fraction of a millisecond of any of them instead of CPython's 5 ms. It is process-wide,
    so it is scoped (an in-process caller, a test, keeps its own).
    """
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


class _SignalCatcher:
    """SIGINT / SIGTERM / SIGHUP end the session (only in the main thread)."""

    def __init__(self) -> None:
        self.signum = 0

    @contextlib.contextmanager
    def installed(self) -> Any:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        old = {s: signal.getsignal(s) for s in SIGNALS}
        for s in SIGNALS:
            signal.signal(s, self._caught)
        try:
            yield self
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)

    def _caught(self, signum: int, _frame: Any) -> None:
        self.signum = signum


def _open(path: Path | None, mode: str) -> IO[bytes] | None:
    if path is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, mode)
    except OSError as exc:
        raise ProxyError(f"cannot write {path}: {exc.strerror or exc}") from None
