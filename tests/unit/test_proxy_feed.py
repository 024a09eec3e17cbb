"""The proxy's hand-off to its judge (``feed.JudgeFeed``): the wire never waits for the judge.

A judge that reads nothing stands for one that fell behind: every ``put`` returns at once,
once ``cap`` bytes wait the judge is cut off, and what it does get is whole frames, in order:
a prefix of the chunks, then the end of the session (not the ends of the directions: the last
chunk it got may end inside a line, which must not be judged as a whole line). Frames go in
batches (held until due or large), and the judge's reader (``judge.FrameReader``) cuts
whatever one read brings back into the frames.
"""

from __future__ import annotations

import itertools
import os
import threading

from acp_model.proxy.feed import A2C, BATCH_BYTES, C2A, END, HEADER, SETUP, JudgeFeed
from acp_model.proxy.judge import FrameReader
from tests.proxy import frames

CHUNK = b"x" * 60_000
CAP = 256 * 1024


def test_a_judge_that_falls_behind_is_cut_off_and_never_blocks_the_wire() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, CAP)
    for n in range(100):  # 6 MB: far past the pipe and the cap; a blocking put hangs here
        feed.put(A2C, float(n), CHUNK)
        assert feed.waiting <= CAP + HEADER.size + len(CHUNK)
    assert feed.overflowed
    feed.put(C2A, 100.0, b"x")  # cut off: not sent
    feed.put(A2C, 101.0, b"")  # nor the ends of the directions
    feed.put(C2A, 102.0, b"")
    feed.put(END, 103.0, b"{}")  # the end of the session is
    got = bytearray()

    def judge() -> None:  # the judge catches up at last
        while data := os.read(r, 1 << 16):
            got.extend(data)

    reader = threading.Thread(target=judge)
    reader.start()
    assert feed.close(timeout=60)
    reader.join(60)
    os.close(r)
    judged = frames(bytes(got))
    chunks = [f for f in judged if f[2] == CHUNK]
    assert 0 < len(chunks) < 100
    assert [t for _, t, _ in chunks] == [float(n) for n in range(len(chunks))]  # a prefix
    assert judged[len(chunks):] == [(END, 103.0, b"{}")]


def test_a_judge_that_keeps_up_gets_every_chunk_in_order() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, CAP)
    got = bytearray()

    def judge() -> None:
        while data := os.read(r, 1 << 16):
            got.extend(data)

    reader = threading.Thread(target=judge)
    reader.start()
    sent = [(C2A if n % 3 else A2C, float(n), os.urandom(n * 37 % 5000)) for n in range(300)]
    for kind, t, data in sent:
        feed.put(kind, t, data)
    feed.put(END, 300.0, b"{}")
    assert feed.close(timeout=60)
    reader.join(60)
    os.close(r)
    assert not feed.overflowed
    assert frames(bytes(got)) == [*sent, (END, 300.0, b"{}")]


def test_a_judge_that_exits_leaves_the_wire_alone() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, CAP)
    os.close(r)  # the judge process is gone
    for n in range(50):
        feed.put(A2C, float(n), CHUNK)
    assert feed.lost
    feed.close(timeout=5)


def test_a_judge_that_never_reads_is_given_up_at_the_end() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, CAP)
    for n in range(40):  # more than the pipe holds: a backlog waits
        feed.put(A2C, float(n), CHUNK)
    assert feed.waiting
    assert feed.close(timeout=0.3) is False  # it did not take everything in time
    assert feed.lost and not feed.queue
    feed.put(A2C, 41.0, CHUNK)  # after the end: nothing, and no error
    os.close(r)


def _pipe_holds(r: int) -> bytes:
    """What the pipe holds now (its reader never waits)."""
    os.set_blocking(r, False)
    try:
        return os.read(r, 1 << 20)
    except BlockingIOError:
        return b""


def test_small_frames_wait_for_their_batch_and_go_together_when_it_is_due() -> None:
    r, w = os.pipe()
    held = JudgeFeed(w, CAP, delay=3600.0)
    sent = [(C2A if n % 2 else A2C, float(n), b'{"n":%d}\n' % n) for n in range(20)]
    for frame in sent:
        held.put(*frame)
    assert _pipe_holds(r) == b""  # not due yet: nothing written, the loop may sleep
    assert held.tick() > 0 and _pipe_holds(r) == b""
    held.delay, held.due = 0.0, 0.0  # the batch is due now
    held.tick()
    assert frames(_pipe_holds(r)) == sent  # one write took all of them, in order
    assert not held.queue and held.waiting == 0
    held.close(1.0)
    os.close(r)


def test_a_full_batch_and_a_control_frame_go_at_once() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, CAP, delay=3600.0)
    feed.put(SETUP, 0.0, b"settings")
    assert frames(_pipe_holds(r)) == [(SETUP, 0.0, b"settings")]
    big = b"y" * (BATCH_BYTES // 4)
    for n in range(3):
        feed.put(A2C, float(n), big)
    assert _pipe_holds(r) == b""
    feed.put(A2C, 3.0, big)  # the batch reaches BATCH_BYTES
    assert frames(_pipe_holds(r)) == [(A2C, float(n), big) for n in range(4)]
    feed.close(1.0)
    os.close(r)


def test_the_judge_reads_frames_whatever_the_reads_cut_and_waits_only_when_all_handed_out(
) -> None:
    r, w = os.pipe()
    sent = [(C2A, float(n), os.urandom(n * 131 % 3000)) for n in range(60)]
    wire = b"".join(HEADER.pack(k, t, len(d)) + d for k, t, d in sent)
    handed_out: list[bool] = []
    reader = FrameReader(r)
    reader.idle = lambda: handed_out.append(not reader.ready)

    def write() -> None:  # frames split anywhere, headers too
        at = 0
        for step in (1, 5, 17, 700, 4096, 10, 30_000, len(wire)):
            os.write(w, wire[at:at + step])
            at += step
        os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    got = []
    while (frame := reader.next()) is not None:
        got.append(frame)
    writer.join(30)
    os.close(r)
    assert got == sent
    assert handed_out and all(handed_out)  # idle (the trace's flush) only before a read


def test_the_loop_is_told_when_the_judge_s_pipe_fills_and_when_it_drains_or_breaks() -> None:
    r, w = os.pipe()
    feed = JudgeFeed(w, 64 << 20)
    told: list[bool] = []
    feed.watch = told.append  # the relay's loop watches the pipe for room while told True
    for n in range(40):  # 2.4 MB: past what the pipe holds
        feed.put(A2C, float(n), CHUNK)
    assert feed.blocked and told == [True]  # once, when it filled, not once per chunk
    got = bytearray(_pipe_holds(r))
    while feed.queue:  # the judge reads, the loop writes what waits each time there is room
        feed.flush()
        got.extend(_pipe_holds(r))
    assert told[-1] is False and not feed.blocked
    assert all(a is not b for a, b in itertools.pairwise(told))  # each change, once
    assert [data for _, _, data in frames(bytes(got))] == [CHUNK] * 40
    for n in range(40):
        feed.put(A2C, float(n), CHUNK)
    assert told[-1] is True
    os.close(r)  # the judge exits while the pipe is full: nothing more to watch
    feed.flush()
    assert feed.lost and told[-1] is False
    feed.close(0.0)
