#!/usr/bin/env node
// A small, deterministic ACP v2 agent on the official TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, entry point "@agentclientprotocol/sdk/experimental/v2").
//
// It exists as a fuzzing target: the protocol code (framing, routing, validation,
// concurrency) is the SDK's; the agent logic follows the v2 prompt lifecycle with no LLM
// behind it. One prompt runs this script, with a short delay (ACP_EXAMPLE_DELAY_MS,
// default 20) between steps so that a session/cancel can land mid-turn:
//
//   prompt accepted (response carries the user messageId)
//   user_message_chunk (one per prompt block)   state_update running
//   agent_message_chunk x2                      tool_call_update pending (title, kind)
//   state_update requires_action                session/request_permission
//   state_update running
//     allowed:   tool in_progress, tool_call_content_chunk, tool completed
//     rejected:  tool failed
//   agent_message_chunk                         usage_update
//   state_update idle (stopReason end_turn)
//
// A prompt whose text contains "no tools" skips the tool call. session/cancel aborts the
// turn's AbortController: delays reject, and the permission request (sent with
// cancellationSignal + stopWaitingOnCancel, as the SDK documents for session/cancel) is
// withdrawn with $/cancel_request; the turn ends with the tool cancelled and idle cancelled.
// A prompt sent while the session is busy is held until the current turn ends; a cancel
// answers held prompts with -32800.
//
// stdout carries only the protocol; logs go to stderr (ACP_EXAMPLE_LOG_LEVEL=info for more).

import { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";

import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const AGENT_NAME = "acp-model-sdk-typescript-example";
const AGENT_VERSION = "0.1.0";
const CONTEXT_SIZE = 200_000;

const parsedDelay = Number(process.env.ACP_EXAMPLE_DELAY_MS ?? "20");
const DELAY_MS = Number.isFinite(parsedDelay) && parsedDelay >= 0 ? parsedDelay : 20;
const VERBOSE = (process.env.ACP_EXAMPLE_LOG_LEVEL ?? "").toLowerCase() === "info";

function log(...args) {
  if (VERBOSE) console.error(`[${AGENT_NAME}]`, ...args);
}

/**
 * @typedef {object} Turn
 * @property {number} number
 * @property {string} userMessageId
 * @property {acp.ContentBlock[]} prompt
 * @property {AbortController} abort     aborted by session/cancel or session/close
 * @property {Promise<void>} done         settles after the turn's final idle was sent
 * @property {boolean} finishing          past the work: a cancel only changes the stop reason
 * @property {string | null} openToolCall a tool call not yet in a final status
 */

/**
 * @typedef {object} Session
 * @property {string} sessionId
 * @property {string} cwd
 * @property {number} turns
 * @property {number} toolCalls
 * @property {number} usedTokens
 * @property {Turn | null} current
 * @property {number} cancelEpoch  bumped by each session/cancel: held prompts compare against it
 * @property {Array<{kind: "user" | "agent", messageId: string, content: acp.ContentBlock[]}>} history
 * @property {boolean} closed
 * @property {"idle" | "running" | "requires_action"} shown  the last state_update sent
 */

/** @type {Map<string, Session>} */
const sessions = new Map();
/** @type {acp.AgentConnection | undefined} set once connected, read to tell a closed client */
let connection;
let sessionCounter = 0;

/** @returns {Session} */
function requireSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session || session.closed) throw acp.RequestError.sessionNotFound(sessionId);
  return session;
}

/** @param {acp.AgentContext} client */
function sender(client, session) {
  /** @param {acp.SessionUpdate} update */
  return (update) => {
    // in the order they are written: a resume's snapshot repeats the last one
    if (update.sessionUpdate === "state_update") session.shown = update.state;
    return client.notify(acp.methods.client.session.update, {
      sessionId: session.sessionId,
      update,
    });
  };
}

function pause(signal) {
  return DELAY_MS > 0 ? sleep(DELAY_MS, undefined, { signal }) : Promise.resolve();
}

function promptText(prompt) {
  return prompt
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join(" ");
}

function usage(session) {
  return {
    sessionUpdate: "usage_update",
    used: Math.min(session.usedTokens, CONTEXT_SIZE),
    size: CONTEXT_SIZE,
    cost: { amount: Math.round(session.usedTokens * 2) / 1e6, currency: "USD" },
  };
}

function cancelTurn(session) {
  session.cancelEpoch += 1;
  const turn = session.current;
  if (turn && !turn.abort.signal.aborted) turn.abort.abort(new Error("session/cancel"));
  return turn;
}

const CANCELLED = Symbol("cancelled");

/**
 * Runs one turn after its prompt was accepted. Never rejects: every path ends with idle.
 * @param {acp.AgentContext} client
 * @param {Session} session
 * @param {Turn} turn
 */
async function runTurn(client, session, turn) {
  const send = sender(client, session);
  const signal = turn.abort.signal;
  let stopReason = "end_turn";
  try {
    // Report the insertion, then announce foreground work; both are sent even if a cancel
    // already arrived, so that the cancelled idle belongs to announced work.
    for (const block of turn.prompt) {
      await send({ sessionUpdate: "user_message_chunk", messageId: turn.userMessageId, content: block });
    }
    if (turn.prompt.length === 0) {
      // The schema allows an empty prompt; it is still inserted.
      await send({ sessionUpdate: "user_message", messageId: turn.userMessageId, content: [] });
    }
    session.history.push({ kind: "user", messageId: turn.userMessageId, content: turn.prompt });
    await send({ sessionUpdate: "state_update", state: "running" });
    try {
      if (signal.aborted) throw CANCELLED;
      await work(client, session, turn, send);
    } catch (error) {
      if (!signal.aborted) throw error;
      // Aborted delays throw AbortError and the withdrawn permission request -32800: all mean
      // "cancelled" here, never a failure reported to the client.
      stopReason = "cancelled";
      if (turn.openToolCall) {
        await send({ sessionUpdate: "tool_call_update", toolCallId: turn.openToolCall, status: "cancelled" });
        turn.openToolCall = null;
      }
    }
    turn.finishing = true;
    await send(usage(session));
    // A cancel read while finishing still ends this work as cancelled (CANCEL-07).
    if (signal.aborted) stopReason = "cancelled";
    await send({ sessionUpdate: "state_update", state: "idle", stopReason });
  } catch (error) {
    if (connection?.signal.aborted) {
      // The client went away (stdin closed): nobody is left to report to.
      log(`connection closed during turn ${turn.number} of ${session.sessionId}`);
      return;
    }
    console.error(`[${AGENT_NAME}] turn ${turn.number} of ${session.sessionId} failed`, error);
    // A custom (underscore) stop reason keeps the lifecycle closed for the client.
    await send({ sessionUpdate: "state_update", state: "idle", stopReason: "_internal_error" }).catch(() => {});
  } finally {
    if (session.current === turn) session.current = null;
  }
}

/** @param {Turn} turn */
async function work(client, session, turn, send) {
  const signal = turn.abort.signal;
  const text = promptText(turn.prompt);
  const words = text.split(/\s+/).filter(Boolean).length;
  const agentMessageId = `msg_agent_${turn.number}`;
  /** @type {acp.ContentBlock[]} */
  const reply = [];
  const say = async (chunk) => {
    const block = { type: "text", text: chunk };
    reply.push(block);
    session.usedTokens += chunk.split(/\s+/).filter(Boolean).length + 1;
    await send({ sessionUpdate: "agent_message_chunk", messageId: agentMessageId, content: block });
  };

  session.usedTokens += words + 1;
  await pause(signal);
  await say("Let me look at your message. ");
  await pause(signal);
  await say(`It has ${words} word(s). `);
  if (!text.toLowerCase().includes("no tools")) {
    await pause(signal);
    await tool(client, session, turn, text, send, say);
  }
  await pause(signal);
  await say("Done.");
  session.history.push({ kind: "agent", messageId: agentMessageId, content: reply });
}

async function tool(client, session, turn, text, send, say) {
  const signal = turn.abort.signal;
  session.toolCalls += 1;
  const toolCallId = `call_${session.toolCalls}`;
  turn.openToolCall = toolCallId;
  await send({
    sessionUpdate: "tool_call_update",
    toolCallId,
    title: "Counting characters in the prompt",
    kind: "read",
    status: "pending",
    rawInput: { chars: text.length },
  });
  await send({ sessionUpdate: "state_update", state: "requires_action" });
  // On abort the SDK sends $/cancel_request and rejects at once with -32800 (stopWaitingOnCancel).
  let outcome = null;
  try {
    const response = await client.request(
      acp.methods.client.session.requestPermission,
      {
        sessionId: session.sessionId,
        title: "Allow the character counter?",
        description: "The example tool reads the prompt text and counts its characters.",
        subject: { type: "tool_call", toolCall: { toolCallId } },
        options: [
          { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
          { optionId: "reject-once", name: "Reject", kind: "reject_once" },
        ],
      },
      { cancellationSignal: signal, stopWaitingOnCancel: true },
    );
    outcome = response.outcome;
  } catch (error) {
    if (signal.aborted) throw error;
    // An error or malformed answer is no approval: the tool fails, the turn goes on.
    console.error(`[${AGENT_NAME}] permission request for ${toolCallId} failed:`, error?.message ?? error);
  }
  if (signal.aborted) throw CANCELLED; // the answer raced our cancellation
  await send({ sessionUpdate: "state_update", state: "running" });
  // Only the allow option approves; any other selection or outcome does not (PERM-11).
  const allowed = outcome?.outcome === "selected" && outcome.optionId === "allow-once";
  if (!allowed) {
    await send({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: outcome?.outcome === "cancelled" ? "cancelled" : "failed",
      content: [{ type: "content", content: { type: "text", text: "Permission was not granted." } }],
    });
    turn.openToolCall = null;
    await say("I did not run the tool. ");
    return;
  }
  await send({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
  await pause(signal);
  await send({
    sessionUpdate: "tool_call_content_chunk",
    toolCallId,
    content: { type: "content", content: { type: "text", text: "Counting..." } },
  });
  await pause(signal);
  const result = `${text.length} characters`;
  await send({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: "completed",
    content: [{ type: "content", content: { type: "text", text: result } }],
    rawOutput: { chars: text.length },
  });
  turn.openToolCall = null;
  await say(`The tool counted ${result}. `);
}

const app = acp
  .agent({ name: AGENT_NAME })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    // The SDK answers protocolVersion < 2 with -32022 before this runs (docs/sdk-agents.md).
    log("initialize from", params.info?.name, params.info?.version);
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: AGENT_NAME, title: "SDK example (TypeScript)", version: AGENT_VERSION },
      capabilities: { session: { prompt: { embeddedContext: {} } } },
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    sessionCounter += 1;
    const sessionId = `sess_ts_${String(sessionCounter).padStart(4, "0")}`; // deterministic for replay
    sessions.set(sessionId, {
      sessionId,
      cwd: params.cwd,
      turns: 0,
      toolCalls: 0,
      usedTokens: 0,
      current: null,
      cancelEpoch: 0,
      history: [],
      closed: false,
      shown: "idle",
    });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.list, ({ params }) => ({
    sessions: [...sessions.values()]
      .filter((session) => params.cwd == null || session.cwd === params.cwd)
      .map((session) => ({ sessionId: session.sessionId, cwd: session.cwd })),
  }))
  .onRequest(acp.methods.agent.session.resume, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    session.closed = false;
    const send = sender(client, session);
    if (params.replayFrom?.type === "start") {
      for (const entry of session.history) {
        await send({
          sessionUpdate: entry.kind === "user" ? "user_message" : "agent_message",
          messageId: entry.messageId,
          content: entry.content,
        });
      }
    }
    // The SDK documents a current-state snapshot after replay and before the response. It is
    // the state last reported: a turn stays current until its idle's send settles, so the
    // turn's own state could repeat "running" after that idle.
    await send({ sessionUpdate: "state_update", state: session.shown });
    return {};
  })
  .onRequest(acp.methods.agent.session.close, async ({ params }) => {
    const session = requireSession(params.sessionId);
    // "As if session/cancel": aborting withdraws pending permission requests; the cancelled
    // idle goes out before this response.
    const turn = cancelTurn(session);
    if (turn) await turn.done;
    session.closed = true; // kept so session/resume can restore it
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = requireSession(params.sessionId);
    const epoch = session.cancelEpoch;
    // Busy: hold the prompt until the current turn has reported idle. $/cancel_request for
    // this prompt aborts `signal`; the SDK then answers -32800.
    while (session.current) {
      await Promise.race([
        session.current.done,
        new Promise((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        }),
      ]);
      if (session.cancelEpoch !== epoch || session.closed) {
        throw acp.RequestError.requestCancelled({ sessionId: session.sessionId });
      }
    }
    session.turns += 1;
    /** @type {Turn} */
    const turn = {
      number: session.turns,
      userMessageId: `msg_user_${session.turns}`,
      prompt: params.prompt,
      abort: new AbortController(),
      done: Promise.resolve(),
      finishing: false,
      openToolCall: null,
    };
    session.current = turn;
    turn.done = runTurn(client, session, turn);
    // The response is the insertion receipt: it names the user message the turn will echo.
    return { messageId: turn.userMessageId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (!session) {
      log("session/cancel for unknown session", params.sessionId);
      return;
    }
    const turn = cancelTurn(session);
    if (turn?.finishing) log("cancel arrived while finishing turn", turn.number);
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
connection = app.connect(stream);
await connection.closed;
log("connection closed");
