"""The conformance items: one pytest item per rule group, failing with that group's
counterexamples."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp_model.fuzzing.recorder import Found, Recorder


import shlex
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest

from acp_model.pytest_plugin.run import AcpRun, _options, run_once
from acp_model.report.text import counterexample_name, proven_minimal
from acp_model.spec.rules import group_of, rule_groups, strength_shown

NODE_NAME = "acp-model"


class AcpWarning(UserWarning):
    """A SHOULD-level finding about the agent under test (a failure only with ``-W error``)."""


def describe_failures(found: Mapping[str, Found], rules: Iterable[str] | None = None,
                      files: dict[str, dict[str, str]] | None = None) -> str:
    """Recorded failures (``Recorder.found``, optionally only ``rules``) as conformance text.

    Each rule: its strength, statement and citation, what the agent did, the minimal client
    program and its reproduction rate, the offending message, and the files if written.
    """
    from acp_model.fuzzing.artifacts import counterexample_records, reproduction_text
    from acp_model.fuzzing.program import Program
    from acp_model.spec.rules import RULES
    from acp_model.trace.describe import summarize

    wanted = set(rules) if rules is not None else None
    lines: list[str] = []
    for rule_id, one in sorted(found.items()):
        if wanted is not None and rule_id not in wanted:
            continue
        rule = RULES[rule_id]
        lines += [f"{rule_id} ({strength_shown(rule_id, rule.effective_strength())}, "
                  f"{rule.binds}): {rule.statement}",
                  f"  source: {rule.citation}",
                  f"  what happened: {one.violation.message}"]
        rate = f", {reproduction_text(one)}"  # "not replayed" when none ran
        if one.actions:
            minimal = proven_minimal(one.minimize or None, len(one.actions),
                                     *((one.reproduced, one.replays) if one.replays
                                       else (one.free_reproduced, one.free_replays)))
            lines.append(f"  {counterexample_name(one.reproduced, one.replays, minimal)}, "
                         f"{len(one.actions)} client action(s){rate}:")
            steps = Program.of(one.actions).describe()
            lines += [f"    {n}. {text}" for n, text in enumerate(steps, 1)]
        else:
            lines.append("  no client action needed (the agent fails while initializing)"
                         + rate)
        records, offending = counterexample_records(one)
        described = summarize(records)
        if 0 <= offending < len(described):
            direction, text = described[offending]
            arrow = "client -> agent" if direction == "c2a" else "agent -> client"
            lines.append(f"  offending message ({arrow}): {text[:300]}")
        lines += [f"  note: {note}" for note in one.notes]
        where = (files or {}).get(rule_id)
        if where:
            folder = Path(where["replay.json"]).parent
            lines.append(f"  files: {folder}/ (replay: acp-model replay "
                         f"{folder / 'replay.json'})")
        lines.append("")
    return "\n".join(lines).rstrip()


def emit_warnings(recorder: Recorder, group: str | None = None) -> None:
    """Each recorded warning (of ``group``) as an :class:`AcpWarning` in pytest's summary."""
    for (rule_id, check), v in sorted(recorder.warnings.items(), key=lambda kv: str(kv[0])):
        if group is None or group_of(rule_id) == group:
            count = recorder.warning_counts[(rule_id, check)]
            warnings.warn(AcpWarning(f"{rule_id} ({strength_shown(rule_id, v.strength)}): "
                                     f"{v.message} (seen {count} time(s))"), stacklevel=3)


class AcpGroupFailure(Exception):
    """A rule group failed: the message is the conformance text, shown without a traceback."""


def check_group(run: AcpRun, group: str) -> None:
    """Fail, warn or skip one rule group of the run (what ``test_acp[GROUP]`` does)."""
    result = run.result
    failed = [r for r in run.failed_rules if group_of(r) == group]
    emit_warnings(result.recorder, group)
    if failed:
        head = (f"{group}: {len(failed)} rule(s) failed against {shlex.join(result.cfg.argv)} "
                f"(profile {run.profile.name}, {result.recorder.examples} examples)")
        raise AcpGroupFailure(head + "\n\n" + describe_failures(result.recorder.found, failed,
                                                                    run.files))
    if result.unusable or result.problem:
        _skip(f"the agent could not be fuzzed: {result.unusable or result.problem}")
    if not any(r["exercised"] for r in run.rules_of(group)):
        _skip(f"no {group} rule was exercised in this run")


def _skip(reason: str) -> NoReturn:
    """Skip, reported at the test (``acp-model``), not at this line of the plugin."""
    exc = pytest.skip.Exception(reason)
    exc._use_item_location = True  # what pytest's own skip markers do
    raise exc


def _each_revision(readings: Any) -> list[Any]:
    """The readings under every revision (a revision that contradicts them is left out)."""
    from acp_model.spec.readings import ReadingError
    from acp_model.spec.revisions import NAMES

    out = []
    for name in NAMES:
        try:
            out.append(readings.parse([f"SPEC={name}"]))
        except ReadingError:
            continue
    return out


class AcpConformance(pytest.File):
    """The virtual file ``acp-model`` that holds one test per rule group."""

    def collect(self) -> Iterator[pytest.Item]:
        opts = _options(self.config)
        groups = rule_groups(opts.readings if opts is not None else None)
        if opts is not None and opts.spec == "auto":  # any revision may judge
            for readings in _each_revision(opts.readings):
                groups += [g for g in rule_groups(readings) if g not in groups]
        for group in groups:
            yield AcpGroupItem.from_parent(self, name=f"test_acp[{group}]", group=group)


class AcpGroupItem(pytest.Item):
    """``test_acp[GROUP]``: the group's verdict from the session's fuzz run."""

    def __init__(self, *, group: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.group = group
        self.add_marker("acp")
        opts = _options(self.config)
        if self.config.pluginmanager.hasplugin("xdist"):
            # ``--dist loadgroup`` keeps every group on one worker, hence one fuzz run.
            self.add_marker(pytest.mark.xdist_group(NODE_NAME))
        if opts is not None and self.config.pluginmanager.hasplugin("timeout"):
            p = opts.profile
            # Generation, shrinking, replays: generous, a guard against a wedged run only.
            self.add_marker(pytest.mark.timeout(
                p.time_budget + p.shrink_budget * 8 + opts.deadline * 20 + 120))

    def runtest(self) -> None:
        check_group(run_once(self.config), self.group)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        if isinstance(excinfo.value, AcpGroupFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        # A line number is required where pytest reports a skip at the item (see _skip).
        return self.path, 0, f"acp-model rule group {self.group}"
