"""The compiled validators agree with jsonschema: jsonschema-rs (in use) and fastjsonschema
(the one it replaced) give jsonschema's verdict on generated valid and invalid messages of
every method, in both revisions. A disagreement would change verdicts silently."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_model.oracle.validate import BACKENDS, compiled_validator, precise_valid
from acp_model.render.docs import FLOWS
from acp_model.spec.schema import method_table
from acp_model.trace.builder import TraceBuilder
from tests.helpers import S, base, turn_start


def _corpus(revision: str) -> list[tuple[str, Any]]:
    """(def name, instance) of every params/result in traces the model accepts."""
    traces: list[TraceBuilder] = [build(revision != "seed") for _, _, build in FLOWS]
    if revision == "seed":  # ``{}`` acknowledgements: the seed's prompt response
        t = turn_start(base(), 10).agent_message(S).usage(S).tool(S, "t1", "pending", title="x")
        traces.append(t.tool(S, "t1", "completed").idle(S, "end_turn"))
    table = method_table(revision)
    out: list[tuple[str, Any]] = []
    for trace in traces:
        methods: dict[Any, str] = {}
        for rec in trace.records:
            msg = (rec if isinstance(rec, dict) else rec.to_json()).get("msg")
            if not isinstance(msg, dict):
                continue
            if "method" in msg:
                methods[msg.get("id")] = msg["method"]
                spec = table.get(msg["method"])
                if spec is not None and spec.params_def and "params" in msg:
                    out.append((spec.params_def, msg["params"]))
            elif "result" in msg:
                spec = table.get(methods.get(msg.get("id"), ""))
                if spec is not None and spec.result_def:
                    out.append((spec.result_def, msg["result"]))
    return out


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6),
                 st.lists(st.integers(), max_size=2), st.just({}),
                 st.sampled_from(["running", "idle", "end_turn", "cancelled", "_x", "text"]))


@st.composite
def mutated(draw: st.DrawFn, corpus: list[tuple[str, Any]]) -> tuple[str, Any]:
    """A corpus instance with a few paths deleted, retyped or added (often invalid)."""
    def_name, instance = draw(st.sampled_from(corpus))
    value = copy.deepcopy(instance)
    for _ in range(draw(st.integers(0, 3))):
        paths = list(_paths(value))
        if not paths:
            break
        parent, key = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["delete", "replace", "add"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "_meta", "stopReason", "state", "type"]))] = \
                draw(JUNK)
        else:
            parent[key] = draw(JUNK)
    return def_name, value


def _paths(value: Any) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((value, k))
            out += _paths(v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.append((value, i))
            out += _paths(v)
    return out


@pytest.mark.parametrize("revision", ["seed", "sdk-2.4.0"])
def test_the_corpus_is_valid_everywhere(revision: str) -> None:
    corpus = _corpus(revision)
    assert len(corpus) > 30
    for def_name, instance in corpus:
        assert precise_valid(def_name, instance, revision), (def_name, instance)
        for backend in BACKENDS:
            assert compiled_validator(def_name, revision, backend)(instance), (backend, def_name)


@pytest.mark.parametrize("revision", ["seed", "sdk-2.4.0"])
def test_every_validator_gives_jsonschema_s_verdict(revision: str) -> None:
    corpus = _corpus(revision)
    verdicts: list[bool] = []

    @settings(max_examples=600, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated(corpus))
    def agree(case: tuple[str, Any]) -> None:
        def_name, instance = case
        expected = precise_valid(def_name, instance, revision)
        verdicts.append(expected)
        for backend in BACKENDS:
            got = compiled_validator(def_name, revision, backend)(instance)
            assert got == expected, (backend, def_name, instance)

    agree()
    assert any(verdicts) and not all(verdicts), "both valid and invalid messages were tried"
