"""ACP v1 as rule rows: which catalogued rules v1 states too (with its own citation), and the few
rules only v1 has.

v1 is judged by its own text (``spec/data/v1/docs``, the v1 schema SDK 2.4.0 ships). Where v1
and v2 state the same obligation it is one rule, decided by one check, with a citation per
revision (``Rule.cited_in``); :func:`acp_model.spec.rules` adds ``v1`` to the revisions of
every row named here. Rules absent from this table do not apply under v1: the v2 state
reports (STATE-*, PROMPT-05/06, the receipts), v2-only shapes (message ids, plans, subjects,
capability markers, ``info``), and the liveness rules v1 folds into PROMPT-04 (its turn ends
with the prompt's response, so an unfinished turn is one unanswered prompt, not also STATE-02
or CANCEL-06). Open-enum rules (ENUM-02, STOP-03, TOOL-14/15, PERM-07) are v2's: v1's enums
are closed, and the schema judges them.
"""

from __future__ import annotations

from types import MappingProxyType

PT = "v1 prompt-turn.mdx"
SS = "v1 session-setup.mdx"
IN = "v1 initialization.mdx"
TR = "v1 transports.mdx"

# rule ID -> where the v1 text states it
V1_CITATIONS: MappingProxyType[str, str] = MappingProxyType({
    "INIT-01": f"{SS} intro ('Clients MUST first complete the initialization phase')",
    "INIT-03": f"{IN} ('The Agent MUST respond with the chosen protocol version and the "
               "capabilities it supports')",
    "INIT-04": f"{IN} §Protocol version ('If the Agent supports the requested version, it "
               "MUST respond with the same version')",
    "INIT-05": f"{IN} §Protocol version ('the Client SHOULD close the connection')",
    "INIT-18": f"{IN} (the agent responds with the chosen version and its capabilities: "
               "INIT-03's MUST, which a refusal leaves unmet); v1 schema $defs.InitializeRequest "
               "(clientCapabilities and its fields have defaults)",
    "INIT-10": f"{IN} §Session Capabilities ('all Agents MUST support session/new, session/prompt, "
               "session/cancel, and session/update')",
    "SESS-01": f"{SS} §Creating a Session ('MUST respond with a unique Session ID')",
    "SESS-14": f"{SS} §Creating a Session ('MUST respond with a unique Session ID that "
               "identifies this conversation'); §Session ID ('Clients use this ID to: Send "
               "prompt requests'); v1 schema $defs.ErrorCode",
    "SESS-02": f"{SS} §Working Directory ('MUST be an absolute path')",
    "SESS-10": f"{SS} §Closing ('The Agent MUST cancel any ongoing work for that session as if "
               "session/cancel had been called')",
    "SESS-12": f"{SS} §Session ID; v1 schema $defs.SessionNotification",
    "SESS-13": f"{SS} §Session ID",
    "PROMPT-01": f"{PT} intro ('Before sending prompts, Clients MUST first complete the "
                 "initialization phase and session setup')",
    "PROMPT-02": f"{PT} §1 User Message ('Clients MUST restrict types of content according to "
                 "the Prompt Capabilities')",
    "PROMPT-04": f"{PT} §4 Check for Completion ('the Agent MUST respond to the original "
                 "session/prompt request with a StopReason')",
    "PROMPT-10": f"{PT} closing ('Once a prompt turn completes, the Client may send another "
                 "session/prompt')",
    "PROMPT-13": f"{PT} §2 Agent Processing",
    "STATE-04": f"{PT} §4 ('Agents MAY stop the turn at any point by returning the "
                "corresponding StopReason')",
    "TOOL-10": f"{PT} §5 ('As the tool runs, the Agent MAY send additional updates')",
    "TOOL-19": "v1 overview.mdx ('All file paths in the protocol MUST be absolute'); "
               "v1 tool-calls.mdx §Following the Agent",
    "USAGE-01": f"{PT} §3 Session Usage Updates ('The Agent MAY also report')",
    "USAGE-02": f"{PT} §3 Session Usage Updates ('used and size are required and non-null')",
    "PERM-01": f"{PT} §5 ('the Agent MAY request permission')",
    "PERM-11": "v1 tool-calls.mdx §Permission Options ('reject_once - Reject this operation "
               f"only this time'); {PT} §5 Tool Invocation and Status Reporting (before any "
               "answer v1 says only that the Agent SHOULD invoke the tool once permission is "
               "granted: not judged)",
    "PERM-12": "v1 overview.mdx; JSON-RPC 2.0 (a request is answered)",
    "PERM-13": "v1 cancellation.mdx (several requests may be pending)",
    "CANCEL-01": f"{PT} §Cancellation ('Clients MAY cancel an ongoing prompt turn at any time')",
    "CANCEL-02": "v1 overview.mdx; JSON-RPC 2.0 (a notification is never answered)",
    "CANCEL-04": f"{PT} §Cancellation ('The Client MUST respond to all pending "
                 "session/request_permission requests with the cancelled outcome')",
    "CANCEL-05": f"{PT} §Cancellation ('SHOULD stop all language model requests and all tool "
                 "call invocations as soon as possible')",
    "CANCEL-07": f"{PT} §Cancellation ('MUST respond to the original session/prompt request "
                 "with the cancelled stop reason'; for the errors of aborted work, its warning "
                 "box: 'Agents MUST catch these errors')",
    "CANCEL-08": f"{PT} §Cancellation ('MAY send session/update notifications with content or "
                 "tool call updates after receiving the session/cancel')",
    "CANCEL-09": f"{PT} §Cancellation ('it MUST ensure that it does so before responding to the "
                 "session/prompt request')",
    "CANCEL-11": f"{PT} §Stop Reasons ('cancelled: The Client cancels the turn')",
    "CANCEL-12": "v1 cancellation.mdx §$/cancel_request",
    "CANCEL-13": "v1 cancellation.mdx",
    "CANCEL-14": "v1 cancellation.mdx ('MUST send one of these responses for the original "
                 "request')",
    "RPC-01": "v1 overview.mdx §Communication Model; JSON-RPC 2.0",
    "RPC-02": f"{TR} ('JSON-RPC messages MUST be UTF-8 encoded')",
    "RPC-04": f"{TR} §stdio ('The agent MUST NOT write anything to its stdout that is not a "
              "valid ACP message')",
    "RPC-07": "JSON-RPC 2.0 §6 Batch (v1 overview.mdx: ACP is JSON-RPC 2.0)",
    # the sentence itself is JSON-RPC's, quoted as the sdk-2.4.0 row quotes it (the s12 reader:
    # the v1 row named the section without it); v1 says it follows that text
    "RPC-09": "JSON-RPC 2.0 §4.1 Notification ('The Server MUST NOT reply to a Notification, "
              "including those that are within a batch request'); v1 overview.mdx "
              "§Communication Model ('The protocol follows the JSON-RPC 2.0 specification', "
              "'Notifications: One-way messages that don't expect a response')",
    "RPC-12": "v1 schema $defs.ErrorCode",
    "ACPM-ALIVE": f"{TR} §stdio",
    "ACPM-OUTPUT": f"{TR} §stdio; the fuzzer's own limit",
    "ACPM-ANSWER": "v1 overview.mdx; JSON-RPC 2.0 §5",
    "ACPM-SCHEMA": f"{TR} §stdio (only valid ACP messages); v1 schema",
    "A-01.forbid": f"{PT} closing ('Once a prompt turn completes, the Client may send another')",
    "A-10.cancel": f"{PT} §Cancellation; RULES.md A-10",
})

# Rules only v1 states: (id, party, strength, kind, statement, citation[, notes])
V1_ONLY: tuple[tuple[str, ...], ...] = (
    ("V1-LOAD-01", "agent", "MUST", "safety",
     "session/load replays the whole conversation as session/update notifications before its "
     "response: no replayed content for the loaded session follows the response.",
     f"{SS} §Loading Sessions ('When all the conversation entries have been streamed to the "
     "Client, the Agent MUST respond')"),
    ("V1-TOOL-01", "agent", "SHOULD", "safety",
     "A tool_call_update names a tool call already reported (by a tool_call update, or as "
     "a permission request's toolCall).",
     "v1 tool-calls.mdx §Updating ('As tools execute, Agents send updates'); v1 schema "
     "$defs.ToolCallUpdate ('An update to an existing tool call')"),
    ("V1-TURN-01", "agent", "SHOULD", "safety",
     "A turn's content (message and thought chunks, tool calls and their updates) comes before "
     "the response that ends the turn: none after it while no prompt came since.",
     f"{PT} §4 Check for Completion ('If there are no pending tool calls, the turn ends and "
     "the Agent MUST respond to the original session/prompt request'); §Stop Reasons "
     "('end_turn: The language model finishes responding without requesting more tools')",
     "Our reading, judged as a warning: the response ends the turn, so content of the turn "
     "after it shows work still pending when the agent answered, and a client that takes the "
     "response as the turn's end (as v1's lifecycle has it) drops or misplaces that content. "
     "No sentence forbids it outright ('Agents MAY stop the turn at any point'; the ACP "
     "maintainers hold that updates may come outside a turn, agentclientprotocol/"
     "claude-agent-acp#824), so it is not a failure. A cancelled turn's late content is "
     "CANCEL-09's MUST. Not turn content: session-level updates (commands, modes, "
     "configuration, usage, session info), a reopen's replay (V1-LOAD-01), content after a "
     "new prompt was sent. v2 lets background activity emit updates while idle (seed "
     "§Session States, sdk-2.4.0 $defs.StateUpdate), so there it is not judged."),
    ("V1-RESUME-01", "agent", "MUST NOT", "safety",
     "session/resume replays nothing: no conversation content for the resumed session comes "
     "between the request and its response.",
     f"{SS} §Resuming Sessions ('the Agent MUST NOT replay the conversation history via "
     "session/update notifications before responding')"),
)
