"""The scripted model: requests matched to scripted turns, each reply on the wire as the API's
own clients read it (server-sent events over real HTTP)."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from acp_model.llm.script import (
    Fail,
    ModelToolCall,
    Stall,
    StopReply,
    Text,
    Tools,
    describe_script,
    script_from_json,
)
from acp_model.llm.server import ScriptedModel, tag_text


@pytest.fixture
def anthropic() -> Iterator[ScriptedModel]:
    with ScriptedModel("anthropic", workspace="/work", stall_limit=5) as model:
        yield model


@pytest.fixture
def responses() -> Iterator[ScriptedModel]:
    with ScriptedModel("openai-responses", stall_limit=5) as model:
        yield model


def post(url: str, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    """POST and read the whole answer: the SSE events' data, or the JSON error body."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            text = resp.read().decode()
            status = resp.status
    except urllib.error.HTTPError as err:
        return err.code, [json.loads(err.read())]
    events = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
    return status, events


def obj(required: tuple[str, ...], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


STR = {"type": "string"}
# tools shaped as the agents we know send them (names, descriptions, schemas)
CLAUDE_TOOLS = [
    {"name": "Bash", "description": "Executes a given bash command in a persistent shell.",
     "input_schema": obj(("command",), command=STR, description=STR,
                         timeout={"type": "number"})},
    {"name": "Read", "description": "Reads a file from the local filesystem.",
     "input_schema": obj(("file_path",), file_path=STR, offset={"type": "number"})},
    {"name": "Write", "description": "Writes a file to the local filesystem.",
     "input_schema": obj(("file_path", "content"), file_path=STR, content=STR)},
]
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY.",
     "parameters": obj(("cmd",), cmd=STR, workdir=STR, yield_time_ms={"type": "number"},
                       sandbox_permissions={
                           "type": "string", "description": 'Sandbox permissions for the '
                           'command. Set to "require_escalated" to request running without '
                           'sandbox restrictions; defaults to "use_default".'},
                       justification=STR)},
    {"type": "custom", "name": "apply_patch", "description": "Use the apply_patch tool to "
     "edit files.", "format": {"type": "grammar"}},
]
QWEN_TOOLS = [
    {"type": "function", "function": {
        "name": "run_shell_command", "description": "Executes a given shell command.",
        "parameters": obj(("command",), command=STR, description=STR, directory=STR)}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Writes content to a specified file.",
        "parameters": obj(("file_path", "content"), file_path=STR, content=STR)}},
]


def claude_body(prompt: str, *rounds: str, tools: bool = True) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": prompt}]}]
    for n, _ in enumerate(rounds):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]})
    return {"model": "claude", "stream": True, "messages": messages,
            "tools": CLAUDE_TOOLS if tools else []}


def test_a_scripted_turn_calls_a_tool_then_streams_text(anthropic: ScriptedModel) -> None:
    tag = anthropic.register((Tools("shell"), Text(3, 0)))
    url = f"{anthropic.url}/v1/messages?beta=true"
    status, events = post(url, claude_body(f"fix tests {tag_text(tag)}"))
    assert status == 200
    use = next(e for e in events if e["type"] == "content_block_start")["content_block"]
    assert use["type"] == "tool_use" and use["name"] == "Bash"
    args = json.loads(next(e for e in events if e["type"] == "content_block_delta")
                      ["delta"]["partial_json"])
    assert args == {"command": f"touch /work/acpm-scratch/acpm-{tag}-0-0.txt"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    status, events = post(url, claude_body(f"fix tests {tag_text(tag)}", "round 1"))
    texts = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert len(texts) == 3 and events[-2]["delta"]["stop_reason"] == "end_turn"
    assert [(s.step, s.reply) for s in anthropic.served(tag)] == [(0, "tools"), (1, "text")]
    # the journal keeps the concrete call, the workspace as a placeholder
    assert anthropic.sent(tag) == {0: (ModelToolCall("Bash", {
        "command": f"touch {{workspace}}/acpm-scratch/acpm-{tag}-0-0.txt"}),)}


def test_side_requests_get_a_short_text(anthropic: ScriptedModel) -> None:
    tag = anthropic.register((Tools("shell"),))
    # a title request quotes the prompt but offers no tools
    _, events = post(f"{anthropic.url}/v1/messages",
                     claude_body(f"Write a title for: fix {tag_text(tag)}", tools=False))
    assert events[-2]["delta"]["stop_reason"] == "end_turn"
    assert anthropic.served()[-1].reply == "side"


def test_an_edit_writes_into_the_workspace(anthropic: ScriptedModel) -> None:
    tag = anthropic.register((Tools("edit", 2),))
    _, events = post(f"{anthropic.url}/v1/messages", claude_body(f"edit {tag_text(tag)}"))
    uses = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [u["name"] for u in uses] == ["Write", "Write"]
    args = [json.loads(e["delta"]["partial_json"]) for e in events
            if e["type"] == "content_block_delta"]
    assert args == [{"file_path": f"/work/acpm-scratch/acpm-{tag}-0-{k}.md",
                     "content": "written by the acp-model scripted model\n"} for k in (0, 1)]


def test_a_failure_fails_once_and_the_retry_goes_through(anthropic: ScriptedModel) -> None:
    tag = anthropic.register((Fail("overloaded"),))
    body = claude_body(f"go {tag_text(tag)}")
    status, events = post(f"{anthropic.url}/v1/messages", body)
    assert status == 529 and events[0]["error"]["type"] == "overloaded_error"
    status, events = post(f"{anthropic.url}/v1/messages", body)
    assert status == 200 and events[-1]["type"] == "message_stop"


def test_stop_reasons_reach_the_wire(anthropic: ScriptedModel) -> None:
    for reason in ("max_tokens", "refusal"):
        tag = anthropic.register((StopReply(reason),))
        _, events = post(f"{anthropic.url}/v1/messages", claude_body(f"go {tag_text(tag)}"))
        assert events[-2]["delta"]["stop_reason"] == reason


def _open_stall(model: ScriptedModel, tag: str) -> tuple[socket.socket, bytes]:
    """A model request of the turn ``tag``, its response begun (then nothing comes): the
    socket and the first bytes of the answer."""
    body = json.dumps(claude_body(f"go {tag_text(tag)}")).encode()
    sock = socket.create_connection(("127.0.0.1", model.port))
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                 b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    head = sock.recv(65536)
    assert b"200 OK" in head
    return sock, head


def test_a_stall_ends_when_the_agent_hangs_up(anthropic: ScriptedModel) -> None:
    tag = anthropic.register((Stall(),))
    sock, head = _open_stall(anthropic, tag)
    with sock:
        assert b"message_start" in head + sock.recv(65536)
    started = time.monotonic()  # hung up: the server stops at its next ping
    while anthropic.served(tag)[-1].reply != "stall" and time.monotonic() - started < 5:
        time.sleep(0.05)
    assert anthropic.served(tag)[-1].reply == "stall"


def test_the_fuzzer_can_end_a_sessions_stalls(anthropic: ScriptedModel) -> None:
    """``end_stalls``: a stalled response of the session's turns finishes at once (a one-chunk
    text and the end of the message), for an agent that waits for its model's stream to end;
    another session's stall goes on."""
    tag = anthropic.register((Stall(),), owner="s1")
    other = anthropic.register((Stall(),), owner="s2")
    sock, head = _open_stall(anthropic, tag)
    with sock, _open_stall(anthropic, other)[0]:
        assert anthropic.end_stalls("s1") == 1
        body = head
        while b"message_stop" not in body:
            chunk = sock.recv(65536)
            assert chunk, body
            body += chunk
        assert b"chunk 1 of 1" in body
        started = time.monotonic()  # the handler returns once the body is out
        while anthropic.stalling("s1") and time.monotonic() - started < 5:
            time.sleep(0.05)
        assert not anthropic.stalling("s1")
        assert anthropic.stalling("s2")


def test_a_client_can_tell_that_its_newest_turn_is_stalled(anthropic: ScriptedModel) -> None:
    """While the response of a session's newest turn stalls, nothing of that turn comes until
    a cancel: the fuzzer stops waiting for it to settle (a wait on a stalled turn cost up to a
    second per action on claude-agent-acp). A stall of an older turn says nothing."""
    tag = anthropic.register((Stall(),), owner="s1")
    assert not anthropic.stalling("s1")
    sock, _ = _open_stall(anthropic, tag)
    assert anthropic.stalling("s1") and not anthropic.stalling("s2")
    sock.close()  # the agent hangs up (a cancel): the server sees it at its next ping
    started = time.monotonic()
    while anthropic.stalling("s1") and time.monotonic() - started < 10:
        time.sleep(0.05)
    assert not anthropic.stalling("s1")
    old = anthropic.register((Stall(),), owner="s1")
    with _open_stall(anthropic, old)[0]:
        assert anthropic.stalling("s1")
        anthropic.register((Text(1),), owner="s1")  # a newer turn of the session
        assert not anthropic.stalling("s1")


def test_a_long_running_command_holds_its_turn_until_its_result_comes(
        anthropic: ScriptedModel) -> None:
    """After a long-running command is sent, the model knows its turn has one out (once the
    agent reports it running, nothing more comes until a cancel: the client's ``settled``),
    which is no stall of the model's own. The next request of the turn, carrying the
    command's result, ends that."""
    tag = anthropic.register((Tools("long"), Text(1)), owner="s1")
    url = f"{anthropic.url}/v1/messages"
    _, events = post(url, claude_body(f"go {tag_text(tag)}"))
    args = json.loads(next(e for e in events if e["type"] == "content_block_delta")
                      ["delta"]["partial_json"])
    assert args["command"].startswith("sleep ") and f"acpm-{tag}-0-0.txt" in args["command"]
    assert anthropic.commanding("s1") and not anthropic.commanding("s2")
    assert not anthropic.stalling("s1")
    post(url, claude_body(f"go {tag_text(tag)}", "round 1"))  # the command's result
    assert not anthropic.commanding("s1")
    short = anthropic.register((Tools("shell"),), owner="s1")
    post(url, claude_body(f"go {tag_text(short)}"))
    assert not anthropic.commanding("s1")  # an ordinary command says nothing


def responses_body(prompt: str, rounds: int = 0, tools: bool = True) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": prompt}]}]
    for n in range(rounds):
        items += [{"type": "function_call", "call_id": f"c{n}", "name": "exec_command",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}]
    return {"model": "gpt", "stream": True, "input": items,
            "tools": CODEX_TOOLS if tools else []}


def test_the_responses_api_calls_tools_and_streams(responses: ScriptedModel) -> None:
    tag = responses.register((Tools("shell", 2), Text(2, 0), StopReply("max_tokens")))
    url = f"{responses.url}/v1/responses"
    _, events = post(url, responses_body(f"fix {tag_text(tag)}"))
    calls = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [c["name"] for c in calls] == ["exec_command", "exec_command"]
    # asking for escalation (the value its schema describes) is what makes codex ask
    assert json.loads(calls[0]["arguments"]) == {
        "cmd": f"touch acpm-scratch/acpm-{tag}-0-0.txt", "sandbox_permissions": "require_escalated",
        "justification": "acp-model scripted tool call"}
    assert events[-1]["type"] == "response.completed"
    _, events = post(url, responses_body(f"fix {tag_text(tag)}", rounds=1))
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == [
        "chunk 1 of 2. ", "chunk 2 of 2. "]
    _, events = post(url, responses_body(f"fix {tag_text(tag)}", rounds=2))
    assert events[-1]["type"] == "response.incomplete"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))


def test_scripts_read_back_and_describe_themselves() -> None:
    script = (Tools("shell"), Text(3, 200))
    assert script_from_json([r.to_json() for r in script]) == script
    assert describe_script(script) == "model: tool call (shell command), then 3 chunks 200 ms apart"
    with pytest.raises(ValueError):
        Tools("teleport")


def chat_body(prompt: str, rounds: int = 0, *, stream: bool = True) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"},
                                      {"role": "user", "content": prompt}]
    for n in range(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "run_shell_command", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "ok"})
    return {"model": "qwen3-coder-plus", "stream": stream, "messages": messages,
            "tools": QWEN_TOOLS}


def post_chat(url: str, body: dict[str, Any]) -> list[Any]:
    """The ``data:`` payloads of a chat completions stream, ``[DONE]`` included."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as resp:
        text = resp.read().decode()
    if not body.get("stream"):
        return [json.loads(text)]
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:])
            for line in text.splitlines() if line.startswith("data: ")]


def test_the_chat_completions_api_calls_tools_and_streams() -> None:
    with ScriptedModel("openai-chat", workspace="/work", stall_limit=5) as chat:
        tag = chat.register((Tools("shell", 2), Tools("edit"), Text(2, 0),
                             StopReply("max_tokens")))
        url = f"{chat.url}/v1/chat/completions"
        chunks = post_chat(url, chat_body(f"fix {tag_text(tag)}"))
        assert chunks[-1] == "[DONE]"
        calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[:-1]
                 if "tool_calls" in c["choices"][0]["delta"]]
        assert [c["function"]["name"] for c in calls] == ["run_shell_command"] * 2
        assert json.loads(calls[0]["function"]["arguments"]) == {
            "command": f"touch /work/acpm-scratch/acpm-{tag}-0-0.txt"}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        chunks = post_chat(url, chat_body(f"fix {tag_text(tag)}", rounds=1))
        edit = chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"]
        assert edit["name"] == "write_file"
        assert json.loads(edit["arguments"])["file_path"].startswith("/work/acpm-scratch/acpm-")
        chunks = post_chat(url, chat_body(f"fix {tag_text(tag)}", rounds=2))
        assert [c["choices"][0]["delta"].get("content") for c in chunks[:-2]] == [
            "chunk 1 of 2. ", "chunk 2 of 2. "]
        chunks = post_chat(url, chat_body(f"fix {tag_text(tag)}", rounds=3))
        assert chunks[-2]["choices"][0]["finish_reason"] == "length"
        # a side question (no stream) gets one plain completion
        (side,) = post_chat(url, chat_body("is the user done?", stream=False))
        assert side["object"] == "chat.completion"
        assert side["choices"][0]["message"]["content"]


def test_an_agent_gone_before_the_headers_is_no_server_error(
        anthropic: ScriptedModel, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A cancel can close the agent's connection before the reply's headers go out: aiohttp
    then raises a ConnectionResetError from ``prepare``. That is the agent hanging up, like a
    hang-up mid-stream, not a traceback on the user's terminal."""
    from aiohttp.client_exceptions import ClientConnectionResetError

    async def gone(*_: Any) -> None:
        raise ClientConnectionResetError("Cannot write to closing transport")

    monkeypatch.setattr(anthropic.adapter, "respond", gone)
    tag = anthropic.register(())
    req = urllib.request.Request(f"{anthropic.url}/v1/messages", headers={
        "Content-Type": "application/json"}, data=json.dumps(claude_body(
            f"go {tag_text(tag)}")).encode())
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=20)
    assert err.value.code == 499
    assert not [r for r in caplog.records if r.name == "aiohttp.server"]


GEMINI_TOOLS = [{"functionDeclarations": [
    {"name": "read_file", "description": "Reads and returns the content of a specified file.",
     "parametersJsonSchema": obj(("absolute_path",), absolute_path=STR)},
    {"name": "run_shell_command", "description": "Executes a given shell command.",
     "parameters": {"type": "OBJECT", "required": ["command"], "properties": {
         "command": {"type": "STRING"}, "dir_path": {"type": "STRING"}}}},
    {"name": "write_file", "description": "Writes content to a specified file.",
     "parametersJsonSchema": obj(("file_path", "content"), file_path=STR, content=STR)}]}]


def gemini_body(prompt: str, rounds: int = 0) -> dict[str, Any]:
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": "This is the Gemini CLI. Setting up context."}]},
        {"role": "model", "parts": [{"text": "Got it."}]},
        {"role": "user", "parts": [{"text": prompt}]}]
    for n in range(rounds):
        contents.append({"role": "model", "parts": [{"functionCall": {
            "id": f"c{n}", "name": "run_shell_command", "args": {}}}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {
            "id": f"c{n}", "name": "run_shell_command", "response": {"output": "ok"}}}]})
    return {"contents": contents, "tools": GEMINI_TOOLS,
            "generationConfig": {"temperature": 0}}


def test_the_gemini_api_calls_tools_and_streams() -> None:
    with ScriptedModel("gemini", workspace="/work", stall_limit=5) as gem:
        assert gem.env() == {"GOOGLE_GEMINI_BASE_URL": gem.url,
                             "GEMINI_API_KEY": "acp-model-scripted"}
        tag = gem.register((Tools("shell"), Tools("edit"), Text(2, 0), StopReply("max_tokens")))
        url = f"{gem.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        status, events = post(url, gemini_body(f"fix {tag_text(tag)}"))
        assert status == 200
        (last,) = events  # the call and the finish reason in one chunk, as the API sends it
        cand = last["candidates"][0]
        assert cand["finishReason"] == "STOP" and last["usageMetadata"]["totalTokenCount"]
        assert last["modelVersion"] == "gemini-2.5-flash"
        (part,) = cand["content"]["parts"]
        assert cand["content"]["role"] == "model"
        assert part["functionCall"]["name"] == "run_shell_command"  # upper-case schema read
        assert part["functionCall"]["args"] == {
            "command": f"touch /work/acpm-scratch/acpm-{tag}-0-0.txt"}
        _, events = post(url, gemini_body(f"fix {tag_text(tag)}", rounds=1))
        call = events[0]["candidates"][0]["content"]["parts"][0]["functionCall"]
        assert call["name"] == "write_file"
        assert call["args"]["file_path"] == f"/work/acpm-scratch/acpm-{tag}-1-0.md"
        _, events = post(url, gemini_body(f"fix {tag_text(tag)}", rounds=2))
        assert [e["candidates"][0]["content"]["parts"][0]["text"] for e in events] == [
            "chunk 1 of 2. ", "chunk 2 of 2. "]
        assert [e["candidates"][0].get("finishReason") for e in events] == [None, "STOP"]
        _, events = post(url, gemini_body(f"fix {tag_text(tag)}", rounds=3))
        assert events[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"
        assert [(s.step, s.reply) for s in gem.served(tag)] == [
            (0, "tools"), (1, "tools"), (2, "text"), (3, "stop")]


def post_json(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as resp:
        assert resp.status == 200
        return json.loads(resp.read())


def test_the_gemini_api_answers_side_questions_and_failures() -> None:
    with ScriptedModel("gemini", stall_limit=5) as gem:
        base = f"{gem.url}/v1beta/models/gemini-2.5-flash"
        # a next-speaker check: JSON drawn from the schema it asks for
        schema = {"type": "object", "required": ["reasoning", "next_speaker"], "properties": {
            "reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["user", "model"]}}}
        answer = post_json(f"{base}:generateContent", {
            "contents": [{"role": "user", "parts": [{"text": "who speaks next?"}]}],
            "generationConfig": {"responseMimeType": "application/json",
                                 "responseJsonSchema": schema}})
        text = answer["candidates"][0]["content"]["parts"][0]["text"]
        assert json.loads(text) == {"reasoning": "", "next_speaker": "user"}
        assert post_json(f"{base}:countTokens", {"contents": []}) == {"totalTokens": 100}
        tag = gem.register((Fail("overloaded"),))
        url = f"{base}:streamGenerateContent?alt=sse"
        status, (error,) = post(url, gemini_body(f"go {tag_text(tag)}"))
        assert status == 503 and error["error"]["status"] == "UNAVAILABLE"
        status, events = post(url, gemini_body(f"go {tag_text(tag)}"))
        assert status == 200 and events[-1]["candidates"][0]["finishReason"] == "STOP"
        # a request without tools (a title, a summary) is a side request, whatever it quotes
        tag = gem.register((Tools("shell"),))
        body = gemini_body(f"summarize {tag_text(tag)}")
        del body["tools"]
        _, events = post(url, body)
        assert "text" in events[-1]["candidates"][0]["content"]["parts"][0]
        assert gem.served()[-1].reply == "side"
