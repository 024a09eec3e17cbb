"""The proof that no rule lost its test: a pytest plugin that switches each rule off in turn.

``pytest -p no:xdist --rule-sweep=all tests/unit tests/oracle`` runs every test once while
recording which rules the monitor reported a violation of (the only rules whose switch-off can
change that test's outcome: the hook drops violations, nothing else), then reruns the test
in-process once per such rule with that rule off (:func:`acp_model.model.check.rules_disabled`,
the test-only hook ``ACP_MODEL_DISABLED_RULES``; a rule judged via others is switched off with
them). A rerun that fails is a test of that rule. Every rule decided from the trace must have
at least one: the session fails otherwise and names the rules without one. ``first`` stops
trying a rule once a test failed without it (the quick version CI's fast tier runs);
``--rule-sweep-report`` writes the tests per rule as JSON.

What a test checks in a child process is switched off too (through the environment) but not
recorded, so such tests count only where they also report in-process.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.runner import CallInfo, runtestprotocol

from acp_model.model.check import CHECKS, rules_disabled
from acp_model.model.vocab import Level, Role
from acp_model.spec.rules import RULES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rule-sweep")
    group.addoption("--rule-sweep", choices=("first", "all"), default=None,
                    help="switch each rule off in turn and count the tests that then fail")
    group.addoption("--rule-sweep-report", default=None, metavar="PATH",
                    help="write {rule: [failing tests]} as JSON")


def pytest_configure(config: pytest.Config) -> None:
    mode = config.getoption("--rule-sweep")
    if mode:
        config.pluginmanager.register(Sweep(config, mode), "acpm-rule-sweep")


def swept_rules() -> set[str]:
    """Every rule some check decides from the trace, and every rule a strict reading reports
    under. The rules judged only from the agent process (:data:`Role.PROCESS`: it stays
    alive, its output stays bounded, it echoes the version) need a live agent: the live
    tier's hostile-agent tests prove those."""
    import acp_model.oracle.monitor  # noqa: F401  (registers the monitor's declarations)

    traced = [meta for meta in CHECKS.values() if meta.role is not Role.PROCESS]
    rules = {meta.rule for meta in traced}
    rules |= {choice for meta in traced for _, choice in meta.levels if choice in RULES}
    return rules


def switched_off(rule_id: str) -> tuple[str, ...]:
    """What "this rule's check off" means: the rule, and the rules it is judged via (SESS-10's
    close is judged as a cancel, CANCEL-06/-07)."""
    return (rule_id, *RULES[rule_id].judged_via)


def _passes(item: pytest.Item) -> bool:
    """Run ``item`` again without making reports (a failure's report, its traceback and the
    assertion's explanation, cost ten times the test): does it pass (or skip)?"""
    if not getattr(item, "_request", True):
        item._initrequest()  # type: ignore[attr-defined]
    ihook = item.ihook

    def ok(info: CallInfo[None]) -> bool:
        return info.excinfo is None or info.excinfo.errisinstance(pytest.skip.Exception)

    try:
        if not ok(CallInfo.from_call(lambda: ihook.pytest_runtest_setup(item=item), "setup")):
            return False
        return ok(CallInfo.from_call(lambda: ihook.pytest_runtest_call(item=item), "call"))
    finally:
        CallInfo.from_call(lambda: ihook.pytest_runtest_teardown(item=item, nextitem=item),
                           "teardown")
        if hasattr(item, "_request"):
            item._request = False  # type: ignore[attr-defined]
            item.funcargs = None  # type: ignore[attr-defined]


class Sweep:
    """Records the rules each test reports, reruns it per rule with that rule off."""

    def __init__(self, config: pytest.Config, mode: str) -> None:
        self.config = config
        self.mode = mode
        self.failing: dict[str, list[str]] = {}
        self.reruns = 0
        self.started = time.perf_counter()
        self._seen: set[str] | None = None
        self._patch_monitor()
        self._quiet_hypothesis()

    def _patch_monitor(self) -> None:
        from acp_model.oracle.store import ViolationStore

        original = ViolationStore.report
        sweep = self

        def report(store: ViolationStore, meta: Any, idx: int, message: str, *,
                   level: Level | None = None, **kwargs: Any) -> None:
            seen = sweep._seen
            if seen is not None and (level or meta.level(store.readings)) != Level.OFF:
                seen.add(meta.rule)
                seen.add(meta.rule_for(store.readings))
            original(store, meta, idx, message, level=level, **kwargs)

        ViolationStore.report = report  # type: ignore[method-assign]

    @staticmethod
    def _quiet_hypothesis() -> None:
        """No example database (a failure found with a rule off must not be replayed by the
        next normal run) and no shrinking (the sweep needs the failure, not its minimum)."""
        from hypothesis import Phase, settings

        settings.register_profile("acpm-rule-sweep", parent=settings.get_profile(
            settings._current_profile or "default"), database=None,  # type: ignore[attr-defined]
            phases=[Phase.explicit, Phase.reuse, Phase.generate])
        settings.load_profile("acpm-rule-sweep")

    @contextlib.contextmanager
    def _recording(self) -> Iterator[set[str]]:
        self._seen = seen = set()
        try:
            yield seen
        finally:
            self._seen = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        with self._recording() as seen:
            reports = runtestprotocol(item, nextitem=item, log=False)
        if all(r.passed for r in reports):
            wanted = swept_rules()
            candidates = {r for r in wanted if seen.intersection(switched_off(r))}
            for rule in sorted(candidates):
                if self.mode == "first" and self.failing.get(rule):
                    continue
                self.reruns += 1
                with rules_disabled(*switched_off(rule)):
                    passes = _passes(item)
                if not passes:
                    self.failing.setdefault(rule, []).append(item.nodeid)
        item.session._setupstate.teardown_exact(nextitem)
        for report in reports:
            ihook.pytest_runtest_logreport(report=report)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def missing(self) -> list[str]:
        return sorted(r for r in swept_rules() if not self.failing.get(r))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        missing = self.missing()
        path = self.config.getoption("--rule-sweep-report")
        if path:
            Path(path).write_text(json.dumps({
                "mode": self.mode, "reruns": self.reruns,
                "seconds": round(time.perf_counter() - self.started, 1),
                "tests_per_rule": {r: sorted(self.failing.get(r, []))
                                   for r in sorted(swept_rules())},
                "without_a_test": missing,
            }, indent=1) + "\n")
        if missing and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        rules = sorted(swept_rules())
        tr.section(f"rule sweep ({self.mode}): {len(rules)} rules, {self.reruns} reruns")
        counts = [f"{r} {len(self.failing.get(r, []))}" for r in rules]
        for n in range(0, len(counts), 8):
            tr.write_line("  ".join(counts[n:n + 8]))
        missing = self.missing()
        if missing:
            tr.write_line(f"no test fails with these rules off: {', '.join(missing)}", red=True)
