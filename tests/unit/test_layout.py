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

import acp_model

PACKAGE = Path(acp_model.__file__).parent
BASELINE = Path(__file__).resolve().parents[1] / "data" / "size-baseline.json"
MAX_CLASS_LINES, MAX_METHODS, MAX_FUNCTION_LINES = 300, 30, 60
# tables of data, one row per line: their length is the catalogue's, not the logic's
DATA_TABLES = {"spec/rules.py"}


def _units() -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """(class -> (lines, methods), with the package's own base classes folded in;
    function -> lines), keyed ``module:Name`` (functions ``module:Class.name`` or
    ``module:name``)."""
    own: dict[str, tuple[int, int, list[str], str]] = {}
    functions: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in DATA_TABLES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = [n for n in node.body
                           if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                own[node.name] = (node.end_lineno - node.lineno + 1, len(methods), bases,
                                  module)
                for m in methods:
                    functions[f"{module}:{node.name}.{m.name}"] = m.end_lineno - m.lineno + 1
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions[f"{module}:{node.name}"] = node.end_lineno - node.lineno + 1

    def whole(name: str, seen: frozenset[str] = frozenset()) -> tuple[int, int]:
        lines, methods, bases, _ = own[name]
        for base in bases:
            if base in own and base not in seen:
                more = whole(base, seen | {name})
                lines, methods = lines + more[0], methods + more[1]
        return lines, methods

    classes = {f"{module}:{name}": whole(name) for name, (_, _, _, module) in own.items()}
    return classes, functions


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
