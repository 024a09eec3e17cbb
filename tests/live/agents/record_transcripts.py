"""Record the transcripts the oracle tier judges offline: each bug mutant driven by its
scripted case (test_mutants.CASES), kept where the oracle names the mutant's rule from the
transcript alone, at the same level in each of three runs (its bug does not depend on
timing). Re-record after changing a mutant, a driver or the reference agent:

    .venv/bin/python -m tests.live.agents.record_transcripts

writes tests/data/transcripts/<mutant>.jsonl and index.json ({mutant: {rule, level, spec}});
tests/oracle/test_recorded_mutants.py judges them, and test_mutants checks on every live run
that the agent still behaves as recorded (the same rule at the same level).
"""

from __future__ import annotations

import json
import sys

from acp_model.agents import mutants as zoo
from acp_model.trace.format import read_trace

from .recordings import DATA, RACY_RULES, judged
from .test_mutants import CASES, _run

RUNS = 3


def main() -> int:
    DATA.mkdir(parents=True, exist_ok=True)
    index: dict[str, dict[str, str]] = {}
    for mutant in zoo.MUTANTS:
        (DATA / f"{mutant.name}.jsonl").unlink(missing_ok=True)
        if mutant.rule in RACY_RULES:
            print(f"{mutant.name:32} {mutant.rule:16} racy: fuzzed live only")
            continue
        levels = set()
        for _ in range(RUNS):  # a verdict that differs between runs depends on timing
            client, _facts = _run(mutant.name, CASES[mutant.name].driver)
            path = client.save(DATA / f"{mutant.name}.jsonl")
            levels.add(judged(list(read_trace(path)), mutant).get(mutant.rule))
        if len(levels) != 1 or None in levels:
            path.unlink()
            print(f"{mutant.name:32} {mutant.rule:16} not named offline every time "
                  f"({sorted(map(str, levels))}): fuzzed live only")
            continue
        (level,) = levels
        index[mutant.name] = {"rule": mutant.rule, "level": str(level),
                              "spec": mutant.revisions[0]}
        print(f"{mutant.name:32} {mutant.rule:16} {level}")
    (DATA / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
