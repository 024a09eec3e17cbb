"""The agent's wall clock, held on a replay: an input of the agent the boundary schedule
(``fuzzing/schedule.py``) does not carry by itself.

An agent may decide by the wall clock: gemini-cli names a session's recording file by the
minute it was made, and a ``session/load`` within that same minute overwrites the history
(``docs/agent-notes/gemini-cli.md``). The recording that showed it had a minute boundary
between ``session/new`` and ``session/load``; a replay lasting seconds rarely crosses one. So
a schedule records the wall-clock time its t=0 stands for (``Schedule.epoch``), and a held
replay runs the agent under libfaketime with a clock offset it reads from a file on every
call (``FAKETIME_TIMESTAMP_FILE``, ``FAKETIME_NO_CACHE``): at the trial's start the offset
makes the agent's clock read the recording's t=0, and before each held input (a client write,
a model release) it moves forward, never back, so the agent's clock reads at least what it
read at that input in the recording (``Hold``). Monotonic clocks stay real
(``FAKETIME_DONT_FAKE_MONOTONIC``): the agent's timers and deadlines run as they do.

What it costs: libfaketime reads the offset file on each wall-clock read (about 4 us a
``Date.now()`` in node 20 here, 80 ns without). Where libfaketime is not installed, or the
agent's program is linked statically (``LD_PRELOAD`` does nothing there: Go), the replay runs
with the real clock and says so once (:func:`blocker`). So does a Python agent where the
library breaks sleeps to an absolute monotonic deadline with the monotonic clock left real
(libfaketime 0.9.10, Debian 12's: ``clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`` fails
with EINVAL, its issue #426), which Python 3.11+'s ``time.sleep`` is (and ``subprocess``'s
timeouts): preloaded, the agent would fail where it sleeps (:func:`sleeps_broken`, a probe).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from acp_model.process import group_pids

# where Debian, Fedora and a source build put it (``apt-get install libfaketime``)
LIBRARY_GLOBS = ("/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1",
                 "/usr/lib64/faketime/libfaketime.so.1",
                 "/usr/local/lib/faketime/libfaketime.so.1")
# the offset is read from its file on every call (a cache would apply a move seconds late);
# the monotonic clocks stay real (both names: 0.9.10 reads either)
SETTINGS = {"FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "DONT_FAKE_MONOTONIC": "1"}
NOT_INSTALLED = "libfaketime is not installed (apt-get install libfaketime)"
SHM = Path("/dev/shm")
PT_INTERP = 3  # an ELF program header naming the dynamic loader
# clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, now + 1 ms) through the preloaded library;
# the exit code is its error number (0: it slept)
PROBE = ("import ctypes; libc = ctypes.CDLL(None); t = (ctypes.c_long * 2)(); "
         "libc.clock_gettime(1, t); t[1] += 1000000; t[0] += t[1] // 1000000000; "
         "t[1] %= 1000000000; raise SystemExit(libc.clock_nanosleep(1, 1, t, None))")


def library() -> Path | None:
    """libfaketime's shared object, if installed."""
    for pattern in LIBRARY_GLOBS:
        found = sorted(Path("/").glob(pattern.lstrip("/")))
        if found:
            return found[0]
    return None


def blocker(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """Why the clock of the agent ``argv`` starts cannot be held (None: it can): libfaketime
    missing, a program ``LD_PRELOAD`` does not reach (linked statically), or a Python one
    the library would make fail where it sleeps (:func:`sleeps_broken`)."""
    lib = library()
    if lib is None:
        return NOT_INSTALLED
    program = _program(argv, env)
    if program is not None and _static(program):
        return f"the agent's program {program.name} is linked statically (LD_PRELOAD does " \
               "not reach it)"
    if program is not None and program.name.startswith("python") and sleeps_broken(lib):
        return (f"the agent's program {program.name} sleeps to absolute monotonic deadlines "
                f"(Python 3.11+), which {lib.name} here breaks with the monotonic clock left "
                "real (EINVAL: libfaketime issue #426, fixed after 0.9.10)")
    return None


@functools.cache
def sleeps_broken(lib: Path) -> bool:
    """Whether ``lib``, preloaded with the settings a held replay uses, makes a sleep to an
    absolute monotonic deadline fail (a probe, once per library: Python 3.11+'s
    ``time.sleep`` is one)."""
    with tempfile.TemporaryDirectory(prefix="acp-model-clock-probe-") as tmp:
        offset = Path(tmp) / "offset"
        offset.write_text("+0\n", encoding="ascii")
        env = {**os.environ, "LD_PRELOAD": str(lib), "FAKETIME_TIMESTAMP_FILE": str(offset),
               **SETTINGS}
        probe = [sys.executable, "-c", PROBE]
        try:
            done = subprocess.run(probe, env=env, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            return True
    return done.returncode != 0


def _program(argv: Sequence[str], env: Mapping[str, str] | None, depth: int = 0
             ) -> Path | None:
    """The ELF file ``argv`` runs: the command, or the interpreter its ``#!`` line names
    (``env node`` read as node); None when not found."""
    if not argv or depth > 3:
        return None
    path = (env or os.environ).get("PATH", os.defpath)
    found = shutil.which(argv[0], path=path)
    if found is None:
        return None
    try:
        with open(found, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return Path(found)
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return _program(words, env, depth + 1)


def _static(program: Path) -> bool:
    """Whether ``program`` is an ELF executable without a dynamic loader (not ELF: False)."""
    try:
        with open(program, "rb") as f:
            ident = f.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF":
                return False
            wide, little = ident[4] == 2, ident[5] == 1
            order = "<" if little else ">"
            if wide:
                phoff, = struct.unpack_from(order + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 54)
            else:
                phoff, = struct.unpack_from(order + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error):
        return False
    types = (struct.unpack_from(order + "I", table, i * phentsize)[0] for i in range(phnum)
             if (i + 1) * phentsize <= len(table))
    return PT_INTERP not in types


class _Files:
    """The offset files of this Python process's agents, in one directory removed at exit."""

    lock = threading.Lock()
    folder: Path | None = None
    since = 0.0  # when it was made: libfaketime's leftovers after it are ours to sweep

    @classmethod
    def new(cls) -> Path:
        with cls.lock:
            if cls.folder is None:
                cls.folder = Path(tempfile.mkdtemp(prefix="acp-model-clock-"))
                cls.since = time.time()
                atexit.register(shutil.rmtree, cls.folder, True)
            fd, name = tempfile.mkstemp(suffix=".faketime", dir=cls.folder)
            os.close(fd)
            return Path(name)


class AgentClock:
    """One agent process's wall clock: the offset from the real clock it reads (written to
    the file libfaketime reads on every call), set at a trial's start and moved forward
    only from there."""

    def __init__(self, lib: Path) -> None:
        self.lib = lib
        self.path = _Files.new()
        self.offset = 0.0  # seconds the agent's clock is ahead of the real one
        self.base: float | None = None  # the offset at the trial's start (None: not held)
        self._write()

    @classmethod
    def for_agent(cls, argv: Sequence[str], env: Mapping[str, str] | None
                  ) -> tuple[AgentClock | None, str | None]:
        """A clock for an agent process about to start, or why there can be none."""
        why = blocker(argv, env)
        lib = library()
        return (None, why) if why is not None or lib is None else (cls(lib), None)

    def env(self, base: Mapping[str, str] | None) -> dict[str, str]:
        """The agent's environment with the clock: libfaketime preloaded (after any library
        the agent's own environment preloads), reading this clock's file."""
        out = dict(os.environ if base is None else base)
        preload = out.get("LD_PRELOAD", "")
        out["LD_PRELOAD"] = f"{preload} {self.lib}".strip()
        out["FAKETIME_TIMESTAMP_FILE"] = str(self.path)
        out.update(SETTINGS)
        out.pop("FAKETIME", None)  # it would win over the file
        return out

    @property
    def held(self) -> bool:
        return self.base is not None

    def now(self) -> float:
        """What the agent's wall clock reads now (epoch seconds)."""
        return time.time() + self.offset

    def start(self, wall: float) -> None:
        """A trial begins whose recording's clock read ``wall`` at its t=0: the agent's
        clock reads that now (a process started ahead of its trial ran on the real one)."""
        self.offset = wall - time.time()
        self.base = self.offset
        self._write()

    def advance(self, wall: float) -> None:
        """Before a held input recorded when the agent's clock read ``wall``: the clock moves
        forward to read it now, never back (a replay slower than its recording leaves the
        clock as far past it as it is late)."""
        if self.base is None:
            return
        offset = wall - time.time()
        if offset > self.offset:
            self.offset = offset
            self._write()

    def unreached(self, pgid: int) -> str | None:
        """A process of the agent's group ``pgid`` libfaketime does not reach (None: each
        maps it): a wrapper the check of the program started let pass may run its core as a
        static program (codex-acp's node launcher runs a musl-static codex), or start it
        with a cleared environment; holding the clock of only part of the agent is not
        holding it."""
        for pid in group_pids(pgid):
            try:
                maps = Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")
                name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
            except OSError:
                continue  # (it ended meanwhile)
            if self.lib.name not in maps:
                return f"the agent's process {name} (pid {pid}) does not load libfaketime " \
                       "(a static program, or one started without LD_PRELOAD)"
        return None

    def ahead(self) -> float:
        """How far the clock was moved forward since the trial's start (0: not held)."""
        return 0.0 if self.base is None else self.offset - self.base

    def _write(self) -> None:
        """The offset, replaced at once (libfaketime opens the file on each read)."""
        spare = self.path.with_suffix(".next")
        spare.write_text(f"{self.offset:+.6f}\n", encoding="ascii")
        os.replace(spare, self.path)

    def close(self) -> None:
        """The process ended: its file goes, and what libfaketime left in /dev/shm for
        processes of ours that ended without its cleanup (a killed one leaves a semaphore
        and a segment named by its pid)."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        sweep(_Files.since)


def sweep(since: float) -> int:
    """Remove libfaketime's shared-memory leftovers made since ``since`` by processes of this
    user that have ended; returns how many files went. A leftover whose pid comes again makes
    libfaketime there create none of its own (or fail to start, with only one of the two)."""
    gone = 0
    uid = os.getuid()
    with contextlib.suppress(OSError):
        for entry in SHM.iterdir():
            name = entry.name
            stem = name.removeprefix("sem.")
            if not stem.startswith(("faketime_shm_", "faketime_sem_")):
                continue
            pid = stem.rsplit("_", 1)[-1]
            if not pid.isdigit() or _alive(int(pid)):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat()
                if info.st_uid == uid and info.st_mtime >= since:
                    entry.unlink()
                    gone += 1
    return gone


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ProcessClock:
    """What a schedule knows of its agent process's wall clock: the clock a replay can hold
    (None: the real one), why there is none, and the process group it must reach."""

    def __init__(self) -> None:
        self.agent: AgentClock | None = None
        self.unclocked: str | None = None  # why the process has no clock a replay can hold
        self.pgid: int | None = None  # the agent's process group (what the clock must reach)

    def follow(self, first: float | None) -> bool:
        """A held replay begins whose recording's clock read ``first`` first (its epoch, or
        earlier: ``Schedule.first_clock``): set the agent's clock to it, if the whole agent
        reads it; returns whether it is held."""
        if self.agent is None or first is None:
            return False
        missed = self.agent.unreached(self.pgid) if self.pgid is not None else None
        if missed is not None:
            self.unclocked = missed  # the whole agent on the real clock, not part of it
            return False
        self.agent.start(first)
        return True

    def advance(self, wall: float) -> None:
        """Before a held input recorded at ``wall`` (``AgentClock.advance``)."""
        if self.agent is not None:
            self.agent.advance(wall)

    def now(self) -> float:
        """What the agent's wall clock reads now."""
        return time.time() if self.agent is None else self.agent.now()

    def ahead(self) -> float:
        """How far the agent's clock was moved forward since its trial began."""
        return 0.0 if self.agent is None else round(self.agent.ahead(), 4)

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()




# held replays under the clock in which the agent failed on its own, none going right, after
# which the clock goes for good (one may be a race of the agent's own)
DROP_AFTER = 2


@dataclass(frozen=True)
class ClockEvidence:
    """What one held replay says of the agent's wall clock (``inconclusive.clock_evidence``):
    ``wanted`` (on the real clock, the clock may matter), ``clocked`` (it ran under the
    clock), ``failed`` (the agent failed on its own where the recording did not)."""

    wanted: bool
    clocked: bool
    failed: bool


@dataclass
class ClockChoice:
    """Whether replays hold the agent's wall clock, from what held replays showed: from the
    first one on the real clock that says it may matter (``inconclusive.clock_evidence``), and
    back to the real clock for good once, under it, the agent failed on its own
    :data:`DROP_AFTER` times with no replay under it going right: libfaketime changes some
    agents (claude-agent-acp's Claude Code child exits at its shared-memory set-up, s14),
    while under a clock that serves, a failure of its own is the agent's (gemini-cli, s15: a
    clock dropped at one such trial left every later replay on the real clock)."""

    held: bool = False
    dropped: bool = False
    worked: bool = False  # a replay under the clock went right: it serves
    failures: int = 0

    def weigh(self, seen: ClockEvidence) -> bool:
        """One held replay's evidence; returns whether the clock is held from now on."""
        if not self.held:
            self.held = seen.wanted and not self.dropped
        elif seen.clocked and not seen.failed:
            self.worked = True
        elif seen.clocked and not self.worked:
            self.failures += 1
            if self.failures >= DROP_AFTER:
                self.held, self.dropped = False, True
        return self.held


__all__ = ["DROP_AFTER", "NOT_INSTALLED", "SETTINGS", "AgentClock", "ClockChoice", "ClockEvidence",
           "ProcessClock",
           "blocker", "library", "sweep"]
