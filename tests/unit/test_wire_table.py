"""The wire table is complete: every method and update kind of the three revisions' schemas has
its row (with the revisions that define it, its direction and kind), and every model event a
wire form (acp_model/model/wire_table.py)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_model.model import classify, wire_table
from acp_model.model.vocab import EVENTS, ConnEvent, Event, Reads
from acp_model.spec import schema
from acp_model.spec.revisions import REVISIONS
from acp_model.trace import describe
from acp_model.trace.builder import TraceBuilder


@pytest.mark.parametrize("rev", sorted(REVISIONS))
def test_every_schema_method_has_a_row_that_matches_it(rev: str) -> None:
    rows = wire_table.messages()
    for method, spec in schema.method_table(rev).items():
        assert method in rows, f"{rev} defines {method}: the wire table has no row for it"
        row = rows[method]
        assert rev in row.revisions, f"{method}: {rev}'s schema defines it, its row omits {rev}"
        assert row.schema(rev) == spec
        assert row.sender == spec.directions, method
        assert row.request == (not spec.notification), method


def test_every_row_is_defined_by_the_revisions_it_names() -> None:
    for row in wire_table.MESSAGES:
        for rev in REVISIONS:
            assert (row.schema(rev) is not None) == (rev in row.revisions), (row.method, rev)


@pytest.mark.parametrize("rev", sorted(REVISIONS))
def test_every_update_kind_has_a_row(rev: str) -> None:
    rows = wire_table.updates()
    for kind in schema.known_values("session_update", rev):
        assert kind in rows, f"{rev} defines sessionUpdate {kind}: no row"
        assert rev in rows[kind].revisions, (kind, rev)
    for row in wire_table.UPDATES:
        assert (row.kind in schema.known_values("session_update", rev)) == (
            rev in row.revisions), (row.kind, rev)


def test_a_row_that_moves_no_machine_says_why() -> None:
    for row in wire_table.MESSAGES:
        if (not row.becomes and not row.answered) or row.route is None:
            assert row.why, f"{row.method} moves no machine and gives no reason"
        if row.route is None:
            assert not row.becomes and not row.answered and row.answer is None, row.method


def test_every_event_is_what_some_message_becomes() -> None:
    named = {e for row in wire_table.MESSAGES for e in (*row.becomes, *row.answered)}
    named |= {row.event for row in wire_table.UPDATES}
    named |= {row.v1_event for row in wire_table.UPDATES if row.v1_event is not None}
    named |= {classify.state_event(state) for state in ("running", "idle", "requires_action")}
    assert set(Event) <= named, set(Event) - named
    assert set(ConnEvent) <= named, set(ConnEvent) - named


def test_every_event_has_one_wire_form_written_by_the_builder() -> None:
    assert [f.event for f in wire_table.FORMS] == list(EVENTS)
    for form in wire_table.FORMS:
        assert getattr(TraceBuilder, form.write.__name__) is form.write, form.event
        assert form.label == form.event.value


def test_what_a_form_says_of_its_payload_agrees_with_its_messages() -> None:
    requests = {e for row in wire_table.MESSAGES if row.request for e in row.becomes}
    for form in wire_table.FORMS:
        assert not form.opens or form.event in requests, form.event  # a new request's id
        assert not form.spends or form.gate is not None, form.event  # spends a bound it names
    assert wire_table.forms()[Event.TOOL_UPDATE].fixed.update == \
        wire_table.updates()["tool_call_update"].tool  # (Payload.update of a tool call's report)


def test_handlers_are_the_rows_references_and_the_oracle_implements_each() -> None:
    """A row names its handler by reference; every declared handler is some row's, a
    request's handler routes requests only, and the monitor's router and answers implement
    each of theirs (a handler of the other class, or no handler, is refused)."""
    from acp_model.oracle.monitor import Monitor

    declared = {(cls, name) for cls in (wire_table.MessageHandlers, wire_table.AnswerHandlers)
                for name, member in vars(cls).items()
                if inspect.isfunction(member) and not name.startswith("_")}
    named = {(wire_table.MessageHandlers, row.route.__name__) for row in wire_table.MESSAGES
             if row.route is not None}
    named |= {(wire_table.AnswerHandlers, row.answer.__name__) for row in wire_table.MESSAGES
              if row.answer is not None}
    assert named == declared
    rows = wire_table.messages()
    assert rows["session/prompt"].route is wire_table.MessageHandlers.prompt
    monitor = Monitor()
    router, answers = monitor.router, monitor.router.answers
    assert wire_table.bound(rows["session/prompt"].route, router) == router.prompt
    assert wire_table.bound(rows["session/new"].answer, answers) == answers.created
    assert wire_table.bound(None, router) is None
    for cls, name in declared:  # each implemented by its own class, none by the other
        on, other = (router, answers) if cls is wire_table.MessageHandlers else (answers, router)
        assert wire_table.bound(getattr(cls, name), on) == getattr(on, name)
        with pytest.raises(TypeError, match="does not implement"):
            wire_table.bound(getattr(cls, name), other)
    with pytest.raises(TypeError, match="does not implement"):
        wire_table.bound(Monitor.feed, router)  # not a handler
    for row in wire_table.MESSAGES:
        if row.route is not None:  # a request's handler takes its id, a notification's not
            first = list(inspect.signature(row.route).parameters)[1]  # (after self)
            assert (first == "req_id") == row.request, row.method


def test_each_transcript_line_is_a_rows_and_describes_its_message() -> None:
    rows = wire_table.messages()
    assert set(describe.LINES) | set(describe.RESULT_LINES) <= set(rows)  # no line of nothing
    assert rows["session/prompt"].line is describe.prompt_line
    assert rows["session/new"].result_line is describe.session_id_line
    assert rows["session/cancel"].line is None and rows["session/cancel"].result_line is None
    line = describe.describe({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                              "params": {"sessionId": "s1", "prompt": [{"type": "text"}]}})
    assert line == "session/prompt id=4 [s1] (text)"
    records = TraceBuilder().handshake().new_session("s1").records
    rid = records[-1].msg["id"]
    assert describe.summarize(records)[-1] == ("a2c", f"result id={rid} (session/new) "
                                                      "sessionId=s1")


def test_every_update_kind_the_builder_writes_is_classified_as_its_row_says() -> None:
    from acp_model.model.views import SessionView
    from tests.helpers import update_plan

    for row in wire_table.UPDATES:
        if row.write is None or row.kind == "state_update" or row.v1_as is not None:
            continue
        tb = TraceBuilder()
        row.write(tb, "s1", *(["t1"] if row.tool else []))
        update = tb.records[-1].msg["params"]["update"]
        if update["sessionUpdate"] != row.kind:
            continue  # a builder method that writes several kinds (agent_message: chunks)
        event, _ = update_plan(row.kind).classify(0, update, SessionView())
        assert event == row.event, row.kind


def test_v1_is_a_translator_at_the_same_routes() -> None:
    """v1's prompt and tool call become the same session events as v2's acknowledgement,
    state update and tool_call_update: the translator derives them, the routes are shared."""
    from acp_model.oracle import dialects
    from acp_model.oracle.monitor import Monitor
    from acp_model.spec.readings import DEFAULT

    v1, v2 = Monitor(DEFAULT.parse(["SPEC=v1"])), Monitor()
    assert type(v1.router.dialect) is dialects.V1 and type(v2.router.dialect) is dialects.V2
    t1 = TraceBuilder().v1.handshake().v1.new_session("s1").prompt("s1", 10)
    t1.v1.tool_call("s1", "t1", status="in_progress")
    t2 = TraceBuilder().handshake().new_session("s1").prompt("s1", 10).accepted(10)
    t2.user_message("s1").running("s1").tool("s1", "t1", "in_progress", title="Edit")
    for monitor, trace in ((v1, t1), (v2, t2)):
        for record in trace.records:
            assert monitor.feed(record) == []
        assert monitor.machines.state("s1") == "running"
        assert "t1" in monitor.machines.sessions["s1"].perm_book.tools


def test_every_method_the_code_names_keys_its_row() -> None:
    """The methods the package names (``trace.methods.Method``) are the table's keys: each has
    its row, spelled by the enum alone."""
    from acp_model.trace.methods import Method

    rows = wire_table.messages()
    for method in Method:
        assert type(rows[method].method) is Method, method


def test_an_answer_is_owed_under_its_rows_obligation_from_its_sender_only() -> None:
    """Which rule an unanswered or twice-answered request breaks is its row's ``owed``: a
    prompt's is PROMPT-04, a method without one every request's (ACPM-ANSWER, RPC-01); a
    request from the side that does not send it (the agent's session/prompt) is owed only what
    every request is."""
    from tests.helpers import base, check

    def judged(t: TraceBuilder) -> dict[str, set[str]]:
        """Rule -> its messages (without what a liveness verdict adds: "before the end ...")."""
        out: dict[str, set[str]] = {}
        for v in check(t)["violations"]:
            out.setdefault(v["rule"], set()).add(v["message"].split(" before ")[0])
        return out

    misdirected = judged(base().rpc.request("a2c", "session/prompt", {"sessionId": "s1"}, "p1"))
    assert "the client never answered session/prompt (id 'p1')" in misdirected["ACPM-ANSWER"]
    assert "PROMPT-04" not in misdirected
    t = base().rpc.request("c2a", "session/list", {}, 5).rpc.result("a2c", 5, {"sessions": []})
    twice = judged(t.rpc.result("a2c", 5, {"sessions": []}).prompt("s1", 6))
    assert twice["RPC-01"] == {"session/list id 5 was answered twice"}
    assert twice["PROMPT-04"] == {"session/prompt (id 6) was never answered"}
    assert wire_table.owed("session/prompt", "a2c") is None
    assert wire_table.owed("session/prompt", "c2a") is wire_table.owed("session/prompt")


# Where a collection of sessionUpdate kinds may still be spelled out, and why: the reference
# agent imports nothing of the package (it stands for a third-party agent); the fuzzer's two
# lists are what its replay waits for, not facts of the kinds (tracked by issue 51).
_KIND_LISTS_ELSEWHERE = {
    "acp_model/agents/reference/agent.py", "acp_model/agents/reference/v1.py",
    "acp_model/fuzzing/crossings.py", "acp_model/fuzzing/schedule.py",
}


def test_no_parallel_table_of_update_kinds_outside_the_wire_table() -> None:
    """A fact of a sessionUpdate kind (its family, what a replay carries, late content ...) is
    a column of its row: no other module keeps a list, set or dict of two or more kinds."""
    import ast
    from pathlib import Path

    root = Path(wire_table.__file__).resolve().parents[2]
    kinds = set(wire_table.updates())
    found = []
    for path in sorted((root / "acp_model").rglob("*.py")):
        where = str(path.relative_to(root))
        if where in _KIND_LISTS_ELSEWHERE or path.name == "wire_table.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{where}:{line} {named}" for line, named in _kind_collections(tree, kinds)]
    assert not found, found


def _kind_collections(tree: ast.AST, kinds: set[str]) -> Iterator[tuple[int, list[str]]]:
    """The dicts keyed by, and the sets, tuples and lists of, two or more sessionUpdate kinds,
    spelled as strings or as their :class:`Reads` members; a check's own ``reads=[...]`` is
    its declaration, not a table."""
    from acp_model.model.vocab import Reads

    declared = {id(k.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
                for k in node.keywords if k.arg == "reads"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict | ast.Set | ast.Tuple | ast.List) \
                and id(node) not in declared:
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            named = [e.value if isinstance(e, ast.Constant) else Reads[e.attr].value
                     for e in elts if (isinstance(e, ast.Constant) and e.value in kinds)
                     or (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                         and e.value.id == "Reads" and e.attr in Reads.__members__
                         and Reads[e.attr].value in kinds)]
            if len(named) >= 2:
                yield node.lineno, named


def test_the_kind_table_scan_finds_strings_and_members_but_not_declarations() -> None:
    source = """
LATE = {"agent_message_chunk", "plan_update"}
FAMILY = {Reads.AGENT_MESSAGE: 1, Reads.AGENT_THOUGHT: 2}
PARTS = (Reads.PLAN, Reads.CONTENT)
@check("X", role=Role.FINDING, reads=[Reads.AGENT_MESSAGE, Reads.AGENT_MESSAGE_CHUNK])
def f(): pass
"""
    got = list(_kind_collections(ast.parse(source), set(wire_table.updates())))
    assert got == [(2, ["agent_message_chunk", "plan_update"]),
                   (3, ["agent_message", "agent_thought"])]


# The collections of two or more methods outside the table, the layer below it that writes and
# describes the wire (trace/) and the agents (a third party's wire), each pinned with why it is
# not a column: a rule's own subject (the methods the rule's text names), a revision's shape
# (which methods its baseline holds, which reopen it prefers), or the fuzzer's own services.
# A table keyed by method (a dict) is a row's column: none is left but the fuzzer profile's
# ``serves`` (which methods a capabilities object obliges the fuzzer's client to serve).
_METHOD_COLLECTIONS = {
    ("acp_model/fuzzing/editors.py", "Dict", ("fs/read_text_file", "fs/write_text_file")),
    ("acp_model/fuzzing/services.py", "Tuple", ("fs/read_text_file", "fs/write_text_file")),
    ("acp_model/fuzzing/services.py", "Tuple", ("terminal/create", "terminal/kill",
                                                "terminal/output", "terminal/release",
                                                "terminal/wait_for_exit")),
    ("acp_model/model/capabilities.py", "Tuple", ("fs/read_text_file",
                                                  "fs/write_text_file")),  # SESS-17
    ("acp_model/model/offered.py", "Set", ("session/close", "session/list", "session/load",
                                           "session/resume", "session/set_config_option",
                                           "session/set_mode")),  # SESS-14
    ("acp_model/model/wire_shapes.py", "Set", ("session/close", "session/list",
                                               "session/resume")),  # v2's baseline
    ("acp_model/model/wire_shapes.py", "Tuple", ("session/load", "session/resume")),  # x2
    ("acp_model/oracle/answers.py", "Tuple", ("session/load", "session/resume")),
    # the fuzzer's stamp of its own writes: a prompt opens a turn, the two cancels
    # are what it stamps; the oracle reads the stamp, not the methods
    ("acp_model/fuzzing/model_window.py", "Tuple", ("$/cancel_request", "session/cancel",
                                                    "session/prompt")),
}
_METHODS_SPELLED = ("acp_model/model/wire_table.py", "acp_model/trace/", "acp_model/agents/")


def _method_collections(tree: ast.AST, methods: set[str]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """The dicts keyed by, and the sets, tuples and lists of, two or more methods (a string or
    a ``Method`` member)."""
    from acp_model.trace.methods import Method

    for node in ast.walk(tree):
        if isinstance(node, ast.Dict | ast.Set | ast.Tuple | ast.List):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            named = sorted(str(e.value) if isinstance(e, ast.Constant) else
                           str(Method[e.attr]) for e in elts
                           if (isinstance(e, ast.Constant) and e.value in methods)
                           or (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                           and e.value.id == "Method"))
            if len(named) >= 2:
                yield type(node).__name__, tuple(named)


def test_no_parallel_table_of_methods_outside_the_wire_table() -> None:
    """A fact of a method (its handler, the capability it needs, what its answer implies) is a
    column of its row: no module keeps a new table keyed by methods, or a new collection of
    them, beyond the pinned ones (each a rule's subject or a revision's shape, not a column)."""
    root = Path(wire_table.__file__).resolve().parents[2]
    methods = set(wire_table.messages())
    found = set()
    for path in sorted((root / "acp_model").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where.startswith(_METHODS_SPELLED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found |= {(where, *hit) for hit in _method_collections(tree, methods)}
    assert found - _METHOD_COLLECTIONS == set(), "a new table of methods: make it a column"
    assert _METHOD_COLLECTIONS - found == set(), "gone: unpin it"


def test_the_method_scan_finds_a_table_keyed_by_methods() -> None:
    source = """
CAPS = {"fs/read_text_file": ("fs",), Method.LOAD: ("loadSession",)}
ONE = {"fs/read_text_file": 1, "other": 2}
"""
    got = list(_method_collections(ast.parse(source), set(wire_table.messages())))
    assert got == [("Dict", ("fs/read_text_file", "session/load"))]


# Where a sessionUpdate kind may be spelled: the table; the layer below it that writes and
# describes the wire (the trace builder, the transcript lines); the agents, which write the wire
# as a third party would; and the fuzzer's crossing labels (see _KIND_LISTS_ELSEWHERE).
_KINDS_SPELLED = ("acp_model/model/wire_table.py", "acp_model/trace/", "acp_model/agents/",
                  "acp_model/fuzzing/crossings.py")


def _discriminates_another_union(node: ast.expr) -> bool:
    """``x.get("type")`` or ``x["type"]``: a comparison with a content, subject or background
    item's type ("tool_call" is one, and a sessionUpdate kind too)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        key = node.args[0] if node.func.attr == "get" and node.args else None
    else:
        key = node.slice if isinstance(node, ast.Subscript) else None
    return isinstance(key, ast.Constant) and key.value == "type"


def _kind_literals(tree: ast.AST, kinds: set[str]) -> Iterator[tuple[int, str]]:
    """The kinds a module spells as one: compared with a value, or a ``sessionUpdate`` written."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_discriminates_another_union(side) for side in sides):
                continue
            for side in sides:
                for c in ast.walk(side):
                    if isinstance(c, ast.Constant) and c.value in kinds:
                        yield c.lineno, c.value
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "sessionUpdate" \
                        and isinstance(value, ast.Constant):
                    yield value.lineno, value.value


def test_no_update_kind_is_spelled_outside_the_wire_table() -> None:
    """A branch on a sessionUpdate kind (``kind == "state_update"``) or an update written by
    hand is a per-kind fact outside its row: the code asks the row (``wire_table.updates()``,
    ``state_kinds()``, ``reported_state``) or the kind's typed name (its :class:`Reads`
    member), as ``test_every_method_the_code_names_keys_its_row`` does for methods."""
    root = Path(wire_table.__file__).resolve().parents[2]
    kinds = set(wire_table.updates())
    found = []
    for path in sorted((root / "acp_model").rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where.startswith(_KINDS_SPELLED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{where}:{line} {kind!r}" for line, kind in _kind_literals(tree, kinds)]
    assert not found, found


def test_the_kind_scan_finds_a_branch_and_a_hand_written_update() -> None:
    """The scan above sees what it forbids, and lets a content block's type pass."""
    source = """
if kind == "state_update": pass
u = {"sessionUpdate": "plan_update"}
if block.get("type") == "tool_call": pass
"""
    got = list(_kind_literals(ast.parse(source), set(wire_table.updates())))
    assert got == [(2, "state_update"), (3, "plan_update")]


def test_the_rows_columns_agree_with_their_kinds() -> None:
    """A row's message kind is its own kind's :class:`Reads` member, a family is only a message
    update's, and late content is a message's chunk."""
    for row in wire_table.UPDATES:
        assert row.reads is None or row.reads.value == row.kind, row.kind
        assert row.family is None or row.kind.startswith(("user_", "agent_")), row.kind
        assert not row.late or (row.family is not None and row.kind.endswith("_chunk")), row.kind
    assert set(wire_table.families()) <= wire_table.replayed_kinds()


def test_the_capability_a_method_needs_is_its_rows_for_its_sender() -> None:
    """INIT-16 and SESS-16 read a method's capability from its row, for the side that sends
    it only: a client's misdirected terminal request needs nothing of the agent."""
    from acp_model.model import capabilities, wire_shapes

    assert wire_table.advertised_by("terminal/create", "a2c") == ("terminal",)
    assert wire_table.advertised_by("terminal/create", "c2a") == ()
    assert wire_table.advertised_by("session/resume", "c2a") == ("sessionCapabilities",
                                                                 "resume")
    assert wire_table.advertised_by(None, "c2a") == ()
    from acp_model.model.answering import Asking, Told

    # the client methods INIT-16 judges are the rows that declare its kind (``use_reads``)
    client = {m.method for m in wire_table.MESSAGES if m.use_reads == Reads.CLIENT_METHOD_USE}
    assert wire_table.advertised_methods("a2c") == client
    assert wire_shapes.SHAPES[1].advertised_methods == {"session/load", "session/resume",
                                                         "session/close"}
    assert wire_shapes.SHAPES[2].advertised_methods == frozenset()
    asked = Asking("fs/write_text_file", {}, None, Told(client_caps={"fs": {}}),
                   wire_shapes.SHAPES[1])
    assert capabilities.client_method_advertised(asked) is not None
    close = Asking("session/close", {}, None, Told(agent_caps={"sessionCapabilities": {
        "close": {}}}), wire_shapes.SHAPES[1])
    assert capabilities.session_method_advertised(close) is None
