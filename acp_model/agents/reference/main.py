"""Command line of the reference agent: mutant, design, seed, timing."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from acp_model.agents import mutants as zoo
from acp_model.agents.design import AXES, Design
from acp_model.agents.reference.agent import TIMINGS, Agent
from acp_model.agents.reference.faults import FAULTS, Fault
from acp_model.agents.stdio import StdinReader, StdoutWriter

log = logging.getLogger("acp_model.agents.reference")


async def serve(fault: Fault, design: Design, forced: dict[str, bool], seed: int,
                timing: str, spec: str) -> None:
    loop = asyncio.get_running_loop()
    agent = Agent(writer=StdoutWriter(sys.stdout.fileno()), fault=fault, design=design,
                  forced=forced, seed=seed, timing=timing, spec=spec)
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
    asyncio.run(serve(fault, design, forced, args.seed, args.timing, spec))
    sys.stderr.flush()
    os._exit(0)  # the stdin reader thread may still be blocked in read()
