"""The zoo campaign as pytest tests, one per case, so pytest-xdist spreads it over cores.

    pytest fuzz/test_zoo.py                          # the quick plan
    ACP_ZOO=full pytest -n auto fuzz/test_zoo.py     # every mutant, 3 timings, 3 seeds

Narrow it with ``ACP_ZOO_SEEDS=1,2``, ``ACP_ZOO_TIMINGS=slow``, ``ACP_ZOO_ONLY=reference,...``
(variant names) or pytest's own ``-k``; ``ACP_ZOO_OUT=DIR`` keeps the report and counterexample
files of every case that found anything.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _load_campaign() -> ModuleType:
    """``fuzz/`` is no package (the name is taken on PyPI): load the campaign by its path."""
    name = "acp_zoo_campaign"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while it loads
        spec.loader.exec_module(module)
    return sys.modules[name]


zoo = _load_campaign()


def _csv(var: str) -> list[str] | None:
    value = os.environ.get(var, "").strip()
    return [v.strip() for v in value.split(",") if v.strip()] or None


seeds = _csv("ACP_ZOO_SEEDS")
CASES = zoo.plan(os.environ.get("ACP_ZOO", "quick"),
                 seeds=[int(s) for s in seeds] if seeds else None,
                 timings=_csv("ACP_ZOO_TIMINGS"), only=_csv("ACP_ZOO_ONLY"))
HAS_TIMEOUT = importlib.util.find_spec("pytest_timeout") is not None


def _marks(case: Any) -> list[pytest.MarkDecorator]:
    # The repository's pytest-timeout default (600 s) is too short for a long design run.
    return [pytest.mark.timeout(case.time_budget * 2 + 300)] if HAS_TIMEOUT else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_zoo_case(case: Any) -> None:
    outcome = zoo.run_case(case, os.environ.get("ACP_ZOO_OUT"))
    assert outcome.ok, outcome.explain()
