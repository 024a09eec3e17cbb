"""One row of the matrix as a job of its own, and the merge of rows run anywhere.

``acp-model matrix --row NAME@v1 --out DIR`` runs one row and writes ``DIR/row.json`` (the row,
its paths relative to ``DIR``, beside the row's run folder); ``--merge DIR...`` makes one
matrix of any number of such folders, copying each row's run folder beside the new page so
its links hold. A row of the same agent, version, acp-model version and settings as in the
previous matrix (``--previous OLD/matrix.json``) is reused from it instead of run again, as
the registry's own matrix does, unless forced: its job writes the previous row, marked
reused, and the merge copies its files from the previous run's folder.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from acp_model import __version__
from acp_model.report.matrix import MatrixError, RowStatus, Target, document

ROW_FORMAT = "acp-model-matrix-row/1"
ROW_FILE = "row.json"
# the settings two runs of a row must share for one to stand for the other
SAME_SETTINGS = ("budget", "spec", "coverage")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_row(out: Path, row: Mapping[str, Any], settings: Mapping[str, Any]) -> Path:
    """``out/row.json``: the row (paths relative to ``out``) and the settings it ran with."""
    path = out / ROW_FILE
    path.write_text(json.dumps({"format": ROW_FORMAT, "tool": "acp-model",
                                "version": __version__, "settings": dict(settings),
                                "row": dict(row)}, indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def load_row(where: Path) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """A row file (or the folder holding one): the row, its settings and its folder."""
    path = where / ROW_FILE if where.is_dir() else where
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatrixError(f"{where}: no {ROW_FILE} (written by acp-model matrix --row)") \
            from None
    except (OSError, ValueError) as exc:
        raise MatrixError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != ROW_FORMAT \
            or not isinstance(data.get("row"), dict):
        raise MatrixError(f"{path}: not an {ROW_FORMAT} file (written by acp-model matrix "
                          "--row)")
    return data["row"], dict(data.get("settings") or {}), path.parent


def reusable(previous: Mapping[str, Any] | None, target: Target,
             settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """The previous matrix's row for ``target`` when it stands for a new run: the same
    agent version (a profile's pin; a command line's version is only known by running it),
    run by the same acp-model version with the same budget and spec, and not an error."""
    if previous is None or not target.version:
        return None
    row = _row_of(previous, target.key)
    if row is None or row.get("status") not in (RowStatus.RAN, RowStatus.UNAVAILABLE):
        return None
    before = previous.get("settings") or {}
    same = (row.get("version") == target.version
            and row.get("acp_model", previous.get("version")) == __version__
            and all(before.get(k) == settings.get(k) for k in SAME_SETTINGS))
    return dict(row) if same else None


def _row_of(matrix: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The row of ``key`` in a matrix document (None: it has none)."""
    return next((r for r in matrix.get("rows") or [] if r.get("key") == key), None)


def reused(row: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    """A previous row, marked as reused (from when it ran)."""
    ran = row.get("created") or (previous.get("settings") or {}).get("created")
    return {**row, "created": ran, "reused": {"from": ran}}


def copy_run(row: Mapping[str, Any], source: Path, out: Path) -> None:
    """The row's run folder, from ``source`` into ``out`` (same relative path)."""
    folder = row.get("out")
    if not folder or source.resolve() == out.resolve():
        return
    src, dst = source / str(folder), out / str(folder)
    if not src.is_dir():
        raise MatrixError(f"row {row.get('key')}: its run folder {src} is missing")
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


ORDER = {RowStatus.RAN: 0, RowStatus.ERROR: 1, RowStatus.NOT_INSTALLED: 2,
         RowStatus.UNAVAILABLE: 3}


def ordered(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows that ran first, then the rest; by agent, the newer protocol first."""
    return sorted((dict(r) for r in rows),
                  key=lambda r: (ORDER.get(RowStatus(r["status"]), 9), str(r["agent"]),
                                 -int(r["protocol"])))


def _reused_from(row: Mapping[str, Any], previous: Mapping[str, Any], folder: Path) -> None:
    """A reused row's files are the previous matrix's: it must be the matrix the row was
    reused from (a row taken from another run's matrix names failures whose folders the one
    given lacks, and its pages could not be written)."""
    then = _row_of(previous, row["key"])
    ran = (row.get("reused") or {}).get("from")
    if then is None or (ran is not None and then.get("created") not in (None, ran)):
        raise MatrixError(f"row {row['key']} (in {folder}) was reused from another matrix "
                          f"than --previous (its run of {ran}): give that matrix as "
                          "--previous")


def merge(folders: Sequence[Path], out: Path, previous: Mapping[str, Any] | None = None,
          previous_base: Path | None = None) -> dict[str, Any]:
    """One matrix document of the rows in ``folders`` (each with its ``row.json``), their run
    folders copied into ``out``; a row its job reused from the previous matrix takes its files
    from there (``previous_base``). Two folders with the same row are a mistake, not a
    choice."""
    rows: dict[str, dict[str, Any]] = {}
    settings: list[dict[str, Any]] = []
    for folder in folders:
        row, ran_with, base = load_row(folder)
        if row["key"] in rows:
            raise MatrixError(f"row {row['key']} is given twice (in {folder})")
        if row.get("reused"):
            if previous is None or previous_base is None:
                raise MatrixError(f"row {row['key']} (in {folder}) reuses the previous "
                                  "matrix: give it with --previous")
            _reused_from(row, previous, folder)
            copy_run(row, previous_base, out)
        else:
            copy_run(row, base, out)
        rows[row["key"]] = {**row, "created": row.get("created") or ran_with.get("created")}
        settings.append(ran_with)
    merged = {k: v for k, v in (settings[0] if settings else {}).items()
              if all(s.get(k) == v for s in settings)}
    merged.update(created=now(), merged=len(folders), interrupted=any(
        s.get("interrupted") for s in settings))
    return document(ordered(rows.values()), merged)
