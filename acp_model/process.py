"""Process groups (is anything of an agent still running, wait until nothing is), reading a
child's pipe chunk by chunk, and the bounded buffer its stderr is drained into.

The fuzz transport and the proxy both start an agent in a process group of its own
(:func:`spawn_group`) and end it with the same ladder (stdin closed, SIGTERM, SIGKILL to the
whole group): :func:`end_group`.
Linux reads ``/proc``; elsewhere a signal 0 to the group stands in.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

READ_CHUNK = 64 * 1024


def read_chunks(fd: int, stop: threading.Event, size: int = READ_CHUNK) -> Iterator[bytes]:
    """What a child writes to ``fd``, chunk by chunk (at most ``size`` bytes), until it closes
    the pipe (or the pipe fails) or ``stop`` is set: the fuzz transport's readers and the
    proxy's stderr pump."""
    while not stop.is_set():
        try:
            ready, _, _ = select.select([fd], [], [], 0.2)
        except (OSError, ValueError):
            return
        if not ready:
            continue
        try:
            chunk = os.read(fd, size)
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def _group_members(pgid: int) -> list[tuple[int, str]]:
    """(pid, state) of processes whose process group is ``pgid`` (Linux /proc scan)."""
    members: list[tuple[int, str]] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid:
            members.append((int(entry), fields[0].decode()))
    return members


def group_pids(pgid: int) -> list[int]:
    """The live processes of group ``pgid`` (Linux /proc scan; zombies left out)."""
    return [pid for pid, state in _group_members(pgid) if state not in ("Z", "X")]


def group_alive(pgid: int) -> bool:
    """True if a live (non-zombie) process is still in group ``pgid``.

    Zombies count as gone: they no longer run, and in containers whose PID 1 does not reap
    orphans they may linger as entries forever.
    """
    if os.path.isdir("/proc"):
        return bool(group_pids(pgid))
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Wait until no live process remains in ``pgid``.

    This polls (there is no event for "a process group emptied"), in short steps.
    """
    deadline = time.monotonic() + timeout
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to the group; a group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def spawn_group(argv: Sequence[str], cwd: str | os.PathLike[str] | None = None,
                env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start an agent with piped stdio in a session (and process group) of its own.

    A Ctrl-C can land inside ``Popen`` after the fork, while it waits for the exec: the
    exception then leaves with no object, and the child would run on, orphaned. The object is
    made first so that its pid is still at hand to end that child's group.
    """
    proc = subprocess.Popen.__new__(subprocess.Popen)
    try:
        proc.__init__(list(argv), stdin=subprocess.PIPE,  # type: ignore[misc]
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                      env=dict(env) if env is not None else None, start_new_session=True,
                      bufsize=0, close_fds=True)
    except BaseException:
        pid = getattr(proc, "pid", None)
        if pid:
            signal_group(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        raise
    return proc


def end_group(pgid: int, close_stdin: Callable[[], None],
              wait_exit: Callable[[float], int | None], grace: float) -> int | None:
    """The ladder that ends an agent: stdin closed, ``grace``; SIGTERM to the group,
    ``grace``; SIGKILL. Then whatever the agent left in its group (grandchildren) gets the
    same, with a short grace. Returns the agent's exit status (None if it never came)."""
    close_stdin()
    code = wait_exit(grace)
    if code is None:
        signal_group(pgid, signal.SIGTERM)
        code = wait_exit(grace)
        if code is None:
            signal_group(pgid, signal.SIGKILL)
            code = wait_exit(5.0)
    if group_alive(pgid):
        signal_group(pgid, signal.SIGTERM)
        if not wait_group_gone(pgid, min(grace, 0.5)):
            signal_group(pgid, signal.SIGKILL)
            wait_group_gone(pgid, 2.0)
    return code


class RingBuffer:
    """Keeps the last ``cap`` bytes written to it; counts everything (an agent's stderr)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            if len(data) >= self.cap:
                self._chunks.clear()
                data = data[-self.cap :]
                self._size = 0
            self._chunks.append(data)
            self._size += len(data)
            while self._size > self.cap:
                head = self._chunks.popleft()
                excess = self._size - self.cap
                if len(head) > excess:
                    self._chunks.appendleft(head[excess:])
                    self._size -= excess
                else:
                    self._size -= len(head)

    def getvalue(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)
