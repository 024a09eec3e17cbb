"""Command line of the reference agent: mutant, design, seed, timing."""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import logging
import os
import sys
from typing import Any

from acp_model.agents import mutants as zoo
from acp_model.agents.design import AXES, Design
from acp_model.agents.reference.agent import TIMINGS, Agent
from acp_model.agents.reference.faults import FAULTS, Fault
from acp_model.agents.reference.wire import INTERNAL_ERROR, RpcFailure
from acp_model.agents.stdio import StdinReader, StdoutWriter

log = logging.getLogger("acp_model.agents.reference")


def process_number(path: str) -> int:
    """This process's number among those sharing the counter file at ``path`` (0, 1, ...),
    taken under a lock: replays start processes concurrently."""
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        n = len(f.read())
        f.write(".")
    return n


def flaky(agent: Agent, method: str) -> None:
    """Answer every ``method`` request with -32603: an agent that fails on its own, in
    some processes (a replay of it is inconclusive, not a miss: fuzzing/inconclusive.py)."""
    def failing(ctx: Any, params: Any) -> None:
        raise RpcFailure(INTERNAL_ERROR, f"internal error (--flaky {method})")

    agent.inbox.requests[method] = failing


async def serve(fault: Fault, design: Design, forced: dict[str, bool], seed: int,
                timing: str, spec: str, flaky_method: str | None = None) -> None:
    loop = asyncio.get_running_loop()
    agent = Agent(writer=StdoutWriter(sys.stdout.fileno()), fault=fault, design=design,
                  forced=forced, seed=seed, timing=timing, spec=spec)
    if flaky_method is not None:
        flaky(agent, flaky_method)
    reader = StdinReader(loop, agent.on_input, fd=sys.stdin.fileno())
    reader.start()
    await agent.finished.wait()
    agent.shut_down()


def design_table() -> str:
    lines = []
    for axis, values in AXES.items():
        for n, (value, what) in enumerate(values):
            lines.append(f"{axis if n == 0 else '':15} {value:15} {what}"
                         + (" (default)" if n == 0 else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_model.agents.reference",
        description="ACP v2 reference agent (v1 when the client offers protocolVersion 1), "
                    "any point of the design space, optionally with a planted bug.",
    )
    parser.add_argument("--mutant", default=None, help="plant one bug (see --list-mutants)")
    parser.add_argument("--design", default="", metavar="AXIS=VALUE,...",
                        help="choices the text leaves to the agent (see --list-design)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fake model")
    parser.add_argument("--timing", choices=sorted(TIMINGS), default="fast")
    parser.add_argument("--spec", choices=("seed", "sdk-2.4.0"), default=None,
                        help="the revision of the text it follows (default seed; a mutant of "
                             "the newer revision runs in it)")
    parser.add_argument("--flaky", default=None, metavar="METHOD",
                        help="in every other process sharing --flaky-count, answer each "
                             "METHOD request with -32603 (an agent failing on its own)")
    parser.add_argument("--flaky-count", default=None, metavar="PATH",
                        help="the file that numbers the processes for --flaky")
    parser.add_argument("--list-mutants", action="store_true", help="print the mutant table")
    parser.add_argument("--list-design", action="store_true", help="print the design axes")
    parser.add_argument("--verbose", action="store_true", help="log protocol events to stderr")
    args = parser.parse_args(argv)
    if args.list_mutants:
        print(zoo.table())
        return 0
    if args.list_design:
        print(design_table())
        return 0
    try:
        mutant = zoo.get(args.mutant)
    except KeyError:
        print(f"unknown mutant {args.mutant!r}; see --list-mutants", file=sys.stderr)
        return 2
    try:
        design = Design.parse(",".join(p for p in (mutant.design if mutant else "",
                                                   args.design) if p))
    except ValueError as exc:
        print(f"{exc}", file=sys.stderr)
        return 2
    fault = FAULTS[mutant.name]() if mutant is not None else Fault()
    spec = args.spec or (mutant.revisions[0] if mutant is not None else "seed")
    forced = {name: getattr(mutant, name) for name in ("force_tool", "force_permission",
                                                       "force_plan", "force_usage")} \
        if mutant is not None else {}
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    log.info("starting (mutant=%s, design=%s, seed=%d, timing=%s)", args.mutant,
             design.spec() or "default", args.seed, args.timing)
    failing = args.flaky if args.flaky and args.flaky_count \
        and process_number(args.flaky_count) % 2 else None
    asyncio.run(serve(fault, design, forced, args.seed, args.timing, spec, failing))
    sys.stderr.flush()
    os._exit(0)  # the stdin reader thread may still be blocked in read()
