"""The proxy's relay (``relay.Relay``) with a byte agent: every byte both ways, in order, in
the chunks they come in; each side's EOF passed on; the judge sent a copy of each direction in
the order the relay read them; and a slow editor holding the agent back as a pipe would, with
the relay holding at most one chunk."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from acp_model.proxy import feed
from acp_model.proxy.feed import A2C, C2A, HEADER, PIPE_SIZE, JudgeFeed
from acp_model.proxy.relay import Relay
from tests.proxy import frames

ROOT = Path(__file__).resolve().parents[2]
BYTES = [sys.executable, str(ROOT / "tests" / "proxy" / "byte_agent.py")]
_F_SETPIPE_SZ, _F_GETPIPE_SZ = 1031, 1032
LINE = b'{"jsonrpc":"2.0","method":"_flood","params":{"pad":"' + b"x" * 1000 + b'"}}\n'


class _Judge:
    """The judge's end of the feed: a thread that reads every frame."""

    def __init__(self) -> None:
        self.r, w = os.pipe()
        self.feed = JudgeFeed(w, 64 << 20)
        self.got = bytearray()
        self.thread = threading.Thread(target=self._read)
        self.thread.start()

    def _read(self) -> None:
        while data := os.read(self.r, 1 << 16):
            self.got.extend(data)

    def frames(self) -> list[tuple[int, float, bytes]]:
        assert self.feed.close(30)
        self.thread.join(30)
        os.close(self.r)
        return frames(bytes(self.got))


class _Editor:
    """The editor's ends of the two pipes to the relay."""

    def __init__(self) -> None:
        self.proxy_in, self.w = os.pipe()
        self.r, self.proxy_out = os.pipe()
        self.writing = True

    def send_and_close(self, data: bytes) -> None:
        os.write(self.w, data)
        self.close_stdin()

    def close_stdin(self) -> None:
        if self.writing:
            self.writing = False
            os.close(self.w)

    def received(self) -> bytes:
        """Everything up to EOF (the relay passes on the agent's end of its stdout)."""
        out = bytearray()
        while data := os.read(self.r, 1 << 16):
            out.extend(data)
        return bytes(out)

    def close(self) -> None:
        self.close_stdin()
        for fd in (self.proxy_in, self.proxy_out, self.r):
            os.close(fd)


@contextmanager
def _relay(argv: list[str]) -> Iterator[tuple[Relay, _Judge, _Editor]]:
    """A relay between the agent ``argv`` and two pipes the test holds as the editor."""
    judge, editor = _Judge(), _Editor()
    relay = Relay(argv, judge.feed, stdin_fd=editor.proxy_in, stdout_fd=editor.proxy_out,
                  stderr_write=lambda _b: None)
    try:
        yield relay, judge, editor
    finally:
        relay.shut_down(1.0)
        relay.join()
        editor.close()


def _until(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.005)


def _sent(judged: list[tuple[int, float, bytes]], kind: int) -> bytes:
    return b"".join(data for k, _, data in judged if k == kind)


def test_every_byte_goes_through_in_order_with_each_end_passed_on(tmp_path: Path) -> None:
    # a partial last line, a line longer than a pipe, and the agent's output in 7-byte pieces
    out = b'{"a":1}\n{"b":"' + b"y" * (3 * PIPE_SIZE) + b'"}\n' + b'{"c":[1,2' + b"]}"
    given = b"".join([b'{"x":1}\n', b"\xff\xfe not json\n", b'{"z":"' + b"q" * PIPE_SIZE,
                      b'"}\n{"partial":'])
    (tmp_path / "out").write_bytes(out)
    got = tmp_path / "got"
    argv = [*BYTES, "--out", str(tmp_path / "out"), "--got", str(got), "--chunk", "7"]
    with _relay(argv) as (relay, judge, editor):
        writer = threading.Thread(target=editor.send_and_close, args=(given,))
        writer.start()  # the editor writes while it reads, as an editor does
        received = editor.received()
        writer.join(30)
        assert relay.wait_exit(30) == 0  # the agent saw its stdin end
    assert received == out
    assert got.read_bytes() == given
    judged = judge.frames()
    assert _sent(judged, A2C) == out and _sent(judged, C2A) == given
    assert [t for _, t, _ in judged] == sorted(t for _, t, _ in judged)  # the order read
    ends = [k for k, _, data in judged if not data]
    assert sorted(ends) == [C2A, A2C]  # each direction's end, once
    assert relay.editor_gone.is_set() and relay.agent_out_closed.is_set()


def test_a_slow_editor_holds_the_agent_back_as_a_pipe_would() -> None:
    mib = 8
    with _relay([*BYTES, "--flood", str(mib)]) as (relay, judge, editor):
        _until(lambda: relay.down.rest is not None, "the relay waits for the editor")
        room = fcntl.fcntl(editor.r, _F_GETPIPE_SZ)
        # the editor reads nothing: the relay holds at most the chunk it could not write on
        assert relay.bytes["a2c"] <= room + PIPE_SIZE < mib << 20
        assert not relay.agent_out_closed.is_set()
        editor.close_stdin()  # the byte agent exits once its stdin ends
        received = editor.received()
        assert relay.wait_exit(30) == 0
    assert received == LINE * 1024 * mib
    assert _sent(judge.frames(), A2C) == received


def _judged_so_far(got: bytearray, kind: int) -> int:
    """Bytes of ``kind`` in the whole frames the judge has read so far."""
    at, total, data = 0, 0, bytes(got)
    while len(data) - at >= HEADER.size:
        k, _, size = HEADER.unpack_from(data, at)
        if at + HEADER.size + size > len(data):
            break
        total += size if k == kind else 0
        at += HEADER.size + size
    return total


def test_the_judge_gets_a_flood_as_it_happens_not_at_the_session_s_end() -> None:
    # the flood fills the judge's pipe many times over: the loop writes what waits each time
    # the judge makes room, while the session goes on (the agent lives until its stdin ends)
    mib = 8
    with _relay([*BYTES, "--flood", str(mib)]) as (relay, judge, editor):
        received = bytearray()
        while len(received) < len(LINE) * 1024 * mib:
            received.extend(os.read(editor.r, 1 << 20))
        _until(lambda: _judged_so_far(judge.got, A2C) == len(received), "the judge got the flood")
        assert not relay.agent_out_closed.is_set()  # before the session's end
        editor.close_stdin()
        assert relay.wait_exit(30) == 0
    assert _sent(judge.frames(), A2C) == bytes(received)


def test_pipes_are_widened_never_narrowed_and_other_descriptors_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = 256 << 10
    monkeypatch.setattr(feed, "PIPE_SIZE", size)
    r, w = os.pipe()  # 64 KiB
    wide_r, wide_w = os.pipe()
    fcntl.fcntl(wide_w, _F_SETPIPE_SZ, 4 * size)
    with open(tmp_path / "file", "wb") as fh:
        for fd in (w, wide_w, fh.fileno()):
            feed.widen(fd)
    assert fcntl.fcntl(r, _F_GETPIPE_SZ) == size  # what the editor reads takes chunks whole
    assert fcntl.fcntl(wide_w, _F_GETPIPE_SZ) == 4 * size
    for fd in (r, w, wide_r, wide_w):
        os.close(fd)
