"""Frozen dataclasses built at half the cost (:func:`quick_init`).

The ``__init__`` a frozen dataclass gets sets each field through ``object.__setattr__`` (its own
``__setattr__`` refuses): about 0.25 us a field in CPython 3.11. The client's view is rebuilt
on every ``session/update`` of a checked trace (an eleven-field :class:`SessionView` and the
message or tool call it changed), so that cost was a measurable share of ``acp-model check``.
Setting a slot through its member descriptor is what ``object.__setattr__`` ends in, without
the lookup and checks before it: the same object, still frozen, hashable and compared by value.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


class _Factory:
    """The default of a field with a default factory (shown as dataclasses show it)."""

    def __repr__(self) -> str:
        return "<factory>"


FACTORY = _Factory()


def quick_init(cls: T) -> T:
    """Replace the generated ``__init__`` of a frozen, slotted dataclass (no ``__post_init__``,
    every field an argument that may be given by position) by one with the same signature
    (defaults and default factories included) that sets each slot through its descriptor."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    plain = all(f.init and not f.kw_only for f in dataclasses.fields(cls))
    if not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__") \
            or not plain:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen, slotted dataclass "
                        "without __post_init__ whose fields are all positional arguments")
    scope: dict[str, Any] = {"FACTORY": FACTORY}
    args, body = [], []
    for i, f in enumerate(dataclasses.fields(cls)):
        scope[f"set{i}"] = cls.__dict__[f.name].__set__
        if f.default is not dataclasses.MISSING:
            scope[f"default{i}"] = f.default
            args.append(f"{f.name}=default{i}")
            body.append(f"    set{i}(self, {f.name})")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"factory{i}"] = f.default_factory
            args.append(f"{f.name}=FACTORY")
            body.append(f"    set{i}(self, factory{i}() if {f.name} is FACTORY else {f.name})")
        else:
            args.append(f.name)
            body.append(f"    set{i}(self, {f.name})")
    source = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(source, scope)  # code built from the class's own field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]
    return cls
