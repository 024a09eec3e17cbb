"""model/frozen.py: a frozen dataclass with the quick ``__init__`` is the same object as one
with the generated ``__init__`` (signature, defaults, factories, frozenness, equality, hash)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from acp_model.model.frozen import quick_init
from acp_model.model.views import SessionView, ToolCall, ViewMessage


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: tuple[int, ...] = ()
    c: list[int] = dataclasses.field(default_factory=list, hash=False, compare=False)


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class Quick:
    a: int
    b: tuple[int, ...] = ()
    c: list[int] = dataclasses.field(default_factory=list, hash=False, compare=False)


def test_quick_init_builds_what_the_generated_init_builds() -> None:
    assert str(inspect.signature(Quick)).replace("Quick", "Plain") == \
        str(inspect.signature(Plain)).replace("Plain", "Quick")
    for args, kwargs in [((1,), {}), ((1, (2,)), {}), ((), {"a": 3, "c": [4]})]:
        quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
        assert hash(quick) == hash(Quick(*args, **kwargs))
    assert Quick(1) == Quick(1) and Quick(1) != Quick(2)
    assert Quick(1).c is not Quick(1).c  # a fresh default from the factory each time
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]  # a field without a default is required


def test_quick_init_keeps_the_class_frozen() -> None:
    quick = Quick(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.a = 2  # type: ignore[misc]


def test_quick_init_refuses_what_it_cannot_build() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    for cls in (Mutable, Unslotted, PostInit, Derived):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)


def test_the_views_records_take_the_quick_init() -> None:
    view = SessionView()
    assert view.state is None and len(view.messages) == 0
    assert SessionView() == view and hash(SessionView()) == hash(view)
    assert ToolCall(title="t").kind == "other" and ViewMessage("agent").content == ()
    for cls in (SessionView, ToolCall, ViewMessage):
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
        assert "set0" in cls.__init__.__globals__  # the slot setters, not object.__setattr__
