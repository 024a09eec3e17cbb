"""Offline checking throughput (``python benchmarks/bench_check.py [--messages N]``).

Prints, for the same generated trace: json.loads and orjson.loads of every line, bare schema
validation of every message against its method's definition, and ``acp-model check`` end to end
(read + parse + model) with schema validation off and on. Targets: validation on >= 30% of
the orjson parse rate; validation off >= 50%. It also measures decoding each line once into a
typed record (msgspec, :mod:`benchmarks.typed_decode`) against parsing it into dicts and
walking them for the same facts (issue 51: keep what the profile favours); without msgspec
installed those rows are left out. When a target is missed (or with --profile), the
check with validation is profiled, and where a message's time goes step by step (:data:`STEPS`)
and the top functions with their share of its time are written to
benchmarks/results/check-profile.txt (the profile that explains a missed target).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acp_model.oracle import validate as validation
from acp_model.oracle.offline import check_trace
from acp_model.spec import schema
from benchmarks import typed_decode
from benchmarks.gen_trace import generate
from benchmarks.results import figure, record


def _defs_for(records: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(def name, instance) for every message, resolved the way the monitor resolves them."""
    table = schema.method_table()
    open_requests: dict[Any, str] = {}
    out = []
    for rec in records:
        msgs = rec["msg"] if isinstance(rec["msg"], list) else [rec["msg"]]
        for msg in msgs:
            method = msg.get("method")
            if method is not None:
                spec = table.get(method)
                if "id" in msg:
                    open_requests[(rec["dir"], msg["id"])] = method
                if spec and spec.params_def:
                    out.append((spec.params_def, msg.get("params")))
            else:
                other = "a2c" if rec["dir"] == "c2a" else "c2a"
                method = open_requests.pop((other, msg.get("id")), None)
                if "error" in msg:
                    out.append(("Error", msg["error"]))
                elif method and table[method].result_def:
                    out.append((table[method].result_def, msg["result"]))
    return out


def _each(fn: Any, lines: list[bytes]) -> None:
    for line in lines:
        fn(line)


def best_of(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


PROFILE = Path(__file__).resolve().parent / "results" / "check-profile.txt"


def _where(key: tuple[str, int, str]) -> str:
    filename, line, name = key
    if filename == "~":
        return name  # a built-in
    parts = Path(filename).parts
    root = parts.index("acp_model") if "acp_model" in parts else len(parts) - 1
    return f"{'/'.join(parts[root:])}:{line}({name})"


# The steps a message passes, each the inclusive time of the functions that do it (none calls
# another of the list): where a message's time goes, layer by layer (issue 51: a missed target
# prints the profile that explains it).
STEPS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("read and parse the trace", (("trace/format.py", "iter_trace"),)),
    # (see _steps)
    ("routing: the router's and the update route's own work", (("oracle/router.py", "record"),)),
    ("JSON-RPC envelope checks", (("oracle/store.py", "run_entry", "_message"),
                                  ("oracle/store.py", "run_entry", "record"))),
    ("method plan verdicts", (("oracle/router.py", "_method_verdicts"),)),
    ("schema validation", (("oracle/shapes.py", "schema"),)),
    ("single-message findings", (("oracle/updates.py", "check"),
                                 ("model/messages.py", "judge"))),
    ("findings reported and counted", (("oracle/shapes.py", "findings"),)),
    ("watchers (conversation, replay, reopens, advertised use)", (
        ("oracle/conversation.py", "update"), ("oracle/reopens.py", "position"),
        ("oracle/reopens.py", "noted"), ("oracle/reopens.py", "around"),
        ("oracle/advertised.py", "update"), ("oracle/advertised.py", "request"),
        ("model/replay.py", "replaying"), ("model/replay.py", "replayed_history"),
        ("model/replay.py", "state_reported"), ("oracle/machines.py", "busy"))),
    ("replay-order checks", (("oracle/store.py", "run_entry", "_place"),)),
    ("translator (dialect)", (("oracle/dialects.py", "__call__"),)),
    ("classification (wire)", (("oracle/wire.py", "classified"),)),
    # an update kind's reducer (its plan's: a function or a reducer object of model/views.py)
    ("client view (reducer)", (("model/views.py", "*", "route"),
                               ("oracle/updates.py", "_kept"))),
    ("view findings", (("oracle/updates.py", "check_view"),
                       ("model/reducers.py", "judge_permission"))),
    ("session and connection machines", (("oracle/machines.py", "session_event"),
                                         ("oracle/machines.py", "conn_event"))),
    ("responses (answers)", (("oracle/answers.py", "response"),)),
)


def _steps(stats: dict[Any, Any], total: float) -> list[str]:
    """Each step's share of the check: the inclusive time of its functions (called from the
    caller named, where one is); the router's own work is what its ``record`` takes beyond
    the steps below it."""
    def incl(file: str, name: str, caller: str | None = None) -> float:
        keys = [k for k in stats if name in (k[2], "*")
                and k[0].replace("\\", "/").endswith(file)]  # "*": any function of the file
        if caller is None:
            return sum(stats[k][3] for k in keys)
        return sum(ct for k in keys for c, (_, _, _, ct) in stats[k][4].items()
                   if c[2] == caller)

    def from_answers(file: str, name: str) -> float:  # called by a function of answers.py
        keys = [k for k in stats if k[2] == name and k[0].replace("\\", "/").endswith(file)]
        return sum(ct for k in keys for c, (_, _, _, ct) in stats[k][4].items()
                   if c[0].replace("\\", "/").endswith("oracle/answers.py"))

    shares = {label: sum(incl(*fn) for fn in fns) for label, fns in STEPS}
    answers = "responses (answers)"  # less what they hand to the steps above
    shares[answers] -= sum(from_answers(f, n) for f, n in (
        ("oracle/shapes.py", "schema"), ("oracle/shapes.py", "findings"),
        ("oracle/machines.py", "session_event"), ("oracle/machines.py", "conn_event")))
    routing = "routing: the router's and the update route's own work"
    parse = "read and parse the trace"
    shares[routing] = max(0.0, shares[routing] - sum(
        v for label, v in shares.items() if label not in (routing, parse)))
    shares["the rest (the monitor's feed, the report)"] = max(
        0.0, total - sum(shares.values()))
    return [f"{v / total:6.1%}  {label}" for label, v in shares.items()]


def profile(path: Path, out: Path, missed: list[str], top: int = 25) -> str:
    """Profile ``check_trace`` (validation on) and write the top functions by inclusive and by
    own time, each as a share of the check; returns a one-line summary for the notes."""
    profiler = cProfile.Profile()
    profiler.runcall(check_trace, path, validate=True)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = max(ct for _, _, _, ct, _ in stats.values())
    rows = [(ct / total, tt / total, nc, _where(key))
            for key, (_, nc, tt, ct, _) in stats.items()]
    lines = [f"acp-model check (validation on) on the benchmark's trace, under cProfile (its "
             f"per-call cost inflates small functions; shares are of the profiled check, "
             f"{total:.2f} s).",
             f"Targets missed: {'; '.join(missed) or 'none'}.", "",
             "Where a message's time goes, step by step (share of the check):",
             *_steps(stats, total), "",
             "Top functions by inclusive time:", f"{'incl':>6} {'self':>6} {'calls':>8}  function"]
    lines += [f"{c:6.1%} {t:6.1%} {n:8d}  {w}" for c, t, n, w in
              sorted(rows, reverse=True)[:top] if "bench_check" not in w]
    lines += ["", "Top functions by own time:", f"{'self':>6} {'incl':>6} {'calls':>8}  function"]
    lines += [f"{t:6.1%} {c:6.1%} {n:8d}  {w}" for c, t, n, w in
              sorted(rows, key=lambda r: r[1], reverse=True)[:top]]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    by_self = sorted(rows, key=lambda r: r[1], reverse=True)[:5]
    return "top own time: " + ", ".join(f"{w} {t:.0%}" for _, t, _, w in by_self)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help=f"profile the check even when the targets are met ({PROFILE.name})")
    parser.add_argument("--no-record", action="store_true",
                        help="print the figures without rewriting results/check.json (a loaded "
                             "machine's wall clock is noise: profile there, record on a quiet one)")
    args = parser.parse_args()

    trace = generate(args.messages, args.sessions)
    with tempfile.TemporaryDirectory() as tmp:
        path = trace.log.write(Path(tmp) / "bench.jsonl")
        lines = path.read_bytes().splitlines()
        n = len(lines)
        records = [orjson.loads(line) for line in lines]
        pairs = _defs_for(records)
        compiled = {backend: {name: validation.compiled_validator(name, "seed", backend)
                              for name, _ in pairs} for backend in validation.BACKENDS}
        check_trace(path, validate=True)  # warm caches (validator compilation)

        rows: list[tuple[str, float, int]] = []
        rows.append(("json.loads (per line)", best_of(lambda: [json.loads(x) for x in lines],
                                                      args.repeat), n))
        rows.append(("orjson.loads (per line)",
                     best_of(lambda: [orjson.loads(x) for x in lines], args.repeat), n))
        # each line parsed and dropped (no parse kept alive: the garbage collector's work on
        # the kept lists above is not the decoders'), with and without the router's reads
        for name, fn in typed_decode.decoders().items():
            rows.append((name, best_of(lambda f=fn: _each(f, lines), args.repeat), n))
        for backend, validators in compiled.items():
            rows.append((f"bare schema validation ({backend})",
                         best_of(lambda v=validators: [v[d](i) for d, i in pairs],  # type: ignore[misc]
                                 args.repeat), len(pairs)))
        off = best_of(lambda: check_trace(path, validate=False), args.repeat)
        rows.append(("acp-model check, validation off", off, n))
        on = best_of(lambda: check_trace(path, validate=True), args.repeat)
        rows.append(("acp-model check, validation on", on, n))
        report = check_trace(path, validate=True)
        parse = n / rows[1][1]
        on_ratio, off_ratio = n / on / parse, n / off / parse
        missed = [f"{name} {ratio:.1%} < {goal:.0%}" for name, ratio, goal in (
            ("validation on", on_ratio, 0.30), ("validation off", off_ratio, 0.50))
            if ratio < goal]
        summary = profile(path, PROFILE, missed) if missed or args.profile else ""

    print(f"trace: {n} messages, {args.sessions} sessions, "
          f"{report['summary']['failures']} failures, {report['summary']['warnings']} warnings")
    print(f"{'operation':45} {'seconds':>9} {'messages/s':>12}")
    rates = {}
    for name, seconds, count in rows:
        rates[name] = count / seconds
        print(f"{name:45} {seconds:9.3f} {count / seconds:12,.0f}")
    speedup = rates["bare schema validation (jsonschema-rs)"] / \
        rates["bare schema validation (fastjsonschema)"]
    print(f"validator in use: {validation.backend()}; jsonschema-rs / fastjsonschema: "
          f"{speedup:.1f}x")
    typed = rates.get(typed_decode.TYPED_READS)
    walked = rates[typed_decode.DICT_READS]
    per_check = on / n  # seconds per message of the check with validation
    decode_note = ("typed decode not measured (msgspec not installed)" if typed is None else
                   f"typed decode + reads runs at {typed / walked:.2f}x the rate of dict parse + "
                   f"reads; they take {1 / walked / per_check:.0%} and {1 / typed / per_check:.0%}"
                   " of the check's time per message")
    print(decode_note)
    print(f"check, validation on  / orjson.loads : {on_ratio:6.1%}  (target >= 30%)")
    print(f"check, validation off / orjson.loads : {off_ratio:6.1%}  (target >= 50%)")
    print(f"targets: {'missed: ' + '; '.join(missed) if missed else 'met'}")
    if summary:
        print(f"profile written to {PROFILE.relative_to(PROFILE.parents[2])} ({summary})")
    if args.no_record:
        print("figures not recorded (--no-record)")
        return
    record("check", "Offline checking", [
        figure("acp-model check, validation on", round(rates["acp-model check, validation on"]),
               "messages/s"),
        figure("acp-model check, validation off",
               round(rates["acp-model check, validation off"]), "messages/s"),
        figure("check with validation / orjson parse rate", f"{on_ratio:.0%}",
               target=">= 30%", met=on_ratio >= 0.30),
        figure("check without validation / orjson parse rate", f"{off_ratio:.0%}",
               target=">= 50%", met=off_ratio >= 0.50),
        figure("jsonschema-rs / fastjsonschema", f"{speedup:.0f}x"),
    ], table={"columns": ["operation", "seconds (best of repeats)", "messages/s"],
              "rows": [[name, round(seconds, 3), round(count / seconds)]
                       for name, seconds, count in rows]},
       parameters={"messages": n, "sessions": args.sessions, "repeat": args.repeat},
       notes=f"validator in use: {validation.backend()}; {decode_note}" + (
           f". Targets missed; profile of the check in benchmarks/results/{PROFILE.name} "
           f"({summary})" if missed else ""))


if __name__ == "__main__":
    main()
