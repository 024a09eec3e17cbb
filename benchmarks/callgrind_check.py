"""Instructions per message of ``acp-model check`` (``python benchmarks/callgrind_check.py``).

Deterministic where wall time is not: a loaded machine changes rates, not instruction counts
(issue 51's before/after figures, benchmarks/results/check-before-after.txt). The bench_check
generator's trace (``generate(N, 4)``, seed 7) is checked once to warm the caches, then once more
inside ``itertools.starmap``, and valgrind's callgrind counts only that second check
(``--toggle-collect=starmap_next``: no imports, no set-up). ``--orjson`` counts
``[orjson.loads(x) for x in lines]`` the same way (bench_check's "orjson.loads (per line)").
Needs valgrind; prints the instructions per message.
"""

from __future__ import annotations

import argparse
import itertools
import re
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TOTALS = re.compile(rb"^(?:summary|totals): (\d+)", re.M)


def _inner(what: str, path: Path, validate: bool) -> None:
    """The counted run (under valgrind): warm once, then the run inside starmap."""
    import orjson

    from acp_model.oracle.offline import check_trace

    lines = path.read_bytes().splitlines()
    if what == "orjson":
        def run() -> object:
            return [orjson.loads(x) for x in lines]
    else:
        run = partial(check_trace, path, validate=validate)  # type: ignore[assignment]
    run()
    list(itertools.starmap(run, [()]))


def count(what: str, messages: int, validate: bool) -> tuple[int, int]:
    """(instructions of the counted run, messages in the trace)."""
    from benchmarks.gen_trace import generate

    with tempfile.TemporaryDirectory() as tmp:
        path = generate(messages, 4).log.write(Path(tmp) / "bench.jsonl")
        n = len(path.read_bytes().splitlines())
        out = Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=starmap_next",
                        f"--callgrind-out-file={out}", sys.executable, __file__, "--inner",
                        what, str(path), "1" if validate else "0"],
                       check=True, capture_output=True)
        found = TOTALS.search(out.read_bytes())
        if found is None:
            raise SystemExit(f"no totals in {out}")
        return int(found.group(1)), n


def main() -> None:
    if sys.argv[1:2] == ["--inner"]:
        _inner(sys.argv[2], Path(sys.argv[3]), sys.argv[4] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=4000)
    parser.add_argument("--orjson", action="store_true", help="count orjson.loads instead")
    parser.add_argument("--validate", action="store_true", help="schema validation on")
    args = parser.parse_args()
    what = "orjson" if args.orjson else "check"
    total, n = count(what, args.messages, args.validate)
    label = what if args.orjson else f"check, validation {'on' if args.validate else 'off'}"
    print(f"{label}: {total:,} instructions, {n:,} messages, {total / n:,.0f} per message")


if __name__ == "__main__":
    main()
