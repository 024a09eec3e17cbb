"""Each action family gets the narrow protocol of what it uses (fuzzing/ops.py), not the whole
client, and so does each of the client's parts (its answers, held elicitations, stalls, drain,
process watch, session factory, a cancel's reach): an action or a part that reaches a member
its protocol lacks fails here (issue 51 step 4)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest

from acp_model.fuzzing import actions, client, drain, ops
from acp_model.fuzzing.client import FuzzClient

ACTIONS_SOURCE = Path(actions.__file__)
WIDEST = 10  # members an action's context may have (the whole client has about 30)
# the client's parts, and the most members one's context may have: the drain's (the end of an
# example: its sessions, answers, held elicitations, cancels, syncs and waits)
PARTS = ("answers.py", "elicitations.py", "stalls.py", "drain.py", "reach.py", "sessions.py",
         "client.py")
PART_WIDEST = 10
WHOLE = ("ClientOps", "FuzzClient")  # what no part is handed


def members(protocol: type) -> set[str]:
    """What a protocol of the fuzzer declares, its bases' included."""
    out: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, object) or not cls.__module__.startswith("acp_model.fuzzing."):
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


def _aliases(fn: ast.FunctionDef, sources: set[str]) -> set[str]:
    """The local names bound to one of ``sources`` (a context's field, ``self.look``, or its
    parameter's name): ``c = self.look``, ``c, w = self.look, self.waits``."""
    out = {s for s in sources if "." not in s}
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = zip(target.elts, node.value.elts, strict=False) \
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                else [(target, node.value)]
            out |= {t.id for t, v in pairs if isinstance(t, ast.Name)
                    and ast.unparse(v) in sources | out}
    return out


def _reached_by(fn: ast.FunctionDef, sources: set[str]) -> set[str]:
    """The members of a context ``fn`` reaches: on one of ``sources`` or a name for it."""
    names = _aliases(fn, sources)
    return {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
            and ((isinstance(n.value, ast.Name) and n.value.id in names)
                 or ast.unparse(n.value) in sources)}


def _fields(init: ast.FunctionDef) -> dict[str, str]:
    """A constructor's parameters kept whole: parameter -> ``self.field``."""
    return {node.value.id: ast.unparse(target) for node in ast.walk(init)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
            for target in node.targets if ast.unparse(target).startswith("self.")}


def _protocol(annotation: str) -> Any:
    """The fuzzer's protocol ``annotation`` names (None: not one of them)."""
    for module in (ops, drain, client):
        found = getattr(module, annotation, None)
        if isinstance(found, type) and getattr(found, "_is_protocol", False):
            return found
    return None


def contexts_of(tree: ast.Module, name: str) -> list[tuple[str, str, set[str]]]:
    """Each context a part of module ``name`` is built with (a class's constructor parameter,
    or a function's, typed by a protocol of the fuzzer) and what the part reaches through it:
    (where, its annotation, the members reached)."""
    out = []
    for node in tree.body:
        fns = [node] if isinstance(node, ast.FunctionDef) else [
            f for f in node.body if isinstance(f, ast.FunctionDef)] \
            if isinstance(node, ast.ClassDef) else []
        head = node if isinstance(node, ast.FunctionDef) else next(
            (f for f in fns if f.name == "__init__"), None)
        if head is None:
            continue
        fields = _fields(head)
        for arg in [*head.args.args, *head.args.kwonlyargs]:
            annotation = ast.unparse(arg.annotation) if arg.annotation else ""
            if annotation not in WHOLE and _protocol(annotation) is None:
                continue
            kept = {fields[arg.arg]} if arg.arg in fields else set()
            reached = set().union(*(_reached_by(f, kept | {arg.arg} if f is head else kept)
                                    for f in fns))
            out.append((f"{name}:{node.lineno} {node.name}({arg.arg})", annotation, reached))
    return out


def part_contexts() -> list[tuple[str, str, set[str]]]:
    """The contexts of every part of the client (``PARTS``)."""
    return [found for name in PARTS for found in contexts_of(
        ast.parse((ACTIONS_SOURCE.parent / name).read_text(encoding="utf-8")), name)]


def test_every_part_reaches_only_what_its_contexts_declare() -> None:
    """...and each context declares only what some part given it reaches."""
    found = part_contexts()
    assert {where.split(" ")[-1].split("(")[0] for where, _, _ in found} >= {
        "PermissionAnswers", "HeldElicitations", "Stalls", "Drain", "cancel_meets",
        "SessionFactory", "ProcessWatch"}
    used: dict[str, set[str]] = {}
    for where, annotation, reached in found:
        assert annotation not in WHOLE, f"{where} is handed the whole client"
        allowed = members(_protocol(annotation))
        assert len(allowed) <= PART_WIDEST, f"{annotation} has {len(allowed)} members"
        assert reached <= allowed, f"{where} reaches {sorted(reached - allowed)} beyond " \
            f"{annotation}"
        used.setdefault(annotation, set()).update(reached)
    for annotation, reached in used.items():
        unused = members(_protocol(annotation)) - reached
        assert not unused, f"{annotation} declares {sorted(unused)}, which no part uses"


def test_every_action_reaches_only_what_its_context_declares() -> None:
    """...and each context declares only what some action given it reaches."""
    found = contexts()
    assert len(found) > 20
    used: dict[str, set[str]] = {}
    for _, annotation, reached in found:
        used.setdefault(annotation, set()).update(reached)
    for annotation, reached in used.items():
        if annotation != "ClientOps":
            unused = members(getattr(ops, annotation)) - reached
            assert not unused, f"{annotation} declares {sorted(unused)}, which no action uses"
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


@pytest.mark.parametrize("protocol", [ops.LookOps, ops.MeetOps, ops.StallOps,
                                      ops.ReplyOps, ops.AnswerWaits, ops.HoldingOps, ops.CallOps,
                                      ops.Connection,
                                      drain.DrainWaits, drain.Ending, client.WatchOps])
def test_the_client_offers_every_part_its_context(protocol: Any) -> None:
    init = inspect.getsource(FuzzClient.__init__)
    for name in members(protocol):
        assert hasattr(FuzzClient, name) or f"self.{name} =" in init \
            or f"self.{name}: " in init, f"FuzzClient lacks {name}"


def test_the_scan_follows_the_client_into_a_part() -> None:
    source = ("class P:\n    def __init__(self, client: LookOps) -> None:\n"
              "        self.client = client\n    def f(self) -> None:\n"
              "        c, n = self.client, 0\n        c.calls.send(n)\n"
              "        self.client.reach.update()\n")
    fns = [f for f in ast.walk(ast.parse(source)) if isinstance(f, ast.FunctionDef)]
    assert set().union(*(_reached_by(f, {"self.client"}) for f in fns)) == {"calls", "reach"}


def test_the_scan_sees_a_reach_beyond_the_context() -> None:
    source = "def perform(self, client: CancelOps) -> None:\n    client.answers.answer(1)\n"
    fn = ast.parse(source).body[0]
    assert _reached(fn, "client") == {"answers"}
    assert "answers" not in members(ops.CancelOps)


def test_the_scan_tells_a_parts_contexts_apart() -> None:
    """A part built with several contexts reaches each under its own name: a member reached
    through the wrong one is seen beyond it."""
    source = ("class P:\n    def __init__(self, look: LookOps, waits: DrainWaits) -> None:\n"
              "        self.look = look\n        self.waits = waits\n"
              "    def f(self) -> None:\n        c, w = self.look, self.waits\n"
              "        w.sync()\n        c.busy(0)\n        self.waits.busy(1)\n")
    found = {where: (annotation, reached)
             for where, annotation, reached in contexts_of(ast.parse(source), "p.py")}
    assert found == {"p.py:1 P(look)": ("LookOps", {"busy"}),
                     "p.py:1 P(waits)": ("DrainWaits", {"sync", "busy"})}
    assert "busy" not in members(drain.DrainWaits)
