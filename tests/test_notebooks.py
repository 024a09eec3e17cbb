"""The notebooks in ``notebooks/`` execute without error, as committed (with their outputs).

Each notebook runs in a fresh ``python3`` kernel with ``notebooks/`` as its working directory
(what Jupyter and nbmake do). Execution happens in memory: the committed files are not rewritten,
and the notebooks themselves write only to temporary directories. Their own ``assert`` cells are
the checks (the reference agent passes, the mutant fails with CANCEL-07, ...); outputs are not
compared, since fuzzing timings differ from run to run.

When pytest is run with ``--nbmake`` over ``notebooks/`` as well, nbmake executes them and the
tests here skip, so nothing runs twice.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = ("01-model-tour.ipynb", "02-fuzzing-an-agent.ipynb", "03-spec-authors.ipynb")
CELL_TIMEOUT = 240  # seconds per cell: a hung agent or kernel fails instead of blocking

pytestmark = pytest.mark.slow


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


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, request: pytest.FixtureRequest) -> None:
    path = NOTEBOOKS / name
    if any(getattr(item, "path", None) == path for item in request.session.items):
        pytest.skip("executed by nbmake in this run")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    before = sorted(p.name for p in NOTEBOOKS.iterdir())
    start = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as exc:
        pytest.fail(f"{name} failed:\n{exc}", pytrace=False)
    seconds = time.monotonic() - start
    assert sorted(p.name for p in NOTEBOOKS.iterdir()) == before, \
        "the notebook left files in notebooks/"
    print(f"{name}: {seconds:.1f} s")
