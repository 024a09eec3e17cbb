"""Which parts of the session model each transition's actions may write, read from their code.

The explorer copies a stored model for every edge it follows; most events change one or two of
its parts (the prompt queue, the cancel book, the permission book, the work). A successor
copies only the parts the event's actions may write and shares the others with the stored
original (copy on write, :func:`acp_model.model.snapshot.copier`), which is never mutated.

The sets are read from the actions' source, so a new action or a new part needs no list kept
by hand: an action written as a method of a part writes that part; a method of the model
writes every part it names as ``self.<part>`` and whatever the model's own methods it calls
write. Views (``session.View``) own no state, so calling one writes nothing. Whatever this
reading cannot follow (an attribute of the model it does not know, ``getattr``, a method of a
view used as an action) counts as writing every part. ``tests/unit/test_writes.py`` replays
the transitions of an exploration and checks that no part outside its set changed.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from functools import cache
from typing import Any

from acp_model.model import snapshot
from acp_model.model.engine import Table
from acp_model.model.session import View

_SHARED = frozenset({"ctx", "sid", "state"})  # copied or made per configuration anyway


def transition_writes(table: Table) -> dict[tuple[str, str], frozenset[str]]:
    """Per (state, event) of ``table``: the parts of its model its actions may write."""
    model = table.model
    return {key: frozenset().union(*(action_writes(model, a) for a in tr.actions))
            for key, tr in table.transitions.items()}


@cache
def action_writes(model: type, name: str) -> frozenset[str]:
    """The parts of ``model`` that its action ``name`` may write (see the module docstring)."""
    parts = frozenset(snapshot.parts(model))
    if inspect.getattr_static(model, name, None) is not None:
        return _method_writes(model, name, parts, frozenset())
    for part in getattr(model, "PARTS", ()):
        owner = snapshot.parts(model).get(part)
        if owner is not None and hasattr(owner, name):
            return frozenset({part})  # a part's method writes that part alone
    return parts  # a view's method, or not found: assume the worst


def _method_writes(model: type, name: str, parts: frozenset[str],
                   seen: frozenset[str]) -> frozenset[str]:
    func = inspect.getattr_static(model, name)
    if not inspect.isfunction(func):
        return parts
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "vars"):
            return parts
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            continue
        attr = node.attr
        if attr in parts:
            out.add(attr)
        elif attr in _SHARED or isinstance(_static(model, attr), View):
            continue
        elif inspect.isfunction(_static(model, attr)):
            if attr not in seen and attr != name:
                out |= _method_writes(model, attr, parts, seen | {name})
        else:
            return parts  # something this reading does not know
    return frozenset(out)


def _static(model: type, attr: str) -> Any:
    return inspect.getattr_static(model, attr, None)
