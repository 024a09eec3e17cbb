"""Process groups (is anything of an agent still running, wait until nothing is), and the
bounded buffer its stderr is drained into.

The fuzz transport and the proxy both start an agent in a process group of its own and end it
with the same ladder (stdin closed, SIGTERM, SIGKILL to the whole group); what the ladder waits
on is here. Linux reads ``/proc``; elsewhere a signal 0 to the group stands in.
"""

from __future__ import annotations

import collections
import os
import threading
import time


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


def group_alive(pgid: int) -> bool:
    """True if a live (non-zombie) process is still in group ``pgid``.

    Zombies count as gone: they no longer run, and in containers whose PID 1 does not reap
    orphans they may linger as entries forever.
    """
    if os.path.isdir("/proc"):
        return any(state not in ("Z", "X") for _, state in _group_members(pgid))
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
