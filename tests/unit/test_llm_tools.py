"""The scripted model calls an agent's own tools: what each tool is (from its name,
description and schema), which one a reply calls, its arguments drawn from the schema, the
concrete call journaled, shown in a counterexample and sent again by a replay."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_model.fuzzing.actions import Interrupt, Prompt, from_json
from acp_model.fuzzing.artifacts import fuzz_report
from acp_model.fuzzing.backend import backend
from acp_model.fuzzing.config import FuzzConfig
from acp_model.fuzzing.run import run_fuzz
from acp_model.llm.script import ModelToolCall, Text, Tools, script_from_json
from acp_model.llm.server import ScriptedModel, tag_text
from acp_model.llm.tools import (
    SCRATCH,
    OfferedTool,
    ToolKind,
    arguments,
    choose,
    classify,
    long_running,
    materialize,
    plan,
)

STR = {"type": "string"}


def obj(required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


BASH = OfferedTool("Bash", "Executes a given bash command.",
                   obj(("command",), command=STR, description=STR, timeout={"type": "number"}))
WRITE = OfferedTool("Write", "Writes a file to the local filesystem.",
                    obj(("file_path", "content"), file_path=STR, content=STR))
EDIT = OfferedTool("Edit", "Performs exact string replacements in files.",
                   obj(("file_path", "old_string", "new_string"), file_path=STR,
                       old_string=STR, new_string=STR))
READ = OfferedTool("Read", "Reads a file from the local filesystem.",
                   obj(("file_path",), file_path=STR))
GREP = OfferedTool("Grep", "Search file contents.", obj(("pattern",), pattern=STR))
# names of their own: only the schema or the description tells what they are
EXEC = OfferedTool("exec_cmd", "Run a program line in the project.",
                   obj(("cmdline",), cmdline=STR, timeout_s={"type": "integer", "minimum": 1}))
PUT = OfferedTool("put_file", "Store a text under a name in the project.",
                  obj(("target", "body"), target=STR, body=STR))
RUNNER = OfferedTool("do_it", "Executes a shell command and returns its output.",
                     obj(("line",), line=STR))
SHELL_ARRAY = OfferedTool("shell", "Runs a shell command.",
                          obj(("command",), command={"type": "array", "items": STR}))
PATCH = OfferedTool("apply_patch", "Use the apply_patch tool to edit files.", None)


@pytest.mark.parametrize(("tool", "kind"), [
    (BASH, ToolKind.SHELL), (EXEC, ToolKind.SHELL), (RUNNER, ToolKind.SHELL),
    (SHELL_ARRAY, ToolKind.SHELL), (WRITE, ToolKind.WRITE), (PUT, ToolKind.WRITE),
    (EDIT, ToolKind.EDIT), (PATCH, ToolKind.EDIT), (READ, ToolKind.READ),
    (GREP, ToolKind.READ), (OfferedTool("zork", "", {}), ToolKind.OTHER),
])
def test_a_tool_is_classified_by_name_description_and_schema(tool: OfferedTool,
                                                             kind: ToolKind) -> None:
    assert classify(tool) is kind


def test_the_chooser_prefers_tools_that_change_things() -> None:
    offered = [READ, GREP, WRITE, BASH, EDIT]
    assert choose(offered, "shell") is BASH
    assert choose(offered, "edit") is WRITE  # a whole-file write needs no earlier read
    assert choose([READ, EDIT], "edit") is EDIT
    assert choose([READ, BASH], "edit") is BASH  # an edit made through a shell command
    assert choose([READ, GREP], "shell") is READ  # nothing changes: still a call of its own
    assert choose([], "shell") is None
    # a schema'd tool is preferred to a free-form one of the same kind
    assert choose([PATCH, EDIT], "edit") is EDIT


def test_a_profile_steers_the_choice() -> None:
    offered = [BASH, EXEC, WRITE]
    assert choose(offered, "shell") is BASH
    assert choose(offered, "shell", prefer=("exec_cmd",)) is EXEC
    # a preferred tool the classifier cannot read counts as the kind asked for
    odd = OfferedTool("zork", "", obj(("x",), x=STR))
    assert choose([BASH, odd], "shell", prefer=("zork",)) is odd
    assert choose([BASH, odd], "shell") is BASH
    assert choose([READ, odd], "shell") is odd  # what it does is unknown: it may change things


def args_of(tool: OfferedTool, want: str = "shell", ident: str = "acpm-1-0-0") -> Any:
    value = arguments(tool, want, ident)
    if tool.schema is not None:
        jsonschema.validate(value, tool.schema)  # what the agent validates it against
    return value


def test_a_command_field_gets_a_harmless_command_in_the_workspace() -> None:
    assert args_of(BASH) == {"command": f"touch {SCRATCH}/acpm-1-0-0.txt"}
    assert args_of(EXEC) == {"cmdline": f"touch {SCRATCH}/acpm-1-0-0.txt"}
    assert args_of(SHELL_ARRAY) == {"command": ["sh", "-c", f"touch {SCRATCH}/acpm-1-0-0.txt"]}
    assert args_of(BASH, "edit")["command"] == \
        f"printf 'written by acp-model\\n' > {SCRATCH}/acpm-1-0-0.md"


def test_a_long_running_call_sleeps_then_writes_in_the_workspace() -> None:
    """``Tools("long")``: the agent's shell tool runs a command that outlasts a cancel (a
    ``sleep`` longer than the client waits), then only touches a file of the workspace; a
    tool that runs no command gets its ordinary call, which is not long-running."""
    from acp_model.llm.tools import LONG_RUN_SECONDS

    long = f"sleep {LONG_RUN_SECONDS} && touch {SCRATCH}/acpm-1-0-0.txt"
    assert args_of(BASH, "long") == {"command": long}
    assert args_of(EXEC, "long") == {"cmdline": long}
    assert args_of(SHELL_ARRAY, "long") == {"command": ["sh", "-c", long]}
    assert choose((WRITE, READ, BASH), "long") is BASH
    assert long_running(ModelToolCall("Bash", args_of(BASH, "long")))
    assert long_running(ModelToolCall("shell", args_of(SHELL_ARRAY, "long")))
    assert not long_running(ModelToolCall("Bash", args_of(BASH, "shell")))
    (call,) = plan(Tools("long"), (WRITE, READ), "acpm-1-0")  # no shell: an ordinary write
    assert call.name == "Write" and not long_running(call)
    assert Tools("long").describe() == "tool call (long-running command)"


def test_path_and_content_fields_write_into_the_workspace() -> None:
    assert args_of(WRITE) == {"file_path": f"{SCRATCH}/acpm-1-0-0.md",
                              "content": "written by the acp-model scripted model\n"}
    assert args_of(PUT) == {"target": f"{SCRATCH}/acpm-1-0-0.md",
                            "body": "written by the acp-model scripted model\n"}
    assert materialize(args_of(PUT), "/tmp/ws")["target"] == "/tmp/ws/acpm-scratch/acpm-1-0-0.md"
    assert materialize(args_of(PUT), None)["target"] == "acpm-scratch/acpm-1-0-0.md"


def test_other_required_fields_are_drawn_from_the_schema() -> None:
    """Required fields of no known role (an enum, a bounded integer, a nested object with
    its own required enum) get the schema's minimal value; optional ones are left out."""
    tool = OfferedTool("store", "Store a text.", obj(
        ("target", "body", "options", "retries"), target=STR, body=STR,
        retries={"type": "integer", "minimum": 2, "maximum": 5},
        verbose={"type": "boolean"},
        options=obj(("mode", "level"), mode={"type": "string", "enum": ["create", "overwrite"]},
                    level={"type": "integer", "minimum": 3}, note=STR)))
    value = args_of(tool, "edit")
    assert value == {"target": f"{SCRATCH}/acpm-1-0-0.md",
                     "body": "written by the acp-model scripted model\n",
                     "options": {"mode": "create", "level": 3}, "retries": 2}
    assert args_of(tool, "edit", "acpm-2-1-0")["target"] == f"{SCRATCH}/acpm-2-1-0.md"
    assert args_of(tool, "edit") == value  # deterministic


def test_a_field_that_asks_for_escalation_asks() -> None:
    """An agent that runs commands in a sandbox asks permission only when the call asks to
    leave it: an enum value, a boolean, or a value the field's description names."""
    described = OfferedTool("exec_command", "Runs a command.", obj(
        ("cmd",), cmd=STR, yield_time_ms={"type": "number"},
        justification={"type": "string", "description": 'Only set if sandbox_permissions '
                       'is "require_escalated": a question for the user.'},
        sandbox_permissions={"type": "string", "description": 'Set to "require_escalated" '
                             'to run without sandbox restrictions; defaults to "use_default".'}))
    assert args_of(described) == {"cmd": f"touch {SCRATCH}/acpm-1-0-0.txt",
                                  "sandbox_permissions": "require_escalated",
                                  "justification": "acp-model scripted tool call"}
    enum = OfferedTool("run", "Runs a shell command.", obj(
        ("command", "approval"), command=STR,
        approval={"type": "string", "enum": ["auto", "ask_user"],
                  "description": "whether the user must approve"}))
    assert args_of(enum)["approval"] == "ask_user"
    flag = OfferedTool("run", "Runs a shell command.", obj(
        ("command",), command=STR, require_approval={"type": "boolean"}))
    assert args_of(flag)["require_approval"] is True


def test_steering_that_breaks_the_schema_gives_way() -> None:
    """A path with a pattern our value does not match: the schema's own value is sent."""
    tool = OfferedTool("save", "Writes a file.", obj(
        ("path", "content"), path={"type": "string", "pattern": "^src/[a-z]+\\.py$"},
        content=STR))
    value = args_of(tool, "edit")
    assert value["content"] == "written by the acp-model scripted model\n"
    assert value["path"].startswith("src/")


def test_gemini_style_schemas_are_read() -> None:
    tool = OfferedTool("run_shell_command", "Executes a given shell command.", {
        "type": "OBJECT", "required": ["command"], "properties": {
            "command": {"type": "STRING"}, "dir_path": {"type": "STRING", "nullable": True}}})
    assert arguments(tool, "shell", "acpm-1-0-0") == {
        "command": f"touch {SCRATCH}/acpm-1-0-0.txt"}


def test_a_free_form_tool_gets_text() -> None:
    assert arguments(PATCH, "edit", "x") == "written by the acp-model scripted model\n"
    shell = OfferedTool("sh", "Runs a shell command.", None)
    assert arguments(shell, "shell", "x") == f"touch {SCRATCH}/x.txt"


def test_a_reply_plans_its_calls_and_a_recorded_call_is_sent_as_is() -> None:
    calls = plan(Tools("edit", 2), [READ, BASH, WRITE], "acpm-3-0")
    assert [c.name for c in calls] == ["Write", "Write"]
    assert calls[1].arguments["file_path"] == f"{SCRATCH}/acpm-3-0-1.md"
    recorded = ModelToolCall("Bash", {"command": "touch {workspace}/old.txt"})
    again = plan(Tools("edit", 2, (recorded,)), [READ, BASH, WRITE], "acpm-9-0")
    assert again[0] == recorded and again[1].name == "Write"
    # a recorded call of a tool the agent no longer offers is chosen afresh
    assert plan(Tools("shell", 1, (recorded,)), [EXEC], "acpm-9-0")[0].name == "exec_cmd"


def test_recorded_calls_read_back_and_describe_themselves() -> None:
    reply = Tools("edit", 1, (ModelToolCall("write_file", {"path": "{workspace}/a.md",
                                                      "content": "x" * 80}),))
    assert script_from_json([reply.to_json()]) == (reply,)
    assert reply.describe().startswith('calls write_file {path: "{workspace}/a.md", content: "xx')
    assert Tools("shell").to_json() == {"reply": "tools", "tool": "shell", "count": 1}
    with pytest.raises(ValueError):
        Tools("shell", 1, ({"name": ""},))


def post_chat(url: str, tag: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {"model": "m", "stream": True, "tools": tools,
            "messages": [{"role": "user", "content": f"go {tag_text(tag)}"}]}
    req = urllib.request.Request(f"{url}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as resp:
        lines = resp.read().decode().splitlines()
    chunks = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
    return [tc["function"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", [])]


def chat_tool(tool: OfferedTool) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name, "description": tool.description,
                                             "parameters": tool.schema}}


def test_a_counterexample_shows_the_call_and_its_replay_sends_it(tmp_path: Path) -> None:
    """The prompt that ran keeps its turn's tag; resolved, it carries the concrete call the
    model sent (shown in the program's text, kept in the replay file) and a replay of it, in
    another workspace, sends the same call there."""
    with ScriptedModel("openai-chat", workspace="/first") as model:
        prompt = Prompt(blocks=[{"type": "text", "text": "hi"}], model=(Tools("edit"), Text(1)))
        tag = model.register(prompt.model)
        (sent,) = post_chat(model.url, tag, [chat_tool(READ), chat_tool(PUT)])
        assert sent["name"] == "put_file"
        assert json.loads(sent["arguments"])["target"] == f"/first/acpm-scratch/acpm-{tag}-0-0.md"
        done = Interrupt(prompt=prompt).with_turn(tag).resolved(model)
        text = done.describe()
        where = f"{{workspace}}/acpm-scratch/acpm-{tag}-0-0.md"
        assert f'model: calls put_file {{target: "{where}"' in text
        replayed = from_json(json.loads(json.dumps(done.to_json())))
        assert replayed == done and "turn" not in json.dumps(done.to_json())
    with ScriptedModel("openai-chat", workspace=str(tmp_path)) as model:
        assert isinstance(replayed, Interrupt)
        tag2 = model.register(replayed.prompt.model)
        (again,) = post_chat(model.url, tag2, [chat_tool(PUT), chat_tool(READ)])
        assert again["name"] == "put_file"
        assert json.loads(again["arguments"])["target"] == \
            f"{tmp_path}/acpm-scratch/acpm-{tag}-0-0.md"


AGENT = Path(__file__).resolve().parents[1] / "hostile" / "own_tools_agent.py"


@pytest.mark.slow
def test_an_agent_without_a_profile_is_asked_for_permission_through_its_own_tools() -> None:
    """`acp-model fuzz --model openai-chat -- AGENT` on an agent whose tools have names and
    schemas of its own (exec_cmd {cmdline}, put_file {target, body, options: {mode}}): the
    model calls them, the agent asks its client's permission, the client answers."""
    # Which of its tools the programs reach in 12 s is the machine's speed: a loaded one
    # (fewer examples) is given the next seed, up to three runs, until both were called.
    called: set[str] = set()
    transitions: Counter[str] = Counter()
    perm: Counter[str] = Counter()
    failed: list[Any] = []
    for seed in (5, 6, 7):
        cfg = FuzzConfig([sys.executable, str(AGENT)], seed=seed, time_budget=12,
                         max_examples=100_000, replay_runs=1, minimize_budget=3, protocol=1,
                         model_api="openai-chat", spec="v1")
        with backend(cfg) as running:
            result = run_fuzz(running)
            assert running.model is not None
            called |= {c.name for s in running.model.served() for c in s.calls}
        assert result.judged and not result.interrupted and not result.unusable, \
            (result.unusable, result.problem)
        report = fuzz_report(result)
        transitions.update(report["transitions"])
        # the permission rules were judged on what the agent asked
        perm.update({r["id"]: r["exercised"] for r in report["rules"]
                     if r["id"].startswith("PERM")})
        failed += [v for v in report["violations"] if v["level"] == "fail"]
        if called == {"exec_cmd", "put_file"}:
            break
    assert called == {"exec_cmd", "put_file"}
    assert transitions["running:permission_request"] > 0, transitions
    assert transitions["running:permission_answer"] > 0, transitions
    assert perm["PERM-11"] > 0 and perm["PERM-12"] > 0, perm
    assert not failed, failed


def _fuzz_own_tools(seed: int, budget: float) -> tuple[dict[str, Any], list[ModelToolCall]]:
    cfg = FuzzConfig([sys.executable, str(AGENT)], seed=seed, time_budget=budget,
                     max_examples=100_000, replay_runs=1, minimize_budget=5, protocol=1,
                     model_api="openai-chat", spec="v1")
    with backend(cfg) as running:
        result = run_fuzz(running)
        assert running.model is not None
        calls = [c for s in running.model.served() for c in s.calls]
    assert result.judged and not result.unusable, (result.unusable, result.problem)
    return fuzz_report(result), calls


CANCEL_DURING_LONG_COMMAND = [
    {"op": "new_session"},
    {"op": "prompt", "s": 0, "blocks": [{"type": "text", "text": "build"}], "meta": False,
     "model": [{"reply": "tools", "tool": "long", "count": 1}]},
    {"op": "wait", "s": 0, "mode": "settled"},  # the agent asks permission for the command
    {"op": "answer", "s": 0, "outcome": "allow", "newest": True, "late": False, "sync": True},
    {"op": "wait", "s": 0, "mode": "update"},  # the command runs (its in_progress report)
    {"op": "cancel", "s": 0, "sync": True},
    {"op": "sync"}]


def _met_running_command(records: list[dict[str, Any]]) -> bool:
    """Did the cancel go out after the agent reported the command running (in_progress)?"""
    running = cancel = None
    for n, rec in enumerate(records):
        msg = rec.get("msg") or {}
        update = (msg.get("params") or {}).get("update") or {}
        if running is None and update.get("status") == "in_progress":
            running = n
        if cancel is None and msg.get("method") == "session/cancel":
            cancel = n
    return running is not None and cancel is not None and running < cancel


def _replay_own_tools(*flags: str) -> Any:
    """The program above on a fresh agent process. Its cancel meets the running command every
    time: the first wait ends on the permission request (a long command the model gave the
    turn does not settle it before the agent reports it running), the second on the
    command's in_progress report."""
    from acp_model.fuzzing.shrink import replay_once
    from acp_model.spec.readings import DEFAULT

    # patience 10: the wait for the command's in_progress report lasts 2 s, not 0.2 s (a
    # loaded machine's agent reports it later than that, and the cancel then came first)
    cfg = FuzzConfig([sys.executable, str(AGENT), *flags], seed=1, protocol=1,
                     model_api="openai-chat", spec="v1", readings=DEFAULT.parse(["SPEC=v1"]),
                     deadline=3.0, patience=10.0)
    with backend(cfg) as running:
        outcome = replay_once(running, [from_json(a) for a in CANCEL_DURING_LONG_COMMAND],
                              "PROMPT-04")
        assert running.model is not None
        calls = [c for s in running.model.served() for c in s.calls]
    assert [c.name for c in calls] == ["exec_cmd"] and long_running(calls[0]), calls
    assert _met_running_command(outcome.records), [
        ((r.get("msg") or {}).get("method"), ((r.get("msg") or {}).get("params") or {}).get(
            "update", {}).get("status")) for r in outcome.records]
    return outcome


@pytest.mark.slow
def test_cancels_meet_a_running_tool_and_one_that_keeps_running_is_caught() -> None:
    """The scripted model sometimes gives the agent's own shell tool a long-running command:
    fuzzing, cancels then meet a running tool. A program that cancels while that command runs
    passes on the agent that kills it (the prompt ends cancelled). The same agent with a
    planted bug that lets the command run on and answers after it is slow, not dead: judged
    once the command has ended (past the client's deadline), it gets no failure (CANCEL-05's
    warning, which a replay does not keep). With the turn then
    never answered (claude-agent-acp#680's shape) it fails PROMPT-04."""
    for seed in (3, 4, 5, 6):  # a run's draws depend on the agent's timing: await the proof
        report, calls = _fuzz_own_tools(seed=seed, budget=20)
        assert not [v for v in report["violations"] if v["level"] == "fail"], \
            report["violations"]
        if any(long_running(c) and c.name == "exec_cmd" for c in calls) \
                and report["reach"]["cancels_during_tool_call"] > 0:
            break
    else:
        pytest.fail(f"no run gave the shell tool a long command that a cancel met: {calls}, "
                    f"{report['reach']}")
    good = _replay_own_tools()
    assert not good.reproduced and not good.violations and good.error is None, good.violations
    stops = [r["msg"]["result"].get("stopReason") for r in good.records
             if isinstance(r["msg"].get("result"), dict) and "stopReason" in r["msg"]["result"]]
    assert stops == ["cancelled"], stops
    slow = _replay_own_tools("--keep-tools-on-cancel")
    assert not slow.reproduced and slow.error is None, slow.violations
    answered = [r["t"] for r in slow.records if isinstance(r["msg"].get("result"), dict)
                and r["msg"]["result"].get("stopReason") == "cancelled"]
    assert answered and answered[0] > 3.0, answered  # after the client's deadline: waited for
    hung = _replay_own_tools("--keep-tools-on-cancel", "--on-cancel", "hang")
    assert hung.reproduced and hung.error is None, hung.violations
