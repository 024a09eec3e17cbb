"""The notebooks in ``notebooks/`` execute without error (test_notebook_files.py: they are
committed executed, with their outputs).

Each notebook runs in a fresh ``python3`` kernel with ``notebooks/`` as its working directory
(what Jupyter and nbmake do). Execution happens in memory: the committed files are not rewritten,
and the notebooks themselves write only to temporary directories. Their own ``assert`` cells are
the checks (the reference agent passes, the mutant fails with CANCEL-07, ...); outputs are not
compared, since fuzzing timings differ from run to run.

A notebook with a cell tagged ``parameters`` (papermill's convention) runs with its inputs cut:
a cell setting ``SMALL = True`` is injected after it, as papermill would, so the test runs every
cell on a smaller graph than the committed outputs show.

When pytest is run with ``--nbmake`` over ``notebooks/`` as well, nbmake executes them and the
tests here skip, so nothing runs twice.
"""

from __future__ import annotations

import time

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.helpers import NOTEBOOK_NAMES as NAMES
from tests.helpers import NOTEBOOKS

CELL_TIMEOUT = 240  # seconds per cell: a hung agent or kernel fails instead of blocking

pytestmark = pytest.mark.slow


def _cut_inputs(nb: nbformat.NotebookNode) -> None:
    """Inject ``SMALL = True`` after the cell tagged ``parameters``, if there is one."""
    for n, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            injected = nbformat.v4.new_code_cell("SMALL = True")
            injected.metadata["tags"] = ["injected-parameters"]
            nb.cells.insert(n + 1, injected)
            return


def test_the_spec_authors_notebook_takes_its_inputs_as_parameters() -> None:
    """The cut is real: the notebook has the tagged cell, and every exploration uses it."""
    nb = nbformat.read(NOTEBOOKS / "03-spec-authors.ipynb", as_version=4)
    _cut_inputs(nb)
    assert any(c.source == "SMALL = True" for c in nb.cells)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    calls = code.count("explore(") + code.count("diff_readings(") + code.count("contradictions(")
    assert calls and code.count("BOUNDS)") == calls, code


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name: str, request: pytest.FixtureRequest) -> None:
    path = NOTEBOOKS / name
    if any(getattr(item, "path", None) == path for item in request.session.items):
        pytest.skip("executed by nbmake in this run")
    nb = nbformat.read(path, as_version=4)
    _cut_inputs(nb)
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
