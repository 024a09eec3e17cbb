"""The notebooks in ``notebooks/`` execute without error (test_notebook_files.py: they are
committed executed, with their outputs).

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

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.helpers import NOTEBOOK_NAMES as NAMES
from tests.helpers import NOTEBOOKS

CELL_TIMEOUT = 240  # seconds per cell: a hung agent or kernel fails instead of blocking

pytestmark = pytest.mark.slow


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
