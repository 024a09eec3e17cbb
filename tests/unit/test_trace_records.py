"""A trace record's shape (trace/format.py parse_record): the common record (a message and
its time) is read in fewer steps, by the same rules as every other."""

from __future__ import annotations

import pytest

from acp_model.trace.format import Record, TraceError, parse_record


@pytest.mark.parametrize("obj", [
    {"dir": "sideways", "msg": {}}, {"msg": {}}, {"dir": "c2a", "msg": {}, "t": True},
    {"dir": "c2a", "msg": {}, "t": "noon"}, {"dir": "c2a", "msg": {}, "t": [1]},
    {"dir": "c2a", "t": 1.0}, {"dir": "c2a", "msg": {}, "raw": "x"}, ["dir", "msg"]])
def test_a_record_refused_is_refused_whatever_its_keys(obj: object) -> None:
    with pytest.raises(TraceError):
        parse_record(obj)


def test_a_plain_record_reads_as_the_long_way_reads_it() -> None:
    msg = {"jsonrpc": "2.0", "method": "session/cancel", "params": {}}
    assert parse_record({"dir": "c2a", "msg": msg}) == Record("c2a", msg)
    assert parse_record({"dir": "a2c", "msg": msg, "t": 2}) == Record("a2c", msg, t=2)
    assert parse_record({"dir": "a2c", "msg": None, "t": 0.5}) == Record("a2c", None, t=0.5)
    # a record with more than these keys goes the long way
    assert parse_record({"dir": "a2c", "msg": msg, "n": 4, "probe": True}) == Record(
        "a2c", msg, n=4, probe=True)
