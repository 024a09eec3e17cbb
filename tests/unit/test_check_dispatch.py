"""Every finding is run by the pipeline from its declaration, or from one of the pinned hand
dispatches below, each with the reason it cannot be a table entry (issue 51 step 2).

A hand dispatch is any place the package names a finding's function other than to read its
metadata (``meta_of``, ``allows_of``): a call through ``ViolationStore.run``, a loop over a
tuple of checks, a list of steps. The test reads the source, so a new one fails here until it
is either turned into a declaration the pipeline dispatches or pinned with its reason; a pin
that no longer matches the source fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from acp_model.cli import rule_map
from acp_model.model import capabilities, messages, reducers, replay_order, wire_table
from acp_model.model.check import READERS, WATCHERS, dispatch, dispatch_everywhere, meta_of
from acp_model.model.vocab import Reads
from acp_model.oracle import router, rpc

PACKAGE = Path(__file__).resolve().parents[2] / "acp_model"
REVISIONS = ("seed", "sdk-2.4.0", "v1")

# Why a finding is run by hand. Each reason is about what the check reads, not about speed.
GATE = ("its verdict decides whether the message is read on: the next check looks the id "
        "up among the open requests, which an id that is no id (a list, an object) cannot be")
GATED = ("judges every response past the id gate (response_id_valid), matched to an open "
         "request or not: the one check between the gate and the match, which the checks of "
         "an answer (Reads.ANSWER, the row's answer_reads) follow")
CHOOSES = ("its verdict chooses the event the answer fires (an initialize result naming "
           "another version than it speaks: INITIALIZED, not INITIALIZED_OTHER_VERSION), so "
           "it runs where the handler chooses that event")
KEPT = ("judges an answer by what another part keeps of the session since its request (the "
        "conversation's record of the user message a receipt names), looked up only for a "
        "receipt: run where that record is read")
REPEATED = ("judges a response no open request awaits, by what the connection answered "
            "before (the connection's record of answered ids): run where the answer is "
            "found unmatched")
WATCHED = ("judges a sequence a declared watcher (@watches) keeps: the close or the session "
           "it follows, known only to the watcher that saw its start")
WINDOW = ("judges a reopen's replay as a whole, when its window closes (the client moves "
          "on or the trace ends): no single message carries it")
UNKNOWN = ("judges a message naming a session no response named, decided by the router's "
           "unknown-session rule (a session/new still open: a warning, else a machine event)")
REPLAYED = ("judges an update by the replay it belongs to (the open reopen's record of "
            "replayed ids), known only while that replay is open")
FILTER = ("not run here: a dispatch entry without it, for a messageId a replay reused (judged "
          "once, as the replay's)")

# (file, enclosing function, check) -> why it is not dispatched from a table
HAND: dict[tuple[str, str, str], str] = {
    ("model/closing.py", "message", "nothing_after_close"): WATCHED,
    ("model/closing.py", "response", "work_ended_before_close"): WATCHED,
    ("model/closing.py", "response", "close_ends_held_prompt"): WATCHED,
    ("model/offered.py", "response", "offered_method_works"): WATCHED,
    ("model/offered.py", "response", "session_not_lost"): WATCHED,
    ("model/reducers.py", "_without_family", "family_kept"): FILTER,
    ("oracle/answers.py", "response", "response_id_valid"): GATE,
    ("oracle/answers.py", "response", "result_xor_error"): GATED,
    ("oracle/answers.py", "initialized", "speaks_negotiated_version"): CHOOSES,
    ("oracle/answers.py", "prompt_answered", "receipt_not_held_back"): KEPT,
    ("oracle/answers.py", "_unmatched", "answers_open_request"): REPEATED,
    ("oracle/answers.py", "_unmatched", "cancel_not_answered"): REPEATED,
    ("oracle/answers.py", "_unmatched", "notifications_unanswered"): REPEATED,
    ("oracle/answers.py", "_unmatched", "batch_answered_per_request"): REPEATED,
    ("oracle/conversation.py", "close", "conversation_replayed"): WINDOW,
    ("oracle/router.py", "_request", "request_id_valid"): GATE,
    ("oracle/router.py", "_request", "request_id_fresh"): GATE,
    ("oracle/router.py", "_unknown_session", "session_named_once_created"): UNKNOWN,
    ("oracle/updates.py", "route", "replayed_ids_unique"): REPLAYED,
}


def _metadata_read(node: ast.AST, parent: ast.AST | None) -> bool:
    """``meta_of(fn)`` / ``allows_of(fn)``: the check's metadata, not a run of it."""
    return isinstance(parent, ast.Call) and node in parent.args and \
        getattr(parent.func, "id", getattr(parent.func, "attr", None)) in ("meta_of",
                                                                             "allows_of")


def hand_dispatches() -> set[tuple[str, str, str]]:
    """Where the package's source names a finding's function: (file, enclosing function,
    check), by the names the findings carry."""
    rule_map.decisions()  # registers every check
    names = {key.rsplit(".", 1)[1] for key in READERS if key.startswith("acp_model.")}
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            name = node.attr if isinstance(node, ast.Attribute) else \
                node.id if isinstance(node, ast.Name) else None
            if name not in names or not isinstance(getattr(node, "ctx", None), ast.Load):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Attribute) or _metadata_read(node, parent):
                continue  # (a longer chain: its last name is what it names)
            scope = parent
            while scope is not None and not isinstance(scope, ast.FunctionDef | ast.ClassDef):
                scope = parents.get(scope)
            out.add((str(path.relative_to(PACKAGE)), scope.name if scope else "<module>", name))
    return out


# The kinds of an exchange: no table of a module's single-message checks is run on them (a
# message's payload is judged by its own kind); the router's method plan runs rpc's.
EXCHANGE = frozenset({Reads.REQUEST, Reads.REQUEST_ID, Reads.NOTIFICATION, Reads.RESPONSE,
                      Reads.ANSWERED_AGAIN})


def dispatched() -> set[str]:
    """The findings the pipeline runs from their declarations: the envelope's entries, the
    method plans, the single-message tables, the view's, the replay order's and the
    answers' (by the answered request's kind) and the advertised uses' (by the row of the
    request or the update)."""
    out = set()
    for rev in REVISIONS:
        payloads = {kind: entry for kind, entry in messages.dispatch_table(rev).items()
                    if kind not in EXCHANGE}  # (their MESSAGE entry: the envelope's)
        tables = [router.envelope_entries(rev), payloads, dispatch(reducers.__name__, rev),
                  {Reads.UPDATE: replay_order.table(rev)},
                  {kind: entry for kind, entry in dispatch(rpc.__name__, rev).items()
                   if kind in (Reads.REQUEST, Reads.NOTIFICATION,  # router._plan_method
                               Reads.ANSWERED_AGAIN)},  # Answers._unmatched
                  {kind: entry for kind, entry in dispatch_everywhere(rev).items()
                   if kind in wire_table.answer_kinds()  # Answers._judge
                   or kind in wire_table.use_kinds()}]  # AdvertisedUse.request, .update
        out |= {f"{meta.module}.{meta.name}" for table in tables for entry in table.values()
                for _, meta in entry}
    return out


def test_no_finding_is_run_by_hand_outside_the_pinned_list() -> None:
    found = hand_dispatches()
    assert found - set(HAND) == set(), "a new hand dispatch: declare it, or pin it with why"
    assert set(HAND) - found == set(), "a pinned hand dispatch the source no longer has"


def test_every_finding_is_dispatched_or_pinned_and_not_both() -> None:
    """A finding no table holds and no pinned site runs would never judge anything; one both
    hold would judge a message twice."""
    rule_map.decisions()
    ours = {key for key in READERS if key.startswith("acp_model.")}
    by_name = {key.rsplit(".", 1)[1]: key for key in ours}
    hand = {by_name[name] for _, _, name in HAND}
    tables = dispatched()
    filtered = {by_name[name] for (_, _, name), why in HAND.items() if why == FILTER}
    assert ours - tables - hand == set(), "a finding nothing runs"
    assert (tables & hand) - filtered == set(), "a finding run from a table and by hand"


def test_the_method_plan_is_its_declarations() -> None:
    """The checks a request's or notification's method gets are the rpc checks reading that
    kind, in definition order (the first says whether the method is defined)."""
    entry = dispatch(rpc.__name__, "seed")[Reads.REQUEST]
    assert [meta.name for _, meta in entry] == ["method_defined", "method_direction",
                                                "notification_without_id"]
    assert meta_of(rpc.request_id_valid).reads == (Reads.REQUEST_ID,)


def test_an_answer_given_twice_gets_each_obligations_check_from_its_declaration() -> None:
    entry = dispatch(rpc.__name__, "seed")[Reads.ANSWERED_AGAIN]
    assert [meta.rule for _, meta in entry] == ["PROMPT-04", "PERM-12", "RPC-01"]


def test_an_answer_gets_the_checks_of_its_request_kind_from_the_row() -> None:
    """An answer is judged by the request it answers: the checks declaring the kind its
    request's row names (``answer_reads``), and every answer's, under the revision's rules
    alone; no check declares an answer kind that no row names (it would never run)."""
    rule_map.decisions()
    declared = {kind for fn in READERS.values() for kind in meta_of(fn).reads
                if kind.name.endswith("ANSWER")}
    assert declared == wire_table.answer_kinds()
    rows = {m.method: m.answer_reads for m in wire_table.MESSAGES if m.answer_reads}
    assert rows["auth/login"] == rows["auth/logout"] == Reads.AUTH_ANSWER

    def names(rev: str, kind: Reads) -> list[str]:
        return [meta.name for _, meta in dispatch_everywhere(rev).get(kind, ())]

    assert names("v1", rows["session/set_config_option"]) == ["config_result_complete"]
    assert names("sdk-2.4.0", rows["session/set_config_option"]) == [
        "config_method_implemented"]
    assert names("seed", rows["session/close"]) == []
    assert names("seed", Reads.ANSWER) == ["custom_request_unrecognised"]


def test_a_request_gets_the_checks_of_what_it_uses_from_the_row() -> None:
    """A request judged by what the other side advertised gets the checks declaring the kind
    its row names (``use_reads``); no check declares a use kind no row names."""
    rule_map.decisions()
    declared = {kind for fn in READERS.values() for kind in meta_of(fn).reads
                if kind.name.endswith("_USE")}
    assert declared == wire_table.use_kinds()
    rows = {m.method: m.use_reads for m in wire_table.MESSAGES if m.use_reads}
    assert {rows["auth/login"], rows["auth/logout"], rows["authenticate"]} == {Reads.AUTH_USE}
    assert "logout" not in rows  # (v1's logout: INIT-13 names auth/logout alone)

    def names(rev: str, method: str) -> list[str]:
        return [meta.name for _, meta in dispatch_everywhere(rev).get(rows[method], ())]

    assert names("v1", "session/resume") == ["additional_directories_advertised",
                                             "mcp_transports_advertised",
                                             "session_method_advertised"]
    assert names("sdk-2.4.0", "session/resume") == ["resume_keeps_cwd"]
    assert names("v1", "fs/read_text_file") == ["client_method_advertised",
                                                "file_in_root_set"]


def test_an_update_gets_the_checks_of_what_it_shows_from_the_row() -> None:
    """An update judged by what was advertised or approved before it (a notice, a custom
    state's idle, boolean config options, a tool an allow approved) gets the checks declaring
    the kind its row names (``Update.use_reads``); a session result's config options get the
    config_option_update's."""
    rule_map.decisions()
    rows = {u.kind: u.use_reads for u in wire_table.UPDATES if u.use_reads}
    assert rows["tool_call"] == rows["tool_call_update"] == Reads.TOOL_USE

    def names(rev: str, kind: str) -> list[str]:
        return [meta.name for _, meta in dispatch_everywhere(rev).get(rows[kind], ())]

    assert names("v1", "notice") == ["notice_advertised"]
    assert names("v1", "config_option_update") == ["boolean_options_advertised"]
    assert names("sdk-2.4.0", "state_update") == ["custom_state_advertised"]
    assert names("seed", "tool_call_update") == ["allowed_tool_reported_running"]
    assert meta_of(capabilities.cancel_request_advertised).reads == (Reads.CANCEL_CONTROL_USE,)


def test_the_pinned_reasons_say_why() -> None:
    assert all(len(why.split()) > 10 for why in HAND.values())


def _functions_taking_run() -> set[str]:
    """The model's functions handed the store's ``run`` (the model cannot import the oracle's
    store): "module.qualname"."""
    out = set()
    for path in sorted((PACKAGE / "model").rglob("*.py")):
        module = "acp_model." + str(path.relative_to(PACKAGE)).removesuffix(".py") \
            .replace("/", ".")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for cls in [None, *(n for n in tree.body if isinstance(n, ast.ClassDef))]:
            body = tree.body if cls is None else cls.body
            out |= {f"{module}.{'' if cls is None else cls.name + '.'}{fn.name}" for fn in body
                    if isinstance(fn, ast.FunctionDef)
                    and any(a.arg == "run" for a in fn.args.args)}
    return out


def test_what_runs_a_watched_check_is_a_declared_watcher() -> None:
    """A function the store's ``run`` is handed to keeps facts across messages: it declares
    the kinds it watches (``@watches``), so the router's hand-off is read against them."""
    rule_map.decisions()
    taking = _functions_taking_run()
    assert {"acp_model.model.closing.Closes.message", "acp_model.model.closing.Closes.response",
            "acp_model.model.offered.OwnSessions.response"} <= taking
    assert taking - set(WATCHERS) == set()
    watched = {(where, scope) for (where, scope, _), why in HAND.items() if why == WATCHED}
    assert {scope for where, scope in watched} == {"message", "response"}
