"""The terminal rendering of a report (rich): the violations table, rule counts and the verdict."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.markup import escape

from acp_model.report.links import rule_url
from acp_model.report.proof import ORDINALS, ordinal
from acp_model.spec.levels import Level, Standing, reported_standing

NBSP = "\u00a0"


def show(console: Console, text: str, style: str = "default", indent: str = "    ",
         hang: str = "    ", *, markup: bool = False) -> None:
    """``text`` wrapped to the terminal, its first line indented by ``indent`` and the rest by
    ``hang``, in ``style``, without rich's padding to the full width (output is piped into
    logs and files). Read as plain text unless ``markup`` says it carries rich tags. A
    no-break space (U+00A0) glues words that must stay on one line; it prints as a space. The
    text's own line breaks are kept (each of its lines wrapped on its own, at ``hang``)."""
    lines = "\n".join(
        textwrap.fill(part, max(40, console.width), initial_indent=indent if n == 0 else hang,
                      subsequent_indent=hang, break_on_hyphens=False, break_long_words=False)
        for n, part in enumerate(text.split("\n"))).replace(NBSP, " ")
    console.print(f"[{style}]{lines if markup else escape(lines)}[/]", soft_wrap=True,
                  highlight=False)


def counterexample_name(reproduced: int, replays: int, minimal: bool | None = None) -> str:
    """What a reported program may be called: minimal only once a fresh agent process showed
    the failure again and minimizing reached its fixpoint (``minimal``: None for a report
    that does not say, which is no proof); one that no replay reproduced is the run's own,
    the shortest it saw. Whether and how often it was replayed is the rate's to say
    (:func:`reproduction_phrase`), said once."""
    if reproduced:
        return "minimal counterexample" if minimal else "counterexample (not proven minimal)"
    return "unverified counterexample" if replays else "counterexample"


def proven_minimal(minimize: Any, steps: int, hits: int, runs: int) -> bool | None:
    """Whether a reported program of ``steps`` actions may be called minimal: minimizing
    reached its fixpoint with this very program, and the program reproduces at least half of
    its fresh-process replays (``hits``/``runs``: held to the recorded schedule, else
    free-running). Minimizing kept an action because the replay without it missed; against a
    program that itself mostly misses, such a miss is no evidence that the action is needed
    (None: a report from before minimizing was said)."""
    if not isinstance(minimize, Mapping):
        return None
    if not minimize.get("fixpoint") or minimize.get("other") \
            or minimize.get("steps") not in (None, steps):
        return False
    return runs == 0 or 2 * hits >= runs


def measured(ce: Mapping[str, Any]) -> tuple[int, int]:
    """The rate a report's counterexample is judged by: its held replays, else its free
    ones (conclusive runs only)."""
    if ce.get("replays"):
        return int(ce.get("reproduced") or 0), int(ce["replays"])
    return int(ce.get("free_reproduced") or 0), int(ce.get("free_replays") or 0)


# minimizing's stages (``fuzzing/shrink.py``'s ``Stage``), in words
STAGE_WORDS = {"search": "search for a program that reproduces",
               "late": "the actions written after the offending message",
               "silent": "the actions that wrote nothing",
               "spare": "a spare session the proof rests on, made by an action",
               "breaches": "the client's deliberate breaches",
               "session": "the other sessions' actions", "examples": "whole examples",
               "chunks": "delta debugging", "single": "one-at-a-time removal (1-minimal)",
               "content": "simpler content"}


class CutBy(StrEnum):
    """What ended minimizing before its fixpoint (a report's ``minimize.cut_by`` is its
    value, so reports written before it read the same)."""

    TRIALS = "trials"  # its allowance of trials was used up
    SECONDS = "seconds"  # its outer bound in seconds was reached
    UNSURE = "unsure"  # trials in a row whose replays were all inconclusive
    STOP = "stop"  # the run was stopped

    @property
    def words(self) -> str:
        """What stopped minimizing, for its reader."""
        return _CUT_WORDS[self]

    @classmethod
    def of(cls, value: Any) -> CutBy | None:
        """A report's ``cut_by`` (None: none, or a word no run writes)."""
        try:
            return cls(value)
        except ValueError:
            return None


_CUT_WORDS = {CutBy.TRIALS: "its trials ran out (--minimize-trials)",
              CutBy.SECONDS: "its outer bound in seconds was reached (--minimize-budget)",
              CutBy.UNSURE: "the agent failed on its own in each of its latest trials "
                            "(inconclusive replays: no evidence either way)",
              CutBy.STOP: "the run was stopped"}


def minimize_stopped(m: Mapping[str, Any]) -> str:
    """Where minimizing stopped short of its fixpoint, by what, and how far each stage got
    (a report's ``minimize`` entry; an older one without trials allowed or stages says less)."""
    text = f"minimizing stopped at its {m.get('stage')} stage after "
    if m.get("trials_allowed") is None:  # a report from before trials were the budget
        return f"{text}{m.get('seconds')} s"
    text += (f"{m.get('trials')} of its {m['trials_allowed']} trials and "
             f"{m.get('seconds', 0):g} s of its {m.get('budget', 0):g} s bound")
    cut = CutBy.of(m.get("cut_by"))
    if cut is not None:
        text += f" ({cut.words})"
    progress = minimize_progress(m)
    return f"{text}; {progress}" if progress else text


def minimize_progress(m: Mapping[str, Any]) -> str:
    """How far each stage of minimizing got, in words ("" for a report without stages)."""
    parts = []
    for name, stage in (m.get("stages") or {}).items():
        before, after = ([*(stage.get("actions") or []), None, None])[:2]
        size = (f"{before} to {after} actions" if before != after else f"{after} actions")
        state = "done" if stage.get("done") else "cut"
        parts.append(f"{STAGE_WORDS.get(name, name)}: {size} in {stage.get('trials')} "
                     f"trial(s), {state}")
    return "; ".join(parts)


@dataclass(frozen=True)
class ErrorReason:
    """The error a replay's inconclusive reason names: the client's ``n``-th request of
    ``method`` answered with ``code``. ``numbered``: in the words of a run before s12, "the
    agent answered session/load #1 with error", which reads as a message number (that run's
    code counted a -32800 after the client's cancel inconclusive too)."""

    method: str
    n: int
    code: Any  # as the agent wrote it (read back from words: an int)
    numbered: bool = False

    def said(self) -> str:
        """The error in a reason's words, naming the request by its place."""
        return f"answered the client's {ordinal(self.n)} {self.method} with error {self.code}"

    @classmethod
    def read(cls, why: str) -> ErrorReason | None:
        """The error a recorded reason's words name, in either wording (None: another
        reason, an exit)."""
        m = _ERROR_REASON.search(why)
        return None if m is None else _reason(m)


# the error as a reason's words name it, by place (s12 on: "answered the client's first
# session/load with error -32603") or by method and ordinal (before: "session/load #1")
_ERROR_REASON = re.compile(rf"answered (?:the client's ({'|'.join(ORDINALS)}|\d+th) (\S+)"
                           r"|(\S+) #(\d+)) with error (-?\d+)")


def _reason(m: re.Match[str]) -> ErrorReason:
    if m[1] is not None:
        n = ORDINALS.index(m[1]) + 1 if m[1] in ORDINALS else int(m[1].removesuffix("th"))
        return ErrorReason(m[2], n, int(m[5]))
    return ErrorReason(m[3], int(m[4]), int(m[5]), numbered=True)


def inconclusive_words(why: str) -> str:
    """A recorded reason a replay was inconclusive, naming the request by its place ("the
    client's first session/load") as the current code does, not as "#1"."""
    return _ERROR_REASON.sub(lambda m: _reason(m).said(), why)


# what a held replay held: the boundary schedule, and the agent's wall clock where it could
SCHEDULE_WORDS = {False: " under the recorded schedule", True: " under the recorded schedule "
                  "and clock"}


def reproduction_phrase(hits: int, runs: int, free: int = 0, free_runs: int = 0, *,
                        held: bool = True, unsure: int = 0, free_unsure: int = 0,
                        why: str | None = None, clock: bool = False) -> str:
    """How often fresh agent processes reproduced a counterexample: ``runs`` replays held to
    its recorded schedule (``held``: a report that says so; ``clock``: and to the agent's
    recorded wall clock, ``fuzzing/clock.py``) and ``free_runs`` free-running;
    "not replayed" when none ran (never "0/0"). ``unsure``, ``free_unsure``: the replays
    beside them that were inconclusive (the agent failed on its own: ``why``, the first)."""
    parts = []
    said = False

    def beside(n: int) -> str:
        nonlocal said
        if not n:
            return ""
        reason = f": {inconclusive_words(why)}" if why and not said else ""
        said = said or bool(reason)
        return f" ({n} more inconclusive{reason})"

    if runs or unsure:
        parts.append((f"reproduced {hits}/{runs}" if runs else "no conclusive replay")
                     + (SCHEDULE_WORDS[clock] if held else "") + beside(unsure))
    if free_runs or free_unsure:
        rate = f"{free}/{free_runs} free-running" if free_runs \
            else "no conclusive free-running replay"  # never "0/0"
        parts.append((rate if parts or not free_runs else f"reproduced {rate}")
                     + beside(free_unsure))
    return ", ".join(parts) if parts else "not replayed"


def rates_phrase(ce: Mapping[str, Any]) -> str:
    """A report's counterexample's :func:`reproduction_phrase` (a report older than the
    inconclusive replays' fields reads as none)."""
    return reproduction_phrase(int(ce.get("reproduced") or 0), int(ce.get("replays") or 0),
                               int(ce.get("free_reproduced") or 0),
                               int(ce.get("free_replays") or 0), held="free_replays" in ce,
                               unsure=int(ce.get("inconclusive") or 0),
                               free_unsure=int(ce.get("free_inconclusive") or 0),
                               why=ce.get("inconclusive_why"), clock=bool(ce.get("clock")))


def rule_markup(rule_id: str) -> str:
    """A rule ID in bold, linked to its entry in the docs' rule catalogue (a terminal that
    knows hyperlinks makes it clickable; elsewhere it is plain text)."""
    return f"[bold][link={rule_url(rule_id)}]{escape(rule_id)}[/link][/]"


def counterexample_line(ce: Mapping[str, Any], tail: str = "") -> str:
    """One counterexample of a report (a run's or a merged one) as the terminal states it: its
    rule, what it may be called, its length and its reproduction; ``tail`` says where it is
    kept or who found it. Rich markup, with every report value escaped."""
    steps = ce.get("steps", len(ce.get("actions") or []))
    minimize = ce.get("minimize")
    minimal = proven_minimal(minimize, steps, *measured(ce))
    name = counterexample_name(int(ce.get("reproduced") or 0), int(ce.get("replays") or 0),
                               minimal)
    if reported_standing(ce) == Standing.SHARED_ONLY:
        name = "warning: seen on a shared process only, not reproduced; its program"
    rate = rates_phrase(ce)
    return (f"{rule_markup(str(ce['rule']))}: {name} of {steps} client action(s), "
            f"{escape(rate)}" + (f" {escape(tail)}" if tail else ""))


def one_sided(one: Any, console: Console, limit: int = 50) -> None:
    """What a one-sided recording's check inferred of the client's side."""
    if not isinstance(one, Mapping):
        return
    inferred = one.get("inferred") or []
    show(console, f"one-sided: {one.get('agent_messages')} message(s) of the "
         f"{one.get('side')}; {len(inferred)} client message(s) inferred:", indent="")
    for item in inferred[:limit]:
        show(console, f"#{item['index']} {item['what']} (from {item['because']})")
    for mark, path in (one.get("placeholders") or {}).items():
        show(console, f"placeholder {mark} read as {path}")
    aside = one.get("set_aside") or []
    if aside:
        show(console, f"{len(aside)} finding(s) set aside: judged on what was inferred",
             indent="")


def render(report: dict[str, Any], console: Console, *, limit: int = 50) -> None:
    """Human summary: verdict, the violations, and rule coverage counts.

    Each violation is a block (level, rule, where; then its message indented): a table with a
    column for the message folded it to a fifth of an 80-column terminal.
    """
    violations = report["violations"]
    if violations:
        console.print(f"[bold]violations ({len(violations)})[/]\n")
        for v in violations[:limit]:
            at = f"#{v['index']}" + (f".{v['sub']}" if "sub" in v else "")
            style = "bold red" if v["level"] == Level.FAIL else "bold yellow"
            label = "FAIL" if v["level"] == Level.FAIL else "warn"
            if v.get("kind") == "liveness":
                label += " (liveness)"
            at = f"line {v['line']}" if "line" in v else at  # a one-sided recording's line
            where = f"at {at}" + (f", session {v['session']}" if v.get("session") else "") \
                + (f", in the run of {v['worker']}" if v.get("worker") else "")  # merged
            console.print(f"[{style}]{label}[/]  {rule_markup(v['rule'])}  {escape(where)}",
                          soft_wrap=True, highlight=False)
            show(console, v["message"])
            console.print()
        if len(violations) > limit:
            console.print(f"... and {len(violations) - limit} more (see the JSON report)")
    counts: dict[str, int] = {}
    for r in report["rules"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    s = report["summary"]
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    still_owed = report.get("open_at_end") or []
    for v in still_owed[:limit]:
        show(console, f"open at end: {v['rule']} #{v['index']}: {v['message']}", indent="")
    one_sided(report.get("one_sided"), console, limit)
    for gap in report.get("gaps") or []:
        show(console, f"messages #{gap['first']}-#{gap['last']} are not in the trace (a gap): "
             "what they held was not judged", indent="")
    spec = report.get("spec")
    if spec:
        how = "decided by --spec auto: " if spec.get("requested") == "auto" else ""
        show(console, f"spec: {spec['revision']} ({how}{spec['evidence']})", indent="")
        fit = spec.get("fit")
        if isinstance(fit, dict) and fit.get("summary"):
            show(console, f"revision fit: {fit['summary']}", indent="")
    show(console, f"rules: {parts}", indent="")
    colour = "green" if report["verdict"] == "pass" else "red"
    console.print(f"[bold {colour}]verdict: {report['verdict'].upper()}[/]  "
                  f"({s['failures']} failure(s), {s['warnings']} warning(s))")
