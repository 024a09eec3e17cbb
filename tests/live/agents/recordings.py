"""The recorded mutant transcripts (tests/data/transcripts) and how they are judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_model.agents import mutants as zoo
from acp_model.oracle.offline import check_records
from acp_model.spec.readings import DEFAULT

DATA = Path(__file__).resolve().parents[2] / "data" / "transcripts"
# Whether a cancel was provably read before the turn ended is a race in the scripted case too
# (the response behind the cancel may come after the idle: then a warning, not a failure): a
# mutant of these rules is fuzzed live, where the search must win that race.
RACY_RULES = frozenset({"CANCEL-07", "CANCEL-11", "A-10.cancel"})


def recorded() -> dict[str, dict[str, str]]:
    """{mutant: {rule, level, spec}} of the mutants judged from a recording."""
    return json.loads((DATA / "index.json").read_text())


def judged(records: list[Any], mutant: zoo.Mutant) -> dict[str, str]:
    """rule -> level of what the oracle reports on ``records``, under the mutant's revision."""
    report = check_records(records, readings=DEFAULT.parse([f"SPEC={mutant.revisions[0]}"]),
                           open_at_end=True)
    return {v["rule"]: str(v["level"]) for v in report["violations"]}
