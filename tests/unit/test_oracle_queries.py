"""The fuzzer asks its judge through one protocol (fuzzing/queries.py's ``OracleQueries``) that
the oracle answers (oracle/monitor_queries.py): every question is there, the answers are the
monitor's, and no fuzzer module touches a monitor for anything but feeding it the wire
(issue 51 step 4)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from acp_model.fuzzing import queries
from acp_model.fuzzing.queries import OracleQueries
from acp_model.oracle.monitor import Monitor
from acp_model.oracle.monitor_queries import MonitorQueries
from acp_model.trace.builder import TraceBuilder

FUZZING = Path(queries.__file__).parent
# what a fuzzer module may do to a monitor itself: the client feeds it the wire
FEEDS = {("client.py", "feed")}


def _members(cls: type) -> dict[str, object]:
    """A class's own public members: methods, properties and annotated attributes."""
    out: dict[str, object] = {name: value for name, value in vars(cls).items()
                              if not name.startswith("_")
                              and (inspect.isfunction(value) or isinstance(value, property))}
    out.update({name: None for name in inspect.get_annotations(cls)})
    return out


def test_the_oracle_answers_every_question_with_its_signature() -> None:
    asked = _members(OracleQueries)
    answered = _members(MonitorQueries)
    assert "shape" in vars(MonitorQueries(Monitor())), "the adapter sets the revision's shape"
    answered["shape"] = None
    assert asked.keys() == answered.keys(), asked.keys() ^ answered.keys()
    for name, question in asked.items():
        if inspect.isfunction(question):
            assert inspect.signature(question) == inspect.signature(answered[name]), name


def test_the_answers_are_the_monitors() -> None:
    """On a session with a prompt running and a permission request open, the adapter says
    what the monitor's parts hold."""
    t = TraceBuilder().handshake().new_session("s1").prompt("s1", 3).running("s1")
    t.rpc.request("a2c", "session/request_permission", {
        "sessionId": "s1", "toolCall": {"toolCallId": "t1"},
        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}, 7)
    monitor = Monitor()
    for record in t.records:
        monitor.feed(record)
    oracle: OracleQueries = MonitorQueries(monitor)
    assert oracle.judged() == len(t.records) == monitor.count
    assert oracle.busy("s1") and oracle.state("s1") == monitor.machines.state("s1")
    assert oracle.pending_prompts("s1") == [3]
    assert oracle.open_permissions("s1") == [7]
    assert oracle.requests_sent_at([7, 99]) == [len(t.records) - 1]
    assert not oracle.withdrawn(7)
    assert oracle.sessions_judged() == 1
    assert oracle.violations() == monitor.violations
    assert oracle.transition_counts() == monitor.machines.transition_counts()


def _over_monitors(node: ast.For | ast.comprehension) -> str | None:
    """The name a loop binds to each of ``...monitors`` (None: another loop)."""
    iterated = ast.unparse(node.iter).split("(")[0]
    return node.target.id if isinstance(node.target, ast.Name) \
        and iterated.endswith("monitors") else None


def _is_monitor(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in {"monitor", "_monitor"} | names
    if isinstance(node, ast.Attribute):
        return node.attr in ("monitor", "_monitor")
    if isinstance(node, ast.Subscript):  # result.monitors[0]
        return ast.unparse(node.value).endswith("monitors")
    return False


def _reaches(nodes: list[ast.AST], names: set[str]) -> set[tuple[int, str]]:
    return {(node.lineno, node.attr) for tree in nodes for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and _is_monitor(node.value, names)}


def monitor_reaches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, attribute) of each attribute reached on a monitor: one named so, an item of
    ``...monitors``, or a loop's or comprehension's name for one (within that loop)."""
    found = _reaches([tree], set())
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and (name := _over_monitors(node)):
            found |= _reaches(node.body, {name})
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            names = {name for gen in node.generators if (name := _over_monitors(gen))}
            if names:
                found |= _reaches([node], names)
    return sorted(found)


def test_the_fuzzer_touches_a_monitor_only_to_feed_it() -> None:
    found = {}
    for path in sorted(FUZZING.rglob("*.py")):
        reached = [(line, attr) for line, attr in monitor_reaches(ast.parse(path.read_text(
            encoding="utf-8"))) if (path.name, attr) not in FEEDS]
        if reached:
            found[path.name] = reached
    assert not found, f"ask OracleQueries instead: {found}"


@pytest.mark.parametrize("source", [
    "x = client.monitor.violations[n:]", "x = self._monitor.machines.busy(s)",
    "for m in result.monitors:\n    x = m.count",
    "x = [len(m.machines.sessions) for m in pool.monitors()]",
    "x = result.monitors[0].rev", "monitor.note(meta, 'x')"])
def test_the_scan_sees_a_reach_into_a_monitor(source: str) -> None:
    assert monitor_reaches(ast.parse(source)), source


@pytest.mark.parametrize("source", [
    "self.monitor.feed(record)", "self.oracle = MonitorQueries(self.monitor)",
    "for r in records:\n    x = r.count", "result.monitors = pool.monitors()",
    "ms = [MonitorQueries(m) for m in result.monitors]\nx = m.get('fixpoint')"])
def test_the_scan_lets_a_monitor_be_held_and_fed(source: str) -> None:
    assert all(attr == "feed" for _, attr in monitor_reaches(ast.parse(source))), source
