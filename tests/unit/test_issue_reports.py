"""Reports a maintainer acts on (issue 49, the s9 reader's causes of ours): RPC-09's source in
the sdk-2.4.0 revision, the SDK an envelope failure may belong to, the client message a proof
rests on, and counterexample files that say what the re-judged verdict says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from acp_model.cli.main import main
from acp_model.matrix.bugs import issue_body
from acp_model.matrix.rejudge import rejudge
from acp_model.report.matrix import cells_of, load
from acp_model.spec.revisions import SDK_2_4_0, SEED, V1
from acp_model.spec.rules import RULES
from tests.unit.test_matrix_runs import CANCEL_09, _matrix, _run

ROW = {"agent": "claude-agent-acp", "version": "9.9.9", "protocol": 2, "status": "ran",
       "revision": SDK_2_4_0}


def test_rpc_09_cites_json_rpc_in_the_sdk_revision_which_has_no_batch_text() -> None:
    rule = RULES["RPC-09"]
    assert rule.citation_in(SDK_2_4_0).startswith("JSON-RPC 2.0 §4.1 Notification ('The "
                                                  "Server MUST NOT reply to a Notification")
    assert rule.citation_in(V1).startswith("JSON-RPC 2.0 §4.1")
    assert rule.citation_in(SEED) == rule.citation  # the alpha.3 transports page's revision


def test_rpc_09_under_v1_quotes_its_sentence_word_for_word() -> None:
    """The s12 reader: v1 RPC-09 (zed-codex-acp) named "JSON-RPC 2.0 §4.1 Notification" with
    no sentence, unlike the v2 rows. It quotes JSON-RPC's sentence as the sdk-2.4.0 row does,
    and the v1 overview's, word for word (markdown links aside)."""
    import re
    from importlib import resources

    cited = RULES["RPC-09"].citation_in(V1)
    overview = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1",
                      resources.files("acp_model.spec").joinpath(
        "data", "v1", "docs", "overview.mdx").read_text(encoding="utf-8"))
    overview = " ".join(overview.replace("**", "").split())
    json_rpc = ("The Server MUST NOT reply to a Notification, including those that are within "
                "a batch request")
    assert json_rpc in cited and json_rpc in RULES["RPC-09"].citation_in(SDK_2_4_0)
    for sentence in ("The protocol follows the JSON-RPC 2.0 specification",
                     "Notifications: One-way messages that don't expect a response"):
        assert sentence in cited and sentence in overview, sentence


def _npm_sdk(install: Path, version: str = "2.4.0") -> None:
    folder = install / "node_modules" / "@agentclientprotocol" / "sdk"
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({
        "name": "@agentclientprotocol/sdk", "version": version,
        "repository": {"type": "git", "url": "git+https://example.org/typescript-sdk.git"}}))


def test_the_sdk_an_agent_bundles_is_read_from_its_install_directory(tmp_path: Path) -> None:
    from acp_model.profiles.sdk import bundled_sdks

    _npm_sdk(tmp_path / "npm")
    (npm,) = bundled_sdks(tmp_path / "npm")
    assert (npm.package, npm.version, npm.where, npm.home) == (
        "@agentclientprotocol/sdk", "2.4.0", "node_modules/@agentclientprotocol/sdk",
        "https://example.org/typescript-sdk")
    dist = tmp_path / "py" / "venv" / "lib" / "python3.13" / "site-packages" / \
        "agent_client_protocol-0.12.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-client-protocol\n"
                                   "Version: 0.12.1\nProject-URL: Repository, "
                                   "https://example.org/python-sdk\n")
    (py,) = bundled_sdks(tmp_path / "py")
    assert (py.package, py.version, py.home) == ("agent-client-protocol", "0.12.1",
                                                 "https://example.org/python-sdk")
    assert bundled_sdks(tmp_path / "none") == []  # a binary, or not installed: nothing


def _failure(rule: str) -> dict[str, Any]:
    return {"rule": rule, "strength": "MUST NOT", "statement": RULES[rule].statement,
            "citation": RULES[rule].citation_in(SDK_2_4_0), "message": "it answered"}


def test_an_envelope_failure_names_the_bundled_sdk_and_a_session_failure_does_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from acp_model.matrix.bugs import installed_sdks

    monkeypatch.setenv("ACP_MODEL_AGENTS", str(tmp_path / "agents"))
    _npm_sdk(tmp_path / "agents" / "claude-agent-acp-9.9.9")
    sdks = installed_sdks(ROW)
    assert [s.version for s in sdks] == ["2.4.0"]
    body = issue_body(ROW, _failure("RPC-09"), tmp_path, sdks=sdks)
    assert ("**Where it may belong:** the agent bundles the ACP SDK `@agentclientprotocol/sdk` "
            "2.4.0") in body
    assert "file it with the SDK (https://example.org/typescript-sdk)" in body
    assert "Where it may belong" not in issue_body(ROW, _failure("CANCEL-07"), tmp_path,
                                                   sdks=sdks)
    assert installed_sdks({**ROW, "version": "1.0.0"}) == []  # that version is not installed


def test_the_proof_block_shows_the_client_message_the_finding_names(tmp_path: Path) -> None:
    """The batch an RPC-09 answered was missing from the issue's wire lines (s9 rows 1, 5)."""
    records = [{"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                      "params": {"protocolVersion": 2}}},
               {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": 0, "result": {}}},
               *({"dir": "c2a", "msg": {"jsonrpc": "2.0", "id": n, "method": "_x/ping"}}
                 for n in range(1, 9)),
               {"dir": "c2a", "msg": [{"jsonrpc": "2.0", "method": "_x/note"}]},
               {"dir": "a2c", "msg": {"jsonrpc": "2.0", "id": None,
                                      "error": {"code": -32600, "message": "no batches"}}}]
    (tmp_path / "transcript.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    v = {"rule": "RPC-09", "level": "fail", "strength": "MUST NOT", "index": 11,
         "message": "agent answered a valid batch of 1 notification(s) and no request (#10)"}
    cells = cells_of({"violations": [v], "spec": {"revision": SDK_2_4_0}}, tmp_path)
    (f,) = [f for c in cells.values() for f in c["failures"]]
    assert f["evidence"] == [{"index": 10, "role": "named in what happened"}]
    body = issue_body(ROW, {**f, "transcript": "transcript.jsonl"}, tmp_path)
    assert "   #10    C->A  batch [_x/note]   <- named in what happened" in body
    assert ">> #11 " in body


def test_re_judging_rewrites_each_failure_s_counterexample_from_its_verdict_now(
        tmp_path: Path) -> None:
    """A re-judged run kept the run's counterexample.txt beside an issue that said otherwise
    (s9 reader, cause 2); the scripted model's lines only the old file had are kept."""
    run = tmp_path / "run"
    base = _matrix(run, [_run(run, "a", [(CANCEL_09, "CANCEL-09", False)])])
    folder = run / "a-v2" / "CANCEL-09"
    stale = (folder / "counterexample.txt").read_text()
    (folder / "counterexample.txt").write_text(
        stale + "   #0    C->A  initialize\n         model: asked for s1's turn\n"
                "   #3    C->A  session/prompt\n")
    out = tmp_path / "out"
    assert main(["matrix", "--rejudge", str(base), "--out", str(out)]) == 1  # (a failure)
    doc = rejudge(load(out / "matrix.json"), out)
    (f,) = doc["rows"][0]["cells"]["cancellation"]["failures"]
    text = (out / "a-v2" / "CANCEL-09" / "counterexample.txt").read_text()
    assert text.startswith("acp-model counterexample: CANCEL-09 (MUST, binds the agent)")
    assert f"What went wrong:\n  {f['message']}\n" in text
    assert f">> #{f['index']} " in text
    assert "  1. new session s1\n  2. prompt s1: plan\n" in text
    assert "         model: asked for s1's turn\n   #3 " in text
    mmd = (out / "a-v2" / "CANCEL-09" / "sequence.mmd")
    assert not mmd.exists() or f"CANCEL-09: {f['message'][:40]}" in mmd.read_text()
    assert (folder / "counterexample.txt").read_text().startswith(stale)  # the run's: as kept


HELD = Path(__file__).resolve().parents[1] / "data" / "held"


def test_the_issue_says_in_words_what_the_held_schedule_kept_before_the_offence() -> None:
    """"6/6 held, 0/6 free" said nothing about what the schedule holds (the s10 reader's
    C6): the line names, from schedule.json's order, the agent output the program's last
    action waited for and what followed, with the transcript's numbers. kimi-cli's load
    was written 1.8 ms after the prompt's answer; opencode's model reply was released only
    after the agent had answered the sync that proves it read the teardown's cancel."""
    from acp_model.matrix.held import held_of

    kimi = {"rule": "SESS-07", "index": 15, "replay": "kimi-SESS-07/replay.json",
            "transcript": "kimi-SESS-07/transcript.jsonl"}
    line = held_of(kimi, HELD)
    assert line is not None and line.startswith("Held to the recorded schedule, a replay "
                                                "keeps this order")
    assert ("the agent's answer #13 to session/prompt #10; the client's session/load #14 "
            "(action 3) 1.8 ms later; the agent's answer #15 to session/load #14.") in line
    opencode = held_of({"rule": "CANCEL-07", "index": 17, "replay":
                        "opencode-CANCEL-07/replay.json", "transcript":
                        "opencode-CANCEL-07/transcript.jsonl"}, HELD)
    assert opencode is not None
    assert ("the client's session/cancel #12 (the teardown) 1.8 ms later; the client's "
            "_acp_model/sync #13 (the teardown) 0.5 ms later; the agent's error answer #14 to "
            "_acp_model/sync #13; the agent's call of the model for session/prompt #11 (step "
            "0); the scripted model's reply of step 0 (start, text, end)") in opencode
    body = issue_body(ROW, {**_failure("SESS-07"), **kimi}, HELD)
    assert "(the gaps are the recording's" in line  # the transcript's own may differ (s15)
    assert body.index("**Reproduction:**") < body.index(line)
    assert held_of({**kimi, "index": 99}, HELD) is None  # not in the transcript


def test_counterexample_txt_says_the_order_held_as_the_issue_does(tmp_path: Path) -> None:
    """The held line was on the page and in issue.md but not in counterexample.txt, the file
    a maintainer opens first (s11 note): a failure's file says it, under its own heading;
    a warning's does not (no held replay stands behind it)."""
    from acp_model.matrix.held import held_of
    from acp_model.matrix.rewrite import rewrite

    folder = tmp_path / "kimi-SESS-07"
    shutil.copytree(HELD / "kimi-SESS-07", folder)
    files = {name: str(folder / name)
             for name in ("counterexample.txt", "transcript.jsonl", "replay.json")}
    v = {"rule": "SESS-07", "level": "fail", "index": 15, "files": files,
         "message": "session/load answered while the prompt's turn went on"}
    assert rewrite(v, {"rule": "SESS-07"}, SDK_2_4_0, None)
    line = held_of({"rule": "SESS-07", "index": 15, "replay": "kimi-SESS-07/replay.json",
                    "transcript": "kimi-SESS-07/transcript.jsonl"}, tmp_path)
    text = (folder / "counterexample.txt").read_text()
    assert line is not None and f"The order held (schedule.json):\n  {line}\n" in text
    assert text.index("What went wrong:") < text.index(line) < text.index("Client actions")
    assert rewrite({**v, "level": "warning"}, {"rule": "SESS-07"}, SDK_2_4_0, None)
    assert "The order held" not in (folder / "counterexample.txt").read_text()
