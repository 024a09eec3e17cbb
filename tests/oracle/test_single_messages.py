"""Single-message checks judged by the revision's own text, one root cause one violation
(docs/revision-audit.md)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli import rule_map
from acp_model.model.check import CHECKS, Role
from acp_model.oracle import shapes
from acp_model.spec.readings import DEFAULT
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, check, failed_rules, turn_start

SEED = DEFAULT
SDK = DEFAULT.parse(["SPEC=sdk-2.4.0"])
AUDIT = (Path(__file__).resolve().parents[2] / "docs" / "revision-audit.md").read_text()


def _usage(cost: dict[str, Any] | None = None, **fields: Any) -> TraceBuilder:
    upd: dict[str, Any] = {"sessionUpdate": "usage_update", "used": 5, "size": 10, **fields}
    if cost is not None:
        upd["cost"] = cost
    return turn_start(base(), 10).update(S, upd).idle(S, "end_turn")


def _violations(t: TraceBuilder, readings: Any) -> list[tuple[str, int]]:
    return [(v["rule"], v["index"]) for v in check(t, readings)["violations"]
            if v["rule"] != "SDK-RECEIPT-01"]  # the seed-style turn has no receipt


def test_every_single_message_check_is_in_the_audit() -> None:
    for module in rule_map.DECIDING_MODULES:
        importlib.import_module(module)
    findings = {m.name for m in CHECKS.values() if m.role == Role.FINDING
                and m.module.rsplit(".", 1)[-1] in ("messages", "rpc", "validate")}
    audited = set(re.findall(r"`([a-z0-9_]+)`", AUDIT))
    assert findings - audited == set()


def test_a_lower_case_currency_is_one_violation() -> None:
    """It broke the seed schema's pattern, the anyOf around the cost and the ISO list."""
    t = _usage({"amount": 1, "currency": "usd"})
    assert _violations(t, SEED) == [("USAGE-04", 8)]


@pytest.mark.parametrize("currency", ["credits", "usd", "ABC"])
def test_any_unit_is_a_currency_in_the_newer_revision(currency: str) -> None:
    assert _violations(_usage({"amount": 1, "currency": currency}), SDK) == []


def test_the_seed_still_wants_an_iso_code() -> None:
    assert _violations(_usage({"amount": 1, "currency": "credits"}), SEED) == [("USAGE-04", 8)]
    assert _violations(_usage({"amount": 1, "currency": "ABC"}), SEED) == [("USAGE-04", 8)]
    assert _violations(_usage({"amount": 1, "currency": "EUR"}), SEED) == []


def test_a_flood_of_one_schema_failure_keeps_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the diagnosis cap a failure is counted, never reported as ACPM-SCHEMA: the same
    cause would be two failures, and the second would not reproduce in a fresh process."""
    monkeypatch.setattr(shapes, "MAX_DIAGNOSES_PER_DEF", 2)
    t = turn_start(base(), 10)
    for _ in range(5):
        t.update(S, {"sessionUpdate": "usage_update", "used": 5})
    report = check(t.idle(S, "end_turn"))
    assert {v["rule"] for v in report["violations"]} == {"USAGE-02"}
    assert len(report["violations"]) == 2


def test_diff_paths_are_the_paths_of_its_changes() -> None:
    def diff(change: dict[str, Any]) -> TraceBuilder:
        return turn_start(base(), 10).update(S, {
            "sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Edit",
            "status": "pending", "content": [{"type": "diff", "changes": [change]}]}) \
            .idle(S, "end_turn")

    assert failed_rules(check(diff({"operation": "modify", "path": "src/a.py"}))) == {"TOOL-19"}
    moved = diff({"operation": "move", "oldPath": "a.py", "path": "/w/b.py"})
    assert "oldPath 'a.py'" in check(moved)["violations"][0]["message"]
    assert failed_rules(check(diff({"operation": "modify", "path": "/w/a.py"}))) == set()
    assert failed_rules(check(diff({"operation": "modify", "path": "C:\\w\\a.py"}))) == set()


def test_a_line_0_location_breaks_tool_19_only_in_the_newer_revision() -> None:
    t = turn_start(base(), 10).update(S, {
        "sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Read",
        "status": "pending", "locations": [{"path": "/w/a.py", "line": 0}]}).idle(S, "end_turn")
    assert ("TOOL-19", 8) in _violations(t, SDK)
    assert _violations(t, SEED) == []


def test_a_null_request_id_is_refused_only_in_the_newer_revision() -> None:
    t = base()
    t.rpc.a2c({"jsonrpc": "2.0", "id": None, "method": "_x/ping", "params": {}})
    t.rpc.c2a({"jsonrpc": "2.0", "id": None, "result": {}})
    assert failed_rules(check(t, SEED)) == set()
    assert "RPC-01" in failed_rules(check(t, SDK))
