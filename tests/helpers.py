"""Small helpers for building and checking traces in tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from acp_model.model.messages import Findings
from acp_model.model.views import SessionView
from acp_model.oracle import dialects, updates
from acp_model.oracle.offline import check_records
from acp_model.spec import revisions
from acp_model.spec.readings import DEFAULT, Readings
from acp_model.trace.builder import TraceBuilder

if TYPE_CHECKING:
    from acp_model.fuzzing.transport import AgentProcess

S = "s1"
ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_NAMES = ("01-model-tour.ipynb", "02-fuzzing-an-agent.ipynb", "03-spec-authors.ipynb")


def load_fuzz_module(name: str) -> ModuleType:
    """``fuzz/`` is not a package (``fuzz`` is taken on PyPI): load its module by path."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "fuzz" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def update_plan(kind: Any, rev: str = "seed") -> updates.UpdatePlan:
    """The oracle's plan of an update ``kind`` under ``rev``, read by its revision's dialect
    (what the router hands every ``session/update`` of that kind)."""
    return updates.build(rev, dialects.for_protocol(revisions.get(rev).protocol), kind)


def update_findings(update: dict[str, Any], rev: str = "seed") -> Findings:
    """What the single-message checks find in one update payload, through its kind's plan."""
    return update_plan(update.get("sessionUpdate"), rev).check(update) or Findings(rev=rev)


def view_findings(view: SessionView, update: dict[str, Any], rev: str = "seed", *,
                  family: bool = True) -> Findings:
    """What the view's checks find in one update payload (``view``: before it) through its
    kind's plan; ``family`` False: a messageId's reuse a replay judged (SESS-08)."""
    found = update_plan(update.get("sessionUpdate"), rev).check_view(view, update, not family)
    return found or Findings(rev=rev)


def reduced(view: SessionView, update: dict[str, Any]) -> SessionView:
    """``view`` after one update payload, as its kind's plan reduces it."""
    return update_plan(update.get("sessionUpdate")).reduce(view, update)


def base(sid: str = S, **caps: Any) -> TraceBuilder:
    """Handshake plus one session."""
    return TraceBuilder().handshake(**caps).new_session(sid)


def turn_start(t: TraceBuilder, req_id: int, sid: str = S) -> TraceBuilder:
    return t.prompt(sid, req_id).accepted(req_id).user_message(sid).running(sid)


def check(t: TraceBuilder, readings: Readings = DEFAULT, **kw: Any) -> dict[str, Any]:
    return check_records(t.records, readings=readings, **kw)


def failed_rules(report: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in report["violations"] if v["level"] == "fail"}


def warned_rules(report: dict[str, Any]) -> set[str]:
    return {v["rule"] for v in report["violations"] if v["level"] == "warn"}


def assert_clean(report: dict[str, Any]) -> None:
    assert report["violations"] == [], report["violations"]
    assert report["verdict"] == "pass"


def cancel_during_permission(p: AgentProcess, cwd: str, *, prove_read: bool = False) -> str:
    """Drive a live agent (or a proxy in front of one) as an editor would: a session, a prompt
    that asks for permission, then a cancel and the ``cancelled`` answer; returns the session.

    ``prove_read``: between the cancel and the answer, a request the agent must answer (an
    unknown method) and its response, so the trace proves the cancel was read before the answer.
    """
    p.calls.call("initialize", {"protocolVersion": 2, "capabilities": {},
                          "info": {"name": "e", "version": "1"}})
    sid = p.calls.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    p.calls.request("session/prompt", {"sessionId": sid,
                                 "prompt": [{"type": "text", "text": "fix it"}]})
    perm = p.calls.wait_for(lambda m: isinstance(m, dict)
                      and m.get("method") == "session/request_permission", timeout=10)
    assert perm is not None
    p.calls.notify("session/cancel", {"sessionId": sid})
    if prove_read:
        from contextlib import suppress

        from acp_model.fuzzing.transport import RpcError

        with suppress(RpcError):  # method not found: an answer all the same
            p.calls.call("_acp_model/sync", {})
    p.calls.respond(perm["msg"]["id"], {"outcome": {"outcome": "cancelled"}})
    return str(sid)


def wait_gone(pids: list[int], timeout: float) -> None:
    """Wait until every process in ``pids`` has exited (not only our children: a pidfd
    becomes readable when its process ends), or ``timeout`` passes."""
    import os
    import select
    import time

    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue  # already gone
    try:
        end = time.monotonic() + timeout
        waiting = list(fds)
        while waiting and (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(waiting, [], [], left)
            waiting = [fd for fd in waiting if fd not in ready]
    finally:
        for fd in fds:
            os.close(fd)


def kept_issue_body(folder: Path, program: list[Any], records: list[dict[str, Any]],
                    finding: dict[str, Any]) -> str:
    """The issue body ``acp-model report-bug`` writes for a kept failure of ``program`` whose
    transcript is ``records`` (its replay file and transcript written into ``folder``)."""
    import json

    from acp_model.matrix.bugs import issue_body

    (folder / "replay.json").write_text(json.dumps(
        {"actions": [a.to_json() for a in program]}), encoding="utf-8")
    (folder / "transcript.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return issue_body({"agent": "a", "protocol": 1, "status": "ran"},
                      {"replay": "replay.json", "transcript": "transcript.jsonl", **finding},
                      folder)
