"""Small modules with names that say what they hold: no module of the package grows past about
600 lines, except the data tables (the rule catalogue), so a change that pushes one over is
split, not waved through."""

from __future__ import annotations

from pathlib import Path

import acp_model

PACKAGE = Path(acp_model.__file__).parent
LIMIT = 600
# tables of data, one row per line: their length is the catalogue's, not the logic's
DATA_TABLES = {"spec/rules.py"}


def test_no_module_is_over_600_lines_except_the_data_tables() -> None:
    sizes = {path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50, "the package was found"
    over = {name: n for name, n in sizes.items() if n > LIMIT and name not in DATA_TABLES}
    assert not over, f"modules over {LIMIT} lines: {over}"
    assert all(sizes.get(name, 0) > LIMIT for name in DATA_TABLES), "a data table shrank: " \
        "take it off the list"
