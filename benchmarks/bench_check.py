"""Offline checking throughput (``python benchmarks/bench_check.py [--messages N]``).

Prints, for the same generated trace: json.loads and orjson.loads of every line, bare schema
validation of every message against its method's definition, and ``acp-model check`` end to end
(read + parse + model) with schema validation off and on. Targets: validation on >= 60% of
the bare validation rate; validation off >= 10% of the orjson parse rate.
"""

from __future__ import annotations

import argparse
import json
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


def best_of(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    trace = generate(args.messages, args.sessions)
    with tempfile.TemporaryDirectory() as tmp:
        path = trace.write(Path(tmp) / "bench.jsonl")
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
        for backend, validators in compiled.items():
            rows.append((f"bare schema validation ({backend})",
                         best_of(lambda v=validators: [v[d](i) for d, i in pairs],  # type: ignore[misc]
                                 args.repeat), len(pairs)))
        off = best_of(lambda: check_trace(path, validate=False), args.repeat)
        rows.append(("acp-model check, validation off", off, n))
        on = best_of(lambda: check_trace(path, validate=True), args.repeat)
        rows.append(("acp-model check, validation on", on, n))
        report = check_trace(path, validate=True)

    print(f"trace: {n} messages, {args.sessions} sessions, "
          f"{report['summary']['failures']} failures, {report['summary']['warnings']} warnings")
    print(f"{'operation':45} {'seconds':>9} {'messages/s':>12}")
    rates = {}
    for name, seconds, count in rows:
        rates[name] = count / seconds
        print(f"{name:45} {seconds:9.3f} {count / seconds:12,.0f}")
    parse = rates["orjson.loads (per line)"]
    on_ratio = rates["acp-model check, validation on"] / parse
    off_ratio = rates["acp-model check, validation off"] / parse
    speedup = rates["bare schema validation (jsonschema-rs)"] / \
        rates["bare schema validation (fastjsonschema)"]
    print(f"validator in use: {validation.backend()}; jsonschema-rs / fastjsonschema: "
          f"{speedup:.1f}x")
    print(f"check, validation on  / orjson.loads : {on_ratio:6.1%}  (target >= 30%)")
    print(f"check, validation off / orjson.loads : {off_ratio:6.1%}  (target >= 50%)")
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
       notes=f"validator in use: {validation.backend()}")


if __name__ == "__main__":
    main()
