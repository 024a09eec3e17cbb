"""The scripted model on the tool lists real agents offer (``tests/data/tools``, recorded by
``acp-model agents tools --all --out tests/data/tools``): it calls the right tool for a shell
command, a file edit and a long-running command on every list, with the profile's hints and
without them; every call it makes stays in the run's scratch folder, whatever the command's
shape, and a call that would leave it is never sent."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from acp_model.fuzzing.editors import PRESETS
from acp_model.fuzzing.tool_lists import FORMAT, choices, tools_of
from acp_model.llm.script import RISKS, TOOL_KINDS, ModelToolCall, Tools
from acp_model.llm.server import ScriptedModel
from acp_model.llm.tools import (
    SCRATCH_DIR,
    ToolKind,
    arguments,
    classify,
    escapes,
    long_running,
    materialize,
    risky_command,
)
from acp_model.profiles import PROFILES
from tests.unit.test_llm_tools import chat_tool, obj, post_chat

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "tools"
STR = {"type": "string"}

# What a careful reader of each recorded list would call (judged by hand from the names,
# descriptions and schemas, not by running the chooser): the shell tool, the tools that write
# or edit a file (any of them is right), the tool for a command that keeps running. An agent
# without a shell (deepagents) gets a file tool for every kind; one without a file tool
# (codex's adapters: no apply_patch offered) edits through its shell.
EXPECTED: dict[str, tuple[str, set[str], str]] = {
    "claude-agent-acp": ("Bash", {"Write", "Edit"}, "Bash"),
    "codex-acp": ("exec_command", {"exec_command"}, "exec_command"),
    "copilot": ("bash", {"create", "edit"}, "bash"),
    "deepagents": ("write_file", {"write_file", "edit_file"}, "write_file"),
    "fast-agent": ("bash", {"write_text_file", "edit_file"}, "bash"),
    "gemini-cli": ("run_shell_command", {"write_file", "replace"}, "run_shell_command"),
    "kilo": ("bash", {"write", "edit"}, "bash"),
    "kimi-cli": ("Shell", {"WriteFile", "StrReplaceFile"}, "Shell"),
    "mistral-vibe": ("bash", {"write_file", "edit"}, "bash"),
    "opencode": ("bash", {"write", "edit"}, "bash"),
    "qwen-code": ("run_shell_command", {"write_file", "edit"}, "run_shell_command"),
    "zed-codex-acp": ("exec_command", {"exec_command"}, "exec_command"),
}
# runnable profiles that offer their model no tools to call (no fixture can exist)
NO_API_TOOLS = {"gptme": "its ACP agent hard-codes markdown tools: fenced code blocks in the "
                         "model's text, no function calling (its profile's notes)"}


def fixtures() -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(FIXTURES.glob("*.json"))}


def test_every_runnable_profile_has_a_recorded_tool_list() -> None:
    runnable = {n for n, p in PROFILES.items() if not p.unavailable}
    recorded = fixtures()
    assert set(recorded) | set(NO_API_TOOLS) == runnable
    assert set(EXPECTED) == set(recorded)
    for name, doc in recorded.items():
        assert doc["format"] == FORMAT and doc["agent"] == name
        assert doc["version"] == PROFILES[name].version, \
            f"{name}: recorded at {doc['version']}, pinned at {PROFILES[name].version}: " \
            "refresh with `acp-model agents tools NAME --out tests/data/tools`"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_tool_chosen_for_each_kind_is_right_with_and_without_hints(name: str) -> None:
    shell, edits, long = EXPECTED[name]
    tools = tools_of(fixtures()[name])
    for prefer in ((), PROFILES[name].prefer_tools):
        chosen = choices(tools, prefer)
        assert chosen["shell"] == shell, (prefer, chosen)
        assert chosen["edit"] in edits, (prefer, chosen)
        assert chosen["long"] == long, (prefer, chosen)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_call_on_a_recorded_list_is_valid_and_stays_in_the_scratch_folder(
        name: str, tmp_path: Path) -> None:
    """For each kind and each command shape: the arguments satisfy the tool's own schema, a
    long-running command is one (where the tool runs commands), and nothing it names leaves the
    scratch folder of the workspace."""
    tools = {t.name: t for t in tools_of(fixtures()[name])}
    workspace = str(tmp_path / "ws")
    for want, tool_name in choices(tuple(tools.values())).items():
        tool = tools[tool_name]
        for risk in RISKS if want != "edit" else ("plain",):
            args = arguments(tool, want, f"acpm-7-0-{RISKS.index(risk)}", risk)
            if tool.schema is not None:
                jsonschema.validate(args, tool.schema)
            sent = materialize(args, workspace)
            assert escapes(sent, workspace) is None, (want, risk, sent)
            assert os.path.join(workspace, SCRATCH_DIR) in json.dumps(sent), sent
            if want == "long" and classify(tool) is ToolKind.SHELL:
                assert long_running(ModelToolCall(tool.name, args)), args


@pytest.mark.parametrize("risk", RISKS)
def test_each_command_shape_runs_harmlessly_inside_the_scratch_folder(risk: str,
                                                                     tmp_path: Path) -> None:
    """Run for real, each command touches only the scratch folder (a file outside it is
    neither made nor removed) and succeeds."""
    workspace = tmp_path / "ws"
    (workspace / SCRATCH_DIR).mkdir(parents=True)
    (workspace / "keep.txt").write_text("the user's file\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the agent's\n")
    before = {p for p in tmp_path.rglob("*") if SCRATCH_DIR not in p.parts}
    command = materialize(risky_command(risk, "acpm-1-0-0"), str(workspace))
    assert escapes(command, str(workspace)) is None
    done = subprocess.run(["sh", "-c", command], cwd=workspace, capture_output=True, text=True,
                          timeout=30, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1",
                                           "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    after = {p for p in tmp_path.rglob("*") if SCRATCH_DIR not in p.parts}
    assert after == before  # nothing made or removed outside the scratch folder
    assert outside.read_text() == "not the agent's\n"
    assert Tools("shell", risk=risk).describe().startswith("tool call (shell command")


@pytest.mark.parametrize(("text", "bad"), [
    ("touch /ws/acpm-scratch/a.txt", None),
    ("rm -rf /ws/acpm-scratch/d && echo done", None),
    ("see https://example.com/a/b", None),
    ("touch acpm-scratch/a.txt", None),
    ("rm -rf /", "/"),
    ("cat /etc/passwd", "/etc/passwd"),
    ("touch /ws/a.txt", "/ws/a.txt"),  # the workspace, but not its scratch folder
    ("touch /ws/acpm-scratch/../x", "/ws/acpm-scratch/../x"),
    ("cd .. && rm -rf ws", ".."),
    ("echo hi > ~/.bashrc", "~/.bashrc"),
    ("touch acpm-scratch/../../x", "acpm-scratch/../../x"),
])
def test_the_guard_names_a_path_outside_the_scratch_folder(text: str, bad: str | None) -> None:
    assert escapes({"command": text, "nested": [{"x": 1}]}, "/ws") == bad


def test_a_call_that_would_leave_the_scratch_folder_is_never_sent(tmp_path: Path) -> None:
    """A recorded call edited to reach outside (a replay file is the user's to edit) is kept
    back before the reply goes out: the turn ends with text instead, and the model says so."""
    shell = ModelToolCall("run", {"command": "rm -rf /"})
    run = obj(("command",), command=STR)
    from acp_model.llm.tools import OfferedTool

    tool = OfferedTool("run", "Runs a shell command.", run)
    with ScriptedModel("openai-chat", workspace=str(tmp_path)) as model:
        tag = model.register((Tools("shell", 1, (shell,)),))
        assert post_chat(model.url, tag, [chat_tool(tool)]) == []
        assert [(t, c.arguments, bad) for t, c, bad in model.refused] == \
            [(tag, {"command": "rm -rf /"}, "/")]
        assert model.served(tag)[0].reply == "text"
        fine = model.register((Tools("shell", 1, risk="recursive_delete"),))
        (sent,) = post_chat(model.url, fine, [chat_tool(tool)])
        assert json.loads(sent["arguments"])["command"].startswith(
            f"mkdir -p {tmp_path}/{SCRATCH_DIR}/acpm-")
        assert len(model.refused) == 1


def test_every_tool_kind_has_an_expected_choice() -> None:
    assert set(TOOL_KINDS) == {"shell", "edit", "long"}  # EXPECTED's three columns


def test_no_tool_hints_leaves_the_choice_to_the_chooser() -> None:
    """``--no-tool-hints`` reaches the scripted model: it is started without the profile's
    preference, which it otherwise gets."""
    import dataclasses
    import sys

    from acp_model.cli.fuzz import _base_config
    from acp_model.cli.main import build_parser
    from acp_model.fuzzing.backend import backend
    from acp_model.fuzzing.config import FuzzConfig

    args = build_parser().parse_args(["fuzz", "--no-tool-hints", "--model", "openai-chat",
                                      "--", sys.executable, "-c", "pass"])
    cfg, _ = _base_config(args)
    assert cfg.tool_hints is False
    profile = PROFILES["kimi-cli"]
    for hints, prefer in ((True, profile.prefer_tools), (False, ())):
        plain = FuzzConfig(["true"], model_api="openai-chat", tool_hints=hints)
        with backend(dataclasses.replace(plain), profile) as running:
            assert running.model is not None and running.model.prefer_tools == prefer


def test_browser_tools_are_never_chosen_for_a_shell_or_an_edit() -> None:
    """A list of the shape issue 52 describes (an agent without a profile): a write tool
    taking a path and content, a patch tool and a terminal tool among ten browser tools (named
    as the common browser MCP server names them). The edit goes to the write tool, the
    command to the terminal, never to a browser tool (whose ``filename`` or ``text`` fields
    look like a file's)."""
    from acp_model.llm.tools import OfferedTool

    def tool(name: str, description: str, *required: str, **props: Any) -> OfferedTool:
        return OfferedTool(name, description, obj(required, **{k: v for k, v in props.items()}))

    browser = [
        tool("browser_navigate", "Navigate to a URL", "url", url=STR),
        tool("browser_click", "Perform click on a web page", "element", "ref", element=STR,
             ref=STR),
        tool("browser_type", "Type text into editable element", "element", "ref", "text",
             element=STR, ref=STR, text=STR, submit={"type": "boolean"}),
        tool("browser_snapshot", "Capture accessibility snapshot of the current page"),
        tool("browser_take_screenshot", "Take a screenshot of the current page and save it",
             filename=STR, raw={"type": "boolean"}),
        tool("browser_file_upload", "Upload one or multiple files", "paths",
             paths={"type": "array", "items": STR}),
        tool("browser_press_key", "Press a key on the keyboard", "key", key=STR),
        tool("browser_select_option", "Select an option in a dropdown", "element", "ref",
             "values", element=STR, ref=STR, values={"type": "array", "items": STR}),
        tool("browser_evaluate", "Evaluate JavaScript expression on page or element",
             "function", function=STR),
        tool("browser_close", "Close the page"),
    ]
    others = [tool(f"note_{n}", "Keep a note for later", "text", text=STR) for n in range(12)]
    write = tool("write_file", "Create or overwrite a file with the given content", "path",
                 "content", path=STR, content=STR)
    patch = tool("apply_patch", "Apply a unified diff to files in the workspace", "patch",
                 patch=STR)
    terminal = tool("terminal", "Run a command in a terminal and return its output",
                    "command", command=STR)
    offered = (*browser[:5], write, *others, patch, *browser[5:], terminal)
    assert len(offered) == 25
    assert choices(offered) == {"shell": "terminal", "edit": "write_file", "long": "terminal"}
    assert choices(tuple(t for t in offered if t is not write))["edit"] == "apply_patch"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_client_profile_sends_capabilities_each_revision_reads(name: str) -> None:
    """A preset's v1 capabilities are v1's ``ClientCapabilities``, its v2 ones both v2
    revisions' (v2 says terminal login with ``{}``, v1 with ``true``)."""
    root = Path(__file__).resolve().parents[2] / "acp_model" / "spec" / "data"
    for rev, caps in (("v1", PRESETS[name].v1), ("seed", PRESETS[name].v2),
                      ("sdk-2.4.0", PRESETS[name].v2)):
        defs = json.loads((root / rev / "schema.json").read_text())["$defs"]
        jsonschema.validate(dict(caps), {"$ref": "#/$defs/ClientCapabilities", "$defs": defs})
