"""Single-message checks name what they read (``@check(reads=...)``), validated when defined;
the monitor's dispatch table is built from those declarations alone."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli import rule_map
from acp_model.model import messages, reducers
from acp_model.model.check import CHECKS, READERS, DefinitionError, check, readers
from acp_model.model.vocab import Reads, Role
from acp_model.model.wire_table import update_reads
from acp_model.oracle import machines, validate
from tests.helpers import update_plan, view_findings

PACKAGE = Path(__file__).resolve().parents[2] / "acp_model"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"role": Role.FINDING, "reads": ["usage"]}, "reads 'usage', which is no message kind"),
    ({"role": Role.FINDING, "reads": "plan_updates"}, "which is no message kind"),
    ({"role": Role.GUARD, "reads": [Reads.PLAN]}, "only a guard, is a method"),
    ({"role": Role.OBLIGATION}, "declared with declare"),
    ({"role": Role.FINDING, "reads": [Reads.PLAN, "plan"]}, "reads a message kind twice"),
])
def test_a_bad_reads_declaration_is_rejected_when_applied(kwargs: dict[str, Any],
                                                          message: str) -> None:
    with pytest.raises(DefinitionError, match=message):
        @check("PLAN-04", **kwargs)
        def bad(plan: Any, where: str, ctx: Any) -> Any:
            """Doc."""
            yield from ()


@check("USAGE-04", role=Role.FINDING, reads=["usage_update", Reads.PLAN])
def _declared(value: Any, where: str, ctx: Any) -> Any:
    """A check of this module: the table of a module holds what it declares."""
    yield from ()


def test_a_decision_names_its_role() -> None:
    """``role`` has no default: a decision is never a guard by accident."""
    with pytest.raises(TypeError, match="role"):
        check("PLAN-04")  # type: ignore[call-arg]


def test_a_guard_is_a_method_of_the_event_and_a_finding_is_not() -> None:
    class Part:
        @check("PLAN-04", role=Role.GUARD)
        def fine(self, ev: Any) -> bool:
            """Doc."""
            return True

    assert Part().fine(None)
    with pytest.raises(DefinitionError, match="only a guard"):
        @check("PLAN-04", role=Role.FINDING)
        def bad(self: Any, ev: Any) -> bool:
            """Doc."""
            return True


def test_a_declaration_is_all_the_dispatch_table_needs() -> None:
    assert readers(__name__) == {Reads.USAGE_UPDATE: (_declared,), Reads.PLAN: (_declared,)}


def test_every_single_message_check_reads_something_and_is_dispatched() -> None:
    """Every FINDING of model/messages.py is in the table, under each kind it declares."""
    dispatched = {(kind, meta.name) for rev in ("seed", "sdk-2.4.0", "v1")
                  for kind, pairs in messages.dispatch_table(rev).items() for _, meta in pairs}
    findings = [m for m in CHECKS.values()
                if m.module == messages.__name__ and m.role == Role.FINDING]
    assert all(m.reads for m in findings)
    for meta in findings:
        assert {(kind, meta.name) for kind in meta.reads} <= dispatched, meta.name


def test_a_revision_without_the_rule_leaves_its_check_out() -> None:
    """USAGE-04 is the seed's (sdk-2.4.0 allows other units): that revision never runs it."""
    names = {meta.name for _, meta in messages.dispatch_table("seed")[Reads.USAGE_UPDATE]}
    assert "currency_iso_4217" in names
    assert Reads.USAGE_UPDATE not in messages.dispatch_table("sdk-2.4.0")


def _ran(findings: messages.Findings) -> list[str]:
    return [meta.name for entry in findings.ran for _, meta in entry]


def _tallied(steps: Any) -> list[Any]:
    """The tallies of an update plan's part steps, in the order they run."""
    return [t for step in steps for t in (step.tally, *_tallied(step.parts))]


def _ran_update(update: dict[str, Any]) -> tuple[list[str], messages.Findings]:
    """The checks one update ran through its kind's plan (each step's tally counts the runs
    of its entries), and what they found."""
    plan = update_plan(update.get("sessionUpdate"))
    found = plan.check(update) or messages.Findings()
    ran = [meta.name for tally in (plan.tally, *_tallied(plan.parts)) for _ in range(tally.n)
           for group in tally.groups for _, meta in group]
    return ran, found


def test_an_update_reaches_the_checks_of_every_update_and_of_its_kind_only() -> None:
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 2,
             "cost": {"amount": 1, "currency": "ABC"}}
    ran, found = _ran_update(usage)
    assert ran == ["update_kind_known", "variants_of_another_revision", "currency_iso_4217"]
    assert [(m.rule, path) for m, path, _ in found.found] == [
        ("USAGE-04", "params/update/cost/currency")]
    assert _ran_update({"sessionUpdate": "_mine"})[0] == ["update_kind_known",
                                                          "variants_of_another_revision"]
    assert _ran_update({"sessionUpdate": ["state_update"]})[0] == [
        "update_kind_known", "variants_of_another_revision"]


def test_a_part_is_judged_wherever_a_message_carries_it() -> None:
    """The tool call a permission request names gets the tool call checks, at its own path."""
    params = {"options": [], "subject": {"type": "tool_call", "toolCall": {
        "toolCallId": "t", "status": "finished", "locations": [{"path": "rel.py"}],
        "content": [{"type": "content", "content": {"type": "video"}}]}}}
    found = messages.permission_request(params)
    assert _ran(found) == ["option_kinds_known", "option_ids_unique", "subject_known",
                           "command_cwd_absolute", "tool_status_known", "tool_kind_known",
                           "tool_paths_absolute", "tool_content_known", "diff_patch_consistent",
                           "diff_patch_given", "content_blocks_known"]
    assert [(m.rule, path) for m, path, _ in found.found] == [
        ("TOOL-14", "params/subject/toolCall/status"),
        ("TOOL-19", "params/subject/toolCall/locations/0/path"),
        ("ENUM-02", "params/subject/toolCall/content/0/content/type")]


def test_every_update_kind_member_is_a_wire_kind() -> None:
    assert all(kind == reads.value for kind, reads in update_reads().items())
    assert set(update_reads().values()) <= set(Reads)


def test_the_rule_map_shows_what_each_check_reads() -> None:
    table = rule_map.reads_markdown()
    assert "| `acp_model/model/messages.py:currency_iso_4217` | USAGE-04 | `usage_update` |" \
        in table
    assert "`session/request_permission request`" in table.split("subject_known")[1] \
        .split("\n")[0]


def test_the_view_checks_are_dispatched_by_their_declarations_too() -> None:
    """An update's plan hands it to the view-based checks reading its kind; the
    background checks are sdk-2.4.0's; a messageId reuse judged as a replay's is not judged
    again as a family change."""
    view = reducers.SessionView()

    def ran(update: dict[str, Any], rev: str = "seed", family: bool = True) -> list[str]:
        plan = update_plan(update.get("sessionUpdate"), rev)
        plan.check_view(view, update, not family)
        return [meta.name for tally in (plan.view_tally, plan.replayed_view_tally)
                for _ in range(tally.n) for group in tally.groups for _, meta in group]

    state = {"sessionUpdate": "state_update", "state": "running"}
    assert ran(state, "sdk-2.4.0") == [
        "background_on_every_update", "background_items_announced",
        "background_removed_when_final"]
    assert ran(state, "seed") == []
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
             "content": {"type": "text", "text": "x"}}
    assert ran(chunk) == ["family_kept"]
    assert ran(chunk, family=False) == []
    assert view_findings(view, chunk).found == []


def _decorated_checks() -> list[tuple[str, ast.FunctionDef, ast.Call]]:
    """Every ``@check(...)`` in the package's source, read as written (not as registered)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "check":
                    out.append((str(path.relative_to(PACKAGE.parent)), node, deco))
    return out


def _guards_named_by_machines() -> set[str]:
    names = set()
    for table in (machines.SESSION_TABLE, machines.CONNECTION_TABLE):
        names |= {chk.name for tr in table.transitions.values() for chk in tr.checks}
    return names


def test_every_check_declares_its_role_and_what_it_reads() -> None:
    """Read off the source, so a check no test imports is read too: each names its role; a
    finding names the message kinds it reads (the dispatch is built from them); a guard reads
    none, and runs where a machine's transition names it (so it is named by one)."""
    rule_map.decisions()  # registers every check
    guarded = _guards_named_by_machines()
    checks = _decorated_checks()
    written = {(where.removesuffix(".py").replace("/", "."), fn.name)
               for where, fn, _ in checks}
    tagged = {(m.module, m.name) for m in CHECKS.values()
              if m.role in (Role.GUARD, Role.FINDING) and m.module != validate.__name__
              and not m.module.startswith("tests.")}
    assert tagged <= written, sorted(tagged - written)  # (validate's are declare()d)
    for where, fn, deco in checks:
        keywords = {k.arg: k.value for k in deco.keywords}
        label = f"{where}:{fn.lineno} {fn.name}"
        assert "role" in keywords, f"{label}: no role"
        role = Role[ast.unparse(keywords["role"]).rsplit(".", 1)[-1]]
        if role is Role.FINDING:
            reads = keywords.get("reads")
            assert reads is not None and getattr(reads, "elts", True), \
                f"{label}: a finding that does not say what it reads"
        else:
            assert role is Role.GUARD and "reads" not in keywords, label
            assert fn.name in guarded, f"{label}: a guard no machine's transition names"
    assert all(m.reads for m in CHECKS.values() if m.role is Role.FINDING)


def test_a_methods_own_verdicts_are_planned_once_until_the_first_that_fails() -> None:
    """The checks that read the method alone are decided per (revision, direction, method):
    the router replays the plan's verdicts for every message of that method."""
    from acp_model.oracle.router import _plan_method

    def plan(direction: str, method: str, request: bool) -> tuple[bool, list[tuple[str, bool]]]:
        spec, verdicts, held = _plan_method("seed", direction, method, request)
        # the checks counted at once when every one held (none when one failed)
        assert held == (tuple(meta for meta, _ in verdicts)
                        if all(text is None for _, text in verdicts) else ())
        return spec is not None, [(meta.name, text is None) for meta, text in verdicts]

    assert plan("c2a", "session/prompt", True) == (True, [
        ("method_defined", True), ("method_direction", True), ("notification_without_id", True)])
    assert plan("a2c", "session/prompt", True) == (False, [
        ("method_defined", True), ("method_direction", False)])
    assert plan("c2a", "session/cancel", True) == (False, [
        ("method_defined", True), ("method_direction", True), ("notification_without_id", False)])
    assert plan("c2a", "no/such", False) == (False, [("method_defined", False)])
    assert plan("c2a", "_mine", False) == (False, [("method_defined", True)])


def test_a_check_returns_what_it_found_and_is_no_generator() -> None:
    """A finding returns None or its findings: a generator per check and message would be made
    even when nothing is found (the hot path of every message)."""
    rule_map.decisions()  # registers every check
    generators = [key for key, fn in READERS.items()
                  if inspect.isgeneratorfunction(fn) and not key.startswith("tests.")]
    assert generators == []


def _calls(fn: Any) -> set[str]:
    """The dotted names ``fn``'s body calls (``self.reopens.position``, ``replay.replaying``)."""
    tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(fn)))
    return {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}


def test_the_watchers_the_router_runs_on_every_update_are_declared() -> None:
    """What runs on every session/update besides the checks is a watcher that declares the
    kinds it keeps facts from (``@watches``), or a check run by its declaration: no
    undeclared work on the hot path."""
    from acp_model.model import closing, replay
    from acp_model.model.check import WATCHERS
    from acp_model.oracle import advertised, conversation, reopens, router, updates

    watchers = {
        "self.conversations.update": conversation.Conversations.update,
        "self.reopens.position": reopens.Reopens.position,
        "self.reopens.noted": reopens.Reopens.noted,
        "self.uses.update": advertised.AdvertisedUse.update,
        "replay.replaying": replay.replaying, "replay.replayed_history": replay.replayed_history,
        "replay.state_reported": replay.state_reported}
    calls = _calls(updates.UpdateRoute.route) | _calls(updates.UpdateRoute._place)
    from acp_model.oracle.monitor import Monitor

    routed = Monitor().router
    assert routed.update == routed.updates.route  # (session/update's handler: no frame between)
    assert set(watchers) <= calls
    for fn in watchers.values():
        assert WATCHERS[f"{fn.__module__}.{fn.__qualname__}"], fn
    assert "self.machines.closes.message" in _calls(router.Router._message)
    assert WATCHERS[f"{closing.__name__}.Closes.message"] == (Reads.REQUEST,
                                                             Reads.NOTIFICATION)
    # the router's own reads of an update are the dispatch of checks and the model's steps
    undeclared = {c for c in calls if c.startswith("self.") and c not in watchers} - {
        "self.shapes.findings", "self._unknown_session", "self.store.run",
        "self.store.run_entry", "self.store.ran", "self.reopens.around", "self._place",
        "self.machines.busy", "self.translate",
        "self.machines.derived", "self.machines.session_event",
        "self.rpc.open['c2a'].values"}  # (the open requests the watchers read)
    assert undeclared == set(), undeclared


def test_a_watcher_names_what_it_watches() -> None:
    from acp_model.model.check import watches

    with pytest.raises(DefinitionError, match="name the message kinds"):
        watches()
    with pytest.raises(DefinitionError, match="name the message kinds"):
        watches("session/update")  # type: ignore[arg-type]


def test_the_envelope_checks_are_run_from_their_declarations() -> None:
    """The JSON-RPC checks of every message, batch and record are the entries of the checks
    declaring those kinds, in definition order (nothing the router lists by hand)."""
    from acp_model.oracle import router, rpc

    entries = router.envelope_entries("seed")
    assert [meta.name for _, meta in entries[Reads.MESSAGE]] == [
        "is_object", "version_field", "method_is_string", "has_a_shape", "trace_context_kept"]
    assert [meta.name for _, meta in entries[Reads.RECORD]] == ["utf8", "only_messages"]
    assert [meta.name for _, meta in entries[Reads.BATCH]] == [
        "batch_not_empty", "no_empty_batch_reply"]
    declared = {m.name for m in CHECKS.values() if m.module == rpc.__name__
                and set(m.reads) & {Reads.MESSAGE, Reads.RECORD, Reads.BATCH,
                                    Reads.BATCH_ELEMENT}}
    assert declared == {meta.name for kind in entries.values() for _, meta in kind
                        if meta.module == rpc.__name__}
    for fn, _ in entries[Reads.MESSAGE]:  # none assumes another held: a list is judged once
        assert fn("c2a", []) == (None if fn is not rpc.is_object else fn("c2a", []))
