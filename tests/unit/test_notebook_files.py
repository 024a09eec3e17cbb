"""The notebooks in ``notebooks/`` are all listed and committed executed, top to bottom, without
an error output (running them: test_notebooks.py)."""

from __future__ import annotations

import nbformat
import pytest

from tests.helpers import NOTEBOOK_NAMES as NAMES
from tests.helpers import NOTEBOOKS


def test_the_notebooks_are_all_listed() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_executed(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "no code cells"
    unrun = [n for n, c in enumerate(code) if c.execution_count is None]
    assert not unrun, f"code cells {unrun} have no outputs: execute the notebook, then commit it"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "not executed top to bottom in one kernel"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"committed with an error output: {errors[0].get('ename')}"
