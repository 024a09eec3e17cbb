"""Campaign against the bundled agents: correct designs and the mutant zoo.

Every bug mutant must be reported under the rule it plants. Every correct agent must give no
failure, and warnings only where a named reading's default says the behaviour is open (a
held prompt that outlives a cancel warns under ``A-10=any``). The correct agents are the
reference agent at the points of its design space that :func:`acp_model.agents.design.pairwise`
picks (every pair of values of two axes is covered) and the plain agent
(``acp_model.agents.plain``), written without the reference agent's code. Each case is one
fuzz run of one variant in one timing (``fast``/``real``/``slow``) with one seed; a bug run
stops as soon as its rule is found (``FuzzConfig.stop_on``), then shrinks and replays it in
fresh processes.

Plans:

* ``quick``: the reference agent in all three timings, a sample of designs and plain agents,
  and a representative subset of bug mutants with small budgets; the project's test suite runs
  it (``tests/live/test_campaigns.py``).
* ``full``: every bug mutant in every timing with seeds 1, 2, 3.
* ``designs``: every design and plain variant, fast and slow, seeds 1, 2, 3, 200 examples each.
  Hours on one core; spread it with ``--jobs`` or pytest-xdist.

Run it:

    python fuzz/acp_zoo_campaign.py --plan quick                 # a table, exit 1 on a miss
    python fuzz/acp_zoo_campaign.py --plan full --jobs 8 --json zoo.json
    python fuzz/acp_zoo_campaign.py --plan designs --jobs 2 --json designs.json
    ACP_ZOO=full pytest -n auto fuzz/test_zoo.py                 # one test per case

This file is a script and a module loaded by path (``fuzz/`` is not a package: the name
``fuzz`` belongs to an unrelated PyPI project); it only imports ``acp_model``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from acp_model.agents.design import pairwise
from acp_model.agents.mutants import BY_NAME, MUTANTS
from acp_model.argtypes import int_at_least
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.editors import custom
from acp_model.model.check import reading_of_warning
from acp_model.spec.readings import DEFAULT

TIMINGS = ("fast", "real", "slow")
REFERENCE = "reference"

# Representative and quick to find: one or two per rule group, covering initialization,
# sessions, acceptance, states, stop reasons, messages, tools, permissions, cancellation
# races and framing.
QUICK_BUGS = (
    "init_without_info", "duplicate_session_id", "prompt_answered_twice", "no_running",
    "chunk_without_message_id", "unknown_tool_kind", "empty_permission_options",
    "perm_reject_proceeds", "answers_cancel", "cancel_no_idle", "late_cancel_kills_next_turn",
    "stdout_banner",
    # the sdk-2.4.0 revision (judged under --spec auto)
    "receipt_id_differs", "error_after_insertion", "held_prompt_outlives_cancel",
    "background_dropped",
)

# The correct agents: the reference agent at pairwise-chosen points of its design space, and
# the plain agent (no shared code) in each of its own choices. name -> extra arguments.
DESIGNS: dict[str, tuple[str, ...]] = {
    f"design-{n:02}": ("-m", "acp_model.agents.reference", "--design", d.spec())
    for n, d in enumerate(pairwise(40)) if d.spec()
}
PLAIN_CHOICES = (
    ("queue", "withdraw", "response-first", "no-running"),
    ("queue", "wait", "message-first", "running"),
    ("join", "wait", "response-first", "running"),
    ("join", "withdraw", "message-first", "no-running"),
    ("reject", "withdraw", "message-first", "running"),
    ("reject", "wait", "response-first", "no-running"),
)
DESIGNS.update({
    f"plain-{busy}-{perm}-{'mf' if order == 'message-first' else 'rf'}-"
    f"{'nr' if instant == 'no-running' else 'r'}":
        ("-m", "acp_model.agents.plain", "--busy", busy, "--perm-cancel", perm, "--order", order,
         "--instant", instant)
    for busy, perm, order, instant in PLAIN_CHOICES
})
# The reference agent following the newer revision (judged under --spec auto), and mutants of
# that revision judged under the seed, where what they plant is legal.
DESIGNS["sdk-reference"] = ("-m", "acp_model.agents.reference", "--spec", "sdk-2.4.0")
DESIGNS["sdk-held-under-seed"] = ("-m", "acp_model.agents.reference", "--mutant",
                                  "held_prompt_outlives_cancel")
DESIGNS["sdk-receipt-under-seed"] = ("-m", "acp_model.agents.reference", "--mutant",
                                     "receipt_id_differs")
JUDGED_BY: dict[str, str] = {"sdk-reference": "auto", "sdk-held-under-seed": "seed",
                             "sdk-receipt-under-seed": "seed"}
QUICK_DESIGNS = ("design-01", "design-02", "design-03", "plain-queue-withdraw-rf-nr",
                 "plain-join-wait-rf-r", "sdk-reference", "sdk-held-under-seed",
                 "sdk-receipt-under-seed")


@dataclass(frozen=True)
class Case:
    """One fuzz run: a variant of the reference agent, a timing, a seed and a budget."""

    variant: str  # "reference", a design name or a mutant name
    kind: str  # "reference" | "design" | "bug"
    rule: str | None  # for a bug: the rule it must be reported under
    timing: str
    seed: int
    max_examples: int
    steps: int
    time_budget: float
    deadline: float

    @property
    def id(self) -> str:
        return f"{self.variant}-{self.timing}-s{self.seed}"

    def argv(self) -> list[str]:
        timing = ["--timing", self.timing, "--seed", str(self.seed)]
        if self.kind == "design":
            return [sys.executable, *DESIGNS[self.variant], *timing]
        argv = [sys.executable, "-m", "acp_model.agents.reference", *timing]
        return argv if self.kind == "reference" else [*argv, "--mutant", self.variant]

    @property
    def spec(self) -> str | None:
        """The revision that judges: ``auto`` for an agent of the newer revision, a fixed one
        where the campaign says so, else the readings' (the seed)."""
        if self.kind == "design":
            return JUDGED_BY.get(self.variant)
        mutant = BY_NAME.get(self.variant)
        return "auto" if mutant is not None and mutant.revisions != ("seed",) else None

    def config(self) -> FuzzConfig:
        bug = self.kind == "bug"
        mutant = BY_NAME.get(self.variant)
        # the client the trigger needs (a mutant's elicitation needs a client offering it)
        client = custom(mutant.client_capabilities) if mutant is not None \
            and mutant.client_capabilities else None
        # A bug run goes on (masking what it found) until its own rule shows up or the budget
        # is spent: a mutant may break another rule first. Others need one round: any
        # failure already fails the case.
        return FuzzConfig(
            self.argv(), max_examples=self.max_examples, steps=self.steps, seed=self.seed,
            time_budget=self.time_budget, deadline=self.deadline, max_rounds=6 if bug else 1,
            replay_runs=2, shrink_budget=5.0, minimize_budget=20.0, spec=self.spec,
            stop_on=frozenset({self.rule}) if bug and self.rule else frozenset(),
            client=client)


@dataclass
class Outcome:
    """What a case produced and whether that is what its variant must produce."""

    case: Case
    ok: bool
    failures: dict[str, str] = field(default_factory=dict)  # rule -> message
    warnings: dict[str, str] = field(default_factory=dict)
    open_warnings: dict[str, str] = field(default_factory=dict)  # rule -> the reading
    examples: int = 0
    actions: int = 0
    seconds: float = 0.0
    first_seen: float | None = None  # bug: seconds to the first failure naming its rule
    reproduction: str = ""  # bug: "k/n" fresh-process replays of the counterexample
    steps: int | None = None  # bug: client actions in the counterexample
    unusable: str | None = None

    def explain(self) -> str:
        c = self.case
        lines = [f"{c.id} ({c.kind}{', must report ' + c.rule if c.rule else ''}): "
                 f"{self.examples} examples, {self.actions} actions in {self.seconds:.1f} s"]
        if c.kind == "bug" and not self.ok:
            lines.append(f"  MISSED: {c.rule} was not reported")
        if self.unusable:
            lines.append(f"  agent unusable: {self.unusable}")
        for rule, message in sorted(self.failures.items()):
            tag = "found" if rule == c.rule else "FAILURE"
            lines.append(f"  {tag} {rule}: {message}")
        for rule, message in sorted(self.warnings.items()):
            tag = "found" if c.kind == "bug" and rule == c.rule else \
                "warning" if c.kind == "bug" or rule in self.open_warnings else "WARNING"
            why = f" (open under {self.open_warnings[rule]})" if rule in self.open_warnings \
                else ""
            lines.append(f"  {tag} {rule}{why}: {message}")
        return "\n".join(lines)


def run_case(case: Case, out: str | None = None, *, config: FuzzConfig | None = None
             ) -> Outcome:
    """Fuzz one case and judge it against its variant's expectation.

    With ``out``, a case that found anything leaves its report and counterexample files in
    ``out/<case id>/`` (what an unexpected failure needs to be investigated). ``config``
    stands in for the case's own (a test that reads only the verdict skips the replays).
    """
    from acp_model.fuzzing.orchestrator import FuzzRun, Outputs

    started = time.monotonic()
    run = FuzzRun(config or case.config())
    result = run.fuzz(strict_spec=False)
    if out is not None and (result.recorder.found or result.recorder.warnings):
        folder = Path(out) / case.id
        run.report(result, Outputs(out=folder, report=folder / "report.json"))
    rec = result.recorder
    failures = {rule: f.violation.message for rule, f in rec.found.items()}
    warnings = {rule: v.message for (rule, _check), v in rec.warnings.items()}
    open_warnings = {rule: reading for (rule, check) in rec.warnings
                     if (reading := reading_of_warning(check, DEFAULT)) is not None}
    outcome = Outcome(case, ok=False, failures=failures, warnings=warnings,
                      open_warnings=open_warnings,
                      examples=rec.examples, actions=rec.actions,
                      seconds=time.monotonic() - started,
                      unusable=result.unusable or result.problem)
    if case.kind == "bug":
        hit = rec.sighted(case.rule or "")  # a SHOULD's: its warning's first sighting
        outcome.ok = hit is not None
        if hit is not None:
            outcome.first_seen = round(hit.first_seen, 2)
            outcome.reproduction = f"{hit.reproduced}/{hit.replays}"
            outcome.steps = len(hit.actions)
    else:  # a warning is fine only where a reading leaves the behaviour open
        outcome.ok = not failures and set(warnings) <= set(open_warnings) \
            and result.judged and result.unusable is None
    return outcome


def _variants(kinds: Iterable[str]) -> list[tuple[str, str, str | None]]:
    wanted = set(kinds)
    out: list[tuple[str, str, str | None]] = []
    if "reference" in wanted:
        out.append((REFERENCE, "reference", None))
    if "design" in wanted:
        out += [(name, "design", None) for name in DESIGNS]
    if "bug" in wanted:
        out += [(m.name, "bug", m.rule) for m in MUTANTS]
    return out


def _deadline(timing: str) -> float:
    """Long enough for a slow conforming turn, short because bug runs wait it out often."""
    return {"fast": 1.5, "real": 2.0}.get(timing, 3.0)


def plan(name: str, *, seeds: Sequence[int] | None = None,
         timings: Sequence[str] | None = None, only: Iterable[str] | None = None) -> list[Case]:
    """The cases of a plan, optionally narrowed to some seeds, timings or variant names."""
    cases: list[Case] = []
    if name == "full":
        for timing in timings or TIMINGS:
            for seed in seeds or (1, 2, 3):
                for variant, kind, rule in _variants(("reference", "bug")):
                    if kind == "bug":
                        cases.append(Case(variant, kind, rule, timing, seed, 10_000, 30, 300.0,
                                          _deadline(timing)))
                    else:
                        cases.append(Case(variant, kind, rule, timing, seed, 200, 30, 1200.0,
                                          _deadline(timing)))
    elif name == "designs":
        for timing in timings or ("fast", "slow"):
            for seed in seeds or (1, 2, 3):
                for variant, kind, rule in _variants(("reference", "design")):
                    cases.append(Case(variant, kind, rule, timing, seed, 200, 30, 1200.0,
                                      _deadline(timing)))
    elif name == "quick":
        examples = {"fast": 25, "real": 20, "slow": 10}
        for timing in timings or TIMINGS:
            for seed in seeds or (1,):
                cases.append(Case(REFERENCE, "reference", None, timing, seed, examples[timing],
                                  15, 60.0, _deadline(timing)))
        by_name = {m.name: m for m in MUTANTS}
        for seed in seeds or (1,):
            for variant in QUICK_DESIGNS:
                cases.append(Case(variant, "design", None, "fast", seed, 15, 15, 60.0, 1.5))
            for variant in QUICK_BUGS:
                cases.append(Case(variant, "bug", by_name[variant].rule, "fast", seed, 300, 15,
                                  45.0, 1.5))
            # A timing-sensitive race in the slowest timing too.
            cases.append(Case("cancel_as_end_turn", "bug", "CANCEL-07", "slow", seed, 300, 15,
                              45.0, 3.0))
    else:
        raise ValueError(f"unknown plan {name!r} (quick, full or designs)")
    if only:
        keep = set(only)
        cases = [c for c in cases if c.variant in keep]
    return cases


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [f"{'case':42} {'kind':9} {'rule':11} {'ok':3} {'examples':>8} {'seconds':>8} "
            f"{'first':>6} {'steps':>5} {'repro':>5}"]
    for o in outcomes:
        c = o.case
        rows.append(f"{c.id:42} {c.kind:9} {c.rule or '-':11} {'yes' if o.ok else 'NO':3} "
                    f"{o.examples:8} {o.seconds:8.1f} "
                    f"{'' if o.first_seen is None else f'{o.first_seen:.2f}':>6} "
                    f"{'' if o.steps is None else o.steps:>5} {o.reproduction:>5}")
    return "\n".join(rows)


def _seeds(value: str) -> list[int]:
    try:
        return [int(s) for s in value.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got "
                                         f"{value!r}") from None


def _names(known: Sequence[str]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated subset of ``known`` (an unknown name is an error,
    not a silently empty campaign)."""

    def parse(value: str) -> list[str]:
        names = value.split(",")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown: {', '.join(unknown)}")
        return names

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", choices=("quick", "full", "designs"), default="quick")
    parser.add_argument("--seeds", type=_seeds, help="comma-separated seeds (default: the "
                        "plan's)")
    parser.add_argument("--timings", type=_names(TIMINGS),
                        help="comma-separated subset of fast,real,slow")
    parser.add_argument("--only", type=_names([REFERENCE, *DESIGNS, *(m.name for m in MUTANTS)]),
                        help="comma-separated variant names (reference, designs, mutants)")
    parser.add_argument("--jobs", type=int_at_least(1), default=1,
                        help="cases run in parallel processes")
    parser.add_argument("--json", metavar="PATH", help="write every outcome as JSON")
    parser.add_argument("--out", metavar="DIR", help="files of every case that found anything, "
                        "under DIR/<case id>/")
    args = parser.parse_args(argv)
    cases = plan(args.plan, seeds=args.seeds, timings=args.timings, only=args.only)
    if not cases:
        parser.error(f"the {args.plan} plan has no case for that selection")
    started = time.monotonic()
    outcomes: list[Outcome] = []
    interrupted = False
    try:
        if args.jobs > 1:  # one line per case as it ends, in the order they end
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                futures = [pool.submit(run_case, case, args.out) for case in cases]
                try:
                    for future in as_completed(futures):
                        outcomes.append(future.result())
                        print(table(outcomes[-1:]).splitlines()[1], flush=True)
                except BaseException:
                    for future in futures:
                        future.cancel()
                    raise
        else:
            for case in cases:
                outcomes.append(run_case(case, args.out))
                print(table(outcomes[-1:]).splitlines()[1], flush=True)
    except KeyboardInterrupt:  # what finished is still reported and written
        interrupted = True
    order = {case.id: n for n, case in enumerate(cases)}
    outcomes.sort(key=lambda o: order[o.case.id])
    print(table(outcomes))
    bad = [o for o in outcomes if not o.ok]
    for o in bad:
        print("\n" + o.explain())
    print(f"\n{len(outcomes) - len(bad)}/{len(outcomes)} cases as expected in "
          f"{time.monotonic() - started:.0f} s"
          + (f" (interrupted: {len(cases) - len(outcomes)} cases not run)" if interrupted
             else ""))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{**asdict(o), "case": {**asdict(o.case), "id": o.case.id}}
                       for o in outcomes], fh, indent=2)
    return 130 if interrupted else 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
