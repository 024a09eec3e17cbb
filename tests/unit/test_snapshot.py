"""Clones and snapshots are derived from the dataclass fields: every field is covered."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

import pytest

from acp_model.model import snapshot
from acp_model.model.context import Context
from acp_model.model.events import Payload
from acp_model.model.records import CancelRec, PermRec, PromptRec, ToolRec
from acp_model.model.session import SessionModel
from acp_model.model.vocab import Answer, CancelStatus, PermState, PromptStatus
from acp_model.spec.readings import DEFAULT


def _busy_model() -> SessionModel:
    m = SessionModel("s1", Context(DEFAULT.parse(["A-04=idle-cancelled"])))
    m.state = "running"
    m.queue.prompts.append(PromptRec(3, 3, PromptStatus.ACCEPTED))
    m.cancel_book.cancels.append(CancelRec(5, CancelStatus.WORK))
    m.perm_book.perms["p"] = PermRec("p", 6, "t1", MappingProxyType({"a": "allow_once"}),
                                     PermState.ANSWERED, False, Answer.REJECT, 7, True)
    m.perm_book.tools["t1"] = ToolRec("p")
    m.work.tool_calls.add("t1")
    m.work.cancelled_tools.add("t0")
    m.queue.early_user_messages = 1
    return m


def _leaves(m: SessionModel) -> list[tuple[Any, dataclasses.Field[Any]]]:
    """(holder, field) of every copied field: the model's own, and those of its parts (the
    books, nested dataclasses), in their place."""
    out: list[tuple[Any, dataclasses.Field[Any]]] = []
    for f in dataclasses.fields(m):
        if f.name in ("sid", "ctx"):
            continue
        value = getattr(m, f.name)
        if dataclasses.is_dataclass(value):
            out += [(value, pf) for pf in dataclasses.fields(value)]
        else:
            out.append((m, f))
    return out


def _holder(m: SessionModel, name: str) -> Any:
    """The object (the model or one of its parts) whose field is called ``name`` (field names
    are unique across the parts)."""
    holders = [h for h, f in _leaves(m) if f.name == name]
    assert len(holders) == 1, name
    return holders[0]


_LIVE: dict[type, dict[str, Any]] = {
    PromptRec: {"status": PromptStatus.PENDING},
    PermRec: {"state": PermState.OPEN, "unreported_block": False, "owed_cancel": False},
    # sent before the open prompt (#3) and read together with it (joint, up to it)
    CancelRec: {"prior": True, "status": CancelStatus.QUIET, "idx": 1, "joint": True,
                "joint_upto": 3},
}
# fields live elsewhere than there: (record class, field) -> the model's state, record values
_LIVE_AT: dict[tuple[type, str], tuple[str, dict[str, Any]]] = {
    # no prompt sent after the cancel is accepted (#3 is: later_prompt_may_own holds)
    (CancelRec, "outrun"): ("idle", {"idx": 4}),
    # silent_block reads it only while running
    (PermRec, "overlapped"): ("running", {}),
}


def _changes(value: Any) -> list[Any]:
    """Values different from ``value`` of the same kind."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 100]
    if isinstance(value, PromptStatus | CancelStatus | PermState):
        return [v for v in type(value) if v != value][:1]
    if isinstance(value, str) or value is None:
        return ["zz-other"]
    return []


def _record_fields() -> list[tuple[str, Any, str]]:
    """(model field, key or index, record field) of every record field in the busy model."""
    m = _busy_model()
    out = []
    for holder, f in _leaves(m):
        value = getattr(holder, f.name)
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) \
            if isinstance(value, list) else []
        for key, rec in items:
            for rf in dataclasses.fields(rec):
                out.append((f.name, key, rf.name))
    return out


def test_a_clone_shares_nothing_mutable() -> None:
    m = _busy_model()
    c = snapshot.clone(m, Context())
    assert snapshot.snapshot(c) != () and c.ctx is not m.ctx
    assert c.facts.m is c and m.facts.m is m, "a clone reads itself, not the original"
    for part in ("queue", "cancel_book", "perm_book", "work"):
        assert getattr(c, part) is not getattr(m, part), f"{part} is shared"
    for (holder, f), (copy, _) in zip(_leaves(m), _leaves(c), strict=True):
        a, b = getattr(holder, f.name), getattr(copy, f.name)
        assert a == b, f.name
        if isinstance(a, list | dict | set):
            assert a is not b, f"{f.name} is shared"
            for x, y in zip(a.values() if isinstance(a, dict) else a,
                            b.values() if isinstance(b, dict) else b, strict=False):
                if dataclasses.is_dataclass(x):
                    assert x is not y, f"a record of {f.name} is shared"


@pytest.mark.parametrize(("field", "key", "name"), _record_fields())
def test_every_record_field_is_in_the_snapshot_or_excluded_with_a_reason(
        field: str, key: Any, name: str) -> None:
    m = _busy_model()
    rec = getattr(_holder(m, field), field)[key]
    meta = next(f.metadata for f in dataclasses.fields(rec) if f.name == name)
    if meta.get("canon"):
        # canonicalised values matter only in some conditions (see their canon method): quiet,
        # the prompt unanswered, the permission request waiting with nothing else noted
        state, at = _LIVE_AT.get((type(rec), name), ("idle", {}))
        m.state = state
        for attr, value in {**_LIVE.get(type(rec), {}), **at}.items():
            if attr != name:
                setattr(rec, attr, value)
    base = snapshot.snapshot(m)
    excluded = snapshot.EXCLUDED.get((type(rec).__name__, name))
    if excluded is not None:
        assert len(excluded) > 20, "an exclusion says why"
        return
    changed = False
    # an index only matters by rank: move it to the other end of the order (a canonicalised
    # one may be dead at one end: joint_upto below the prompt it could be read with)
    first = getattr(rec, name) == min(snapshot.indices(m))
    ends = [0, 1000] if meta.get("canon") else [1000] if first else [0]
    for value in ends if meta.get("index") else _changes(getattr(rec, name)):
        setattr(rec, name, value)
        changed = changed or snapshot.snapshot(m) != base
    assert changed, f"{type(rec).__name__}.{name} changes nothing in the snapshot"


@pytest.mark.parametrize("name", [f.name for _, f in _leaves(_busy_model())
                                  if f.metadata.get("snapshot") is not False])
def test_every_model_field_is_in_the_snapshot(name: str) -> None:
    m = _busy_model()
    holder = _holder(m, name)
    if dataclasses.fields(holder) and next(f for f in dataclasses.fields(holder)
                                           if f.name == name).metadata.get("canon"):
        m.state = "idle"  # canonicalised values matter only in some conditions: quiet
        if name == "rejected":
            m.queue.prompts.clear()  # under A-28=may read only with no prompt open
    base = snapshot.snapshot(m)
    value = getattr(holder, name)
    if isinstance(value, set):
        value.add("new")
    elif isinstance(value, list):
        value.append(dataclasses.replace(value[0], idx=99))
    elif isinstance(value, dict):
        value["new"] = dataclasses.replace(next(iter(value.values())))
    else:
        setattr(holder, name, _changes(value)[0])
    assert snapshot.snapshot(m) != base, name


def test_model_fields_left_out_say_why() -> None:
    m = _busy_model()
    out = [(h, f) for h, f in _leaves(m) if f.metadata.get("snapshot") is False]
    assert out and all(len(f.metadata["why"]) > 20 for _, f in out)
    before = snapshot.snapshot(m)
    for holder, f in out:
        setattr(holder, f.name, [1] if isinstance(getattr(holder, f.name), list) else 5)
    assert snapshot.snapshot(m) == before


def test_a_shared_copy_reads_its_own_context() -> None:
    m = _busy_model()
    assert m.facts.m is m  # a view made on the original
    shared = snapshot.share(m, Context(DEFAULT))
    assert shared.queue is m.queue and shared.facts.m is shared
    assert shared.facts.replies_owed() != m.facts.replies_owed()  # A-04 read from its context


def test_a_new_field_is_picked_up_without_code_changes() -> None:
    @dataclasses.dataclass
    class Extended(SessionModel):
        extra: int = 0

    m = Extended("s1")
    before = snapshot.snapshot(m)
    m.extra = 3
    assert snapshot.snapshot(m) != before
    assert snapshot.clone(m).extra == 3


def test_read_indices_collapse_and_unread_ones_rank() -> None:
    m = _busy_model()
    m.note_cancel(Payload(40))
    first = snapshot.snapshot(m)
    m.ctx.frontier = 100
    assert snapshot.snapshot(m) != first  # read now: ranks become -1
    # the answer at #7, read now, is dead (DeadFields.canon_answer_idx): it ranks nothing
    assert snapshot.indices(m) == {3, 5, 40}
    assert snapshot.indices(m, canon=False) == {3, 5, 7, 40}
