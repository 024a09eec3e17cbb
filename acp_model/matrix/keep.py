"""A matrix run made small enough to keep in a repository (``--rejudge RUN --out DIR
--compact``): what the pages and re-judging read, nothing else.

Per row: its ``report.json`` without what only the run's own page drew (coverage samples, the
rule texts the catalogue has), and per finding its transcript, replay file and the schedule
that file holds to, counterexample text and sequence diagram. A transcript longer than
``MAX_TRANSCRIPT`` bytes keeps the handshake and the messages around the ones its finding's
proof cites, the rest left out and marked as gaps (``trace/format.py``), so every number the
proof cites is still in the file; when the messages around the proof still overflow it, the
largest the proof does not cite go too.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from acp_model.trace.format import TraceError, numbered_lines, numbers_of, read_trace

MAX_TRANSCRIPT = 128_000  # bytes of a kept transcript (the run stays under 4 MB)
AROUND = 12  # messages kept on each side of a cited one in a cut transcript
# the replay file names its recorded schedule beside it: a maintainer's replay holds to it
FILES = ("transcript.jsonl", "replay.json", "schedule.json", "counterexample.txt",
         "warning.txt", "sequence.mmd")
RULE_KEYS = ("id", "party", "strength", "kind", "status", "exercised", "violations",
             "warnings")
CUT = "cut to keep the run small: the messages around the proof are kept"


def compact_run(row: Mapping[str, Any], source: Path, out: Path) -> None:
    """The row's run folder from ``source`` into ``out``, compacted (same relative paths)."""
    folder = row.get("out")
    if not folder or not row.get("report"):
        return
    src, dst = source / str(folder), out / str(folder)
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    from acp_model.matrix.rejudge import as_recorded

    # the run's own record (a report re-judged before says the run's in its recorded section)
    report = as_recorded(json.loads((source / str(row["report"])).read_text(encoding="utf-8")))
    (out / str(row["report"])).write_text(json.dumps(_slim(report), indent=1) + "\n",
                                          encoding="utf-8")
    cited = _cited(report)
    for case in sorted({p.parent for p in src.rglob("transcript.jsonl")}):
        target = dst / case.relative_to(src)
        target.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            if (case / name).is_file():
                shutil.copyfile(case / name, target / name)
        transcript = target / "transcript.jsonl"
        if transcript.stat().st_size > MAX_TRANSCRIPT:
            _cut(transcript, cited.get(case.relative_to(src).as_posix(), set()))


def _slim(report: Mapping[str, Any]) -> dict[str, Any]:
    slim = {k: v for k, v in report.items() if k != "coverage"}
    slim["rules"] = [{k: r[k] for k in RULE_KEYS if k in r} for r in report.get("rules") or []]
    return slim


def _cited(report: Mapping[str, Any]) -> dict[str, set[int]]:
    """Per finding folder (relative to the row's), the message numbers its proof cites."""
    out: dict[str, set[int]] = {}
    kept = {ce["rule"]: ce for ce in report.get("counterexamples") or []}
    for v in report.get("violations") or []:
        files = (kept.get(v["rule"]) or {}).get("files") if v.get("level") == "fail" \
            else v.get("files")
        path = (files or {}).get("transcript.jsonl")
        if not path:
            continue
        parts = Path(path).parts
        folder = "/".join(parts[-3:-1] if len(parts) >= 3 and parts[-3] == "warnings"
                          else parts[-2:-1])
        numbers = {int(e["index"]) for e in v.get("evidence") or []
                   if isinstance(e.get("index"), int)}
        if isinstance(v.get("index"), int):
            numbers.add(v["index"])
        out.setdefault(folder, set()).update(numbers)
    return out


def _cut(path: Path, cited: Iterable[int]) -> None:
    """``path`` rewritten with only the handshake and the messages around ``cited`` (the
    last ones when nothing is cited)."""
    try:
        records = read_trace(path)
    except TraceError:
        return
    numbers = numbers_of(records)
    wanted = set(cited) or {numbers[-1]}
    keep = [k for k, n in enumerate(numbers)
            if k < 2 or any(abs(n - c) <= AROUND for c in wanted)]
    # a few huge messages around the proof (an agent's half-megabyte command list) still
    # overflow it: the largest ones the proof does not cite go too, marked as gaps
    sizes = {k: len(json.dumps(next(numbered_lines([records[k]], [0])), ensure_ascii=False))
             for k in keep}
    total = sum(sizes.values())
    for k in sorted(keep, key=lambda k: -sizes[k]):
        if total <= MAX_TRANSCRIPT:
            break
        if k >= 2 and numbers[k] not in wanted:
            keep.remove(k)
            total -= sizes[k]
    with path.open("w", encoding="utf-8") as fh:
        for obj in numbered_lines([records[k] for k in keep], [numbers[k] for k in keep], CUT):
            fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
