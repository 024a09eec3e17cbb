"""Each action family gets the narrow protocol of what it uses (fuzzing/ops.py), not the whole
client: an action that reaches a member its protocol lacks fails here (issue 51 step 4)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest

from acp_model.fuzzing import actions, ops
from acp_model.fuzzing.client import FuzzClient

ACTIONS_SOURCE = Path(actions.__file__)
WIDEST = 10  # members an action's context may have (the whole client has about 30)


def members(protocol: type) -> set[str]:
    """What a protocol of ops.py declares, its bases' included."""
    out: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, object) or cls.__module__ != ops.__name__:
            continue
        out |= set(inspect.get_annotations(cls))
        out |= {name for name, value in vars(cls).items() if not name.startswith("_")
                and (inspect.isfunction(value) or isinstance(value, property))}
    return out


def _reached(node: ast.AST, name: str) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == name}


def contexts() -> list[tuple[str, str, set[str]]]:
    """Each function of actions.py taking a ``client``: (where, its annotation, the members
    of ``client`` its body reaches)."""
    out = []
    tree = ast.parse(ACTIONS_SOURCE.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for arg in node.args.args:
            if arg.arg == "client" and arg.annotation is not None:
                out.append((f"actions.py:{node.lineno} {node.name}",
                            ast.unparse(arg.annotation), _reached(node, "client")))
    return out


def test_every_action_reaches_only_what_its_context_declares() -> None:
    found = contexts()
    assert len(found) > 20
    for where, annotation, reached in found:
        if annotation == "ClientOps":  # the base class: the caller hands the whole client
            assert where.endswith(" perform") and not reached, where
            continue
        protocol = getattr(ops, annotation)
        allowed = members(protocol)
        assert len(allowed) <= WIDEST, f"{annotation} has {len(allowed)} members"
        assert reached <= allowed, f"{where} reaches {sorted(reached - allowed)} beyond " \
            f"{annotation}"


@pytest.mark.parametrize("protocol", [ops.NewSessionOps, ops.PromptOps, ops.CancelOps,
                                      ops.WaitOps, ops.PermissionAnswerOps, ops.ElicitingOps,
                                      ops.ReopenOps, ops.ProbeOps])
def test_the_client_offers_every_context(protocol: Any) -> None:
    """The whole client protocol holds each context, and the fuzz client implements each
    member (an attribute set in its constructor, or a method or property)."""
    assert members(protocol) <= members(ops.ClientOps)
    init = inspect.getsource(FuzzClient.__init__)
    for name in members(protocol):
        assert hasattr(FuzzClient, name) or f"self.{name} =" in init \
            or f"self.{name}: " in init, f"FuzzClient lacks {name}"


def test_the_scan_sees_a_reach_beyond_the_context() -> None:
    source = "def perform(self, client: CancelOps) -> None:\n    client.answers.answer(1)\n"
    fn = ast.parse(source).body[0]
    assert _reached(fn, "client") == {"answers"}
    assert "answers" not in members(ops.CancelOps)
