"""Units a maintainer can hold in mind: no class over 300 lines or 30 methods (counted with the
mixin classes of the package it inherits from, since a class cut into mixin files is still one
unit), no function over 60 lines. The figures are read off the code with ``ast``.

The units that were larger when the gate came in are listed in ``tests/data/size-baseline.json``
with their size then: a listed unit may shrink but not grow, a new one may not join the list,
and one that fits again must leave it (the list only gets shorter). Ruff's ``C901`` (complexity
12) and ``PLR0915`` hold the same line for complexity and statement count (``pyproject.toml``).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import acp_model
from acp_model.spec.revisions import REVISIONS

PACKAGE = Path(acp_model.__file__).parent
BASELINE = Path(__file__).resolve().parents[1] / "data" / "size-baseline.json"
MAX_CLASS_LINES, MAX_METHODS, MAX_FUNCTION_LINES = 300, 30, 60
# tables of data, one row per line: their length is the catalogue's, not the logic's
DATA_TABLES = {"spec/rules.py"}


def _units() -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """(class -> (lines, methods), with the package's own base classes folded in;
    function -> lines), keyed ``module:Name`` (functions ``module:Class.name`` or
    ``module:name``). Classes of the same name in two modules are two units; a base class is
    found in its own module or through the module's ``from acp_model... import``."""
    own: dict[str, tuple[int, int, list[str]]] = {}
    functions: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in DATA_TABLES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.asname or alias.name: f"{_module_path(node.module)}:{alias.name}"
                    for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("acp_model.") for alias in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body
                           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                bases = [imported.get(b.id, f"{module}:{b.id}") for b in node.bases
                         if isinstance(b, ast.Name)]
                own[f"{module}:{node.name}"] = (node.end_lineno - node.lineno + 1, len(methods),
                                                bases)
                for m in methods:
                    functions[f"{module}:{node.name}.{m.name}"] = m.end_lineno - m.lineno + 1
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[f"{module}:{node.name}"] = node.end_lineno - node.lineno + 1

    def ancestors(key: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """The package's classes ``key`` inherits from, each once (a base two of its bases
        share is one unit, not two)."""
        out: set[str] = set()
        for base in own[key][2]:
            if base in own and base not in seen:
                out |= {base} | ancestors(base, seen | {key})
        return out

    def whole(key: str) -> tuple[int, int]:
        units = [key, *ancestors(key) - {key}]
        return sum(own[k][0] for k in units), sum(own[k][1] for k in units)

    return {key: whole(key) for key in own}, functions


def _module_path(dotted: str) -> str:
    """``acp_model.fuzzing.stop`` -> ``fuzzing/stop.py`` (or a package's ``__init__.py``)."""
    rel = Path(*dotted.split(".")[1:])
    return (rel / "__init__.py").as_posix() if (PACKAGE / rel).is_dir() \
        else rel.with_suffix(".py").as_posix()


def _offenders() -> tuple[dict[str, list[int]], dict[str, int]]:
    classes, functions = _units()
    assert len(classes) > 100 and len(functions) > 500, "the package was read"
    big = {k: list(v) for k, v in classes.items()
           if v[0] > MAX_CLASS_LINES or v[1] > MAX_METHODS}
    long = {k: n for k, n in functions.items() if n > MAX_FUNCTION_LINES}
    return big, long


def test_no_class_or_function_grows_past_the_gate() -> None:
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    big, long = _offenders()
    grown = {k: (v, baseline["classes"].get(k)) for k, v in big.items()
             if k not in baseline["classes"]
             or any(now > then for now, then in zip(v, baseline["classes"][k], strict=True))}
    assert not grown, ("classes over 300 lines or 30 methods (now, listed): "
                       f"{grown}: split them by the state each part owns")
    longer = {k: (n, baseline["functions"].get(k)) for k, n in long.items()
              if n > baseline["functions"].get(k, MAX_FUNCTION_LINES)}
    assert not longer, f"functions over 60 lines (now, listed): {longer}"


def test_the_baseline_only_gets_shorter() -> None:
    """A listed unit that fits the gate again, or no longer exists, leaves the list."""
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    big, long = _offenders()
    stale = sorted(set(baseline["classes"]) - set(big)) + \
        sorted(set(baseline["functions"]) - set(long))
    assert not stale, f"take these off tests/data/size-baseline.json: {stale}"


def test_the_gate_reads_each_class_and_the_bases_it_imports() -> None:
    """Two classes of one name in two modules are two units, and a base class imported from
    another module of the package is counted with the class that inherits it."""
    classes, _ = _units()
    assert {"model/work.py:Work", "agents/reference/work.py:Work"} <= classes.keys()
    base = classes["llm/wire.py:OpenAIEndpoints"]
    whole = classes["llm/apis/openai_chat.py:OpenAIChat"]
    assert whole[0] > base[0] and whole[1] > base[1], (whole, base)


# Where telling v1 from v2 is the module's job: the translators, the initialize exchange's
# shape, and the client profiles (each editor's capabilities per protocol, as data).
# Everywhere else in model/, oracle/ and fuzzing/ a revision's difference is data (the
# catalogue's revisions, a check's SPEC levels, a reading the revision decides) or a fact one
# of these states (Dialect.prompts_are_the_conversation, Shape.gates_boolean_options,
# Shape.login_method ...).
_DIALECTS = {"acp_model/oracle/dialects.py", "acp_model/oracle/turns_v1.py",
             "acp_model/model/wire_shapes.py", "acp_model/fuzzing/editors.py"}
_REVISION_NAMES = frozenset({*REVISIONS, "v2"})
_REVISION_CONSTANTS = frozenset({"SEED", "SDK_2_4_0", "V1", "V2", "V1Shape"})
_FLAGS = frozenset({"is_v1", "is_v2", "v1", "v2"})  # a revision flag by name


def _named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_protocol(node: ast.AST) -> bool:
    """A protocol number or a revision: ``protocol``, ``readings["SPEC"]``, ``revision``."""
    if isinstance(node, ast.Subscript):
        return getattr(node.slice, "value", None) in ("SPEC", "protocolVersion")
    return _named(node) in ("protocol", "protocolVersion", "revision", "rev")


def _names_a_revision(node: ast.AST) -> bool:
    """A revision's name as a constant (``"v1"``) or a module's (``revisions.V1``,
    ``dialects.V1``)."""
    if isinstance(node, ast.Constant):
        return node.value in _REVISION_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(map(_names_a_revision, node.elts))
    return _named(node) in _REVISION_CONSTANTS


def _asks_for_a_revision(node: ast.AST) -> bool:
    """``chose("SPEC", ...)``, ``isinstance(x, V1)`` or a revision flag by name."""
    if isinstance(node, ast.Call):
        name, args = _named(node.func), node.args
        return (name == "chose" and bool(args) and getattr(args[0], "value", None) == "SPEC") \
            or (name == "isinstance" and len(args) == 2 and _names_a_revision(args[1]))
    if isinstance(node, ast.arg):
        return node.arg in _FLAGS
    return isinstance(node, (ast.Name, ast.Attribute)) and _named(node) in _FLAGS


def _protocol_branches(tree: ast.AST) -> list[int]:
    """Lines that tell revisions apart: a comparison of a protocol number or revision with a
    constant, of anything with a revision's name, ``isinstance`` against a translator, a
    revision flag by name, or asking for reading SPEC."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(_names_a_revision, sides)) or (
                    any(map(_is_protocol, sides))
                    and any(isinstance(s, ast.Constant) for s in sides)):
                lines.append(node.lineno)
        elif _asks_for_a_revision(node) or (isinstance(node, ast.Match)
                                            and _matches_a_revision(node)):
            lines.append(node.lineno)
    return sorted(set(lines))


def _matches_a_revision(node: ast.Match) -> bool:
    """``match`` on a protocol number or revision, or a case naming a revision's name."""
    values = [p.value for case in node.cases for p in ast.walk(case.pattern)
              if isinstance(p, ast.MatchValue)]
    return (_is_protocol(node.subject) and bool(values)) or any(map(_names_a_revision, values))


def test_no_protocol_branch_outside_the_dialects() -> None:
    """The model, the oracle and the fuzzer ask the revision's wire shape
    (model/wire_shapes.py) or its translator (oracle/dialects.py) what v1 does differently;
    they compare no protocol number or revision name and read no SPEC value themselves
    (issue 51 step 3)."""
    root = Path(__file__).resolve().parents[2]
    found = {}
    for path in sorted([*(root / "acp_model/model").rglob("*.py"),
                        *(root / "acp_model/oracle").rglob("*.py"),
                        *(root / "acp_model/fuzzing").rglob("*.py")]):
        where = str(path.relative_to(root))
        lines = _protocol_branches(ast.parse(path.read_text(encoding="utf-8")))
        if lines and where not in _DIALECTS:
            found[where] = lines
    assert not found, found


@pytest.mark.parametrize("source", [
    "if self.protocol == 1: pass", "x = protocol != 2", "ok = readings['SPEC'] == 'v1'",
    "ok = rev in ('seed', 'sdk-2.4.0')", "ok = self.rev == revisions.V1",
    "ok = readings.chose('SPEC', 'v1')", "ok = isinstance(self.dialect, dialects.V1)",
    "ok = type(d) is V1", "if self.is_v1: pass", "def f(v1: bool): pass",
    "ok = msg['protocolVersion'] == 1", "v = revisions.get(c.monitor.rev).protocol == 1",
    "match self.protocol:\n case 1: pass", "match d.name:\n case 'v1': pass"])
def test_the_scan_finds_each_spelling_of_a_protocol_branch(source: str) -> None:
    assert _protocol_branches(ast.parse(source)) == [1], source


@pytest.mark.parametrize("source", [
    "ok = version == self.protocol", "levels = {'v1': 'off'}", "ok = meta.reading != 'SPEC'",
    "rule.applies(readings['SPEC'])", "ok = self.dialect.prompts_are_the_conversation"])
def test_the_scan_lets_revision_data_be(source: str) -> None:
    assert _protocol_branches(ast.parse(source)) == [], source


# The monitor's parts: the oracle's business. The fuzzer asks OracleQueries (fuzzing/queries.py),
# which the oracle answers (oracle/monitor_queries.py; tests/unit/test_oracle_queries.py).
_MONITOR_PARTS = frozenset({"machines", "rpc", "liveness", "views", "store", "router",
                            "reopens", "conversations", "shapes"})


def _monitor_part_chains(tree: ast.AST) -> list[int]:
    """Lines reaching into a monitor's part: ``x.monitor.machines``, ``monitor.rpc`` ..."""
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr in _MONITOR_PARTS
                   and _named(node.value) in ("monitor", "_monitor")})


def test_the_fuzzer_asks_the_oracle_through_its_queries() -> None:
    """Outside the oracle nothing reaches a monitor's parts (its machines, open requests,
    liveness judge, views): the fuzzer depends on the answers to its queries, not on how the
    oracle holds them (issue 51 step 4)."""
    root = Path(__file__).resolve().parents[2]
    found = {}
    for path in sorted((root / "acp_model").rglob("*.py")):
        where = str(path.relative_to(root))
        if where.startswith("acp_model/oracle/"):
            continue
        lines = _monitor_part_chains(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[where] = lines
    assert not found, found


@pytest.mark.parametrize("source", ["x = client.monitor.machines.busy(s)",
                                    "x = self.monitor.rpc", "x = monitor.liveness.owed()"])
def test_the_chain_scan_finds_a_reach_into_the_monitor(source: str) -> None:
    assert _monitor_part_chains(ast.parse(source)) == [1], source


# The client's actions and parts talk JSON-RPC through ``client.calls`` (fuzzing/calls.py),
# never through the process it runs on: its pipes, its kill ladder and its transcript's cap
# are the client's own business (issue 51 step 4).
_CALLERS = ("actions.py", "answers.py", "elicitations.py", "sessions.py", "drain.py",
            "stalls.py", "ops.py")


def _process_reaches(tree: ast.AST) -> list[int]:
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Attribute) and node.attr == "proc"})


def test_the_calls_are_held_not_inherited() -> None:
    """``RpcCalls`` is a collaborator the transport holds (``proc.calls``), not a base class
    that reaches the transport's fields as its own (issue 51 step 4)."""
    heirs = [f"{path.relative_to(PACKAGE)}:{node.name}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef)
             and any(ast.unparse(base).split(".")[-1] == "RpcCalls" for base in node.bases)]
    assert not heirs, heirs


def test_actions_and_client_parts_talk_through_the_calls_not_the_process() -> None:
    fuzzing = Path(__file__).resolve().parents[2] / "acp_model" / "fuzzing"
    found = {name: lines for name in _CALLERS
             if (lines := _process_reaches(ast.parse((fuzzing / name).read_text("utf-8"))))}
    assert not found, found
    assert _process_reaches(ast.parse("client.proc.calls.request('x')")) == [1]
