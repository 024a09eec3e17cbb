#!/usr/bin/env node
// A small ACP v2 client on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// "@agentclientprotocol/sdk/experimental/v2", ClientApp.connectWith): it starts the agent
// given on its command line, initializes, opens a session and sends PROMPTS prompts one
// after the other, each run to its idle, answering every permission request with its first
// allow option. It is the "real editor" of the proxy tests: acp-model's own client is not
// the only one that drives an agent through `acp-model proxy`.
//
//   node client.mjs [--prompts N] [--cancel] [--capture FILE] -- AGENT_CMD [ARGS...]
//
// --cancel sends session/cancel while the last prompt's work runs. --capture writes every
// byte the client received from the agent to FILE. On stdout: one JSON line per session
// update and prompt response the SDK delivered, then {"done": true}.

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { PassThrough, Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk/experimental/v2";

const argv = process.argv.slice(2);
const cut = argv.indexOf("--");
if (cut < 0 || cut === argv.length - 1) {
  console.error("usage: node client.mjs [--prompts N] [--cancel] [--capture FILE] -- AGENT_CMD ...");
  process.exit(2);
}
const opts = argv.slice(0, cut);
const agentCmd = argv.slice(cut + 1);
const prompts = Number(opts.includes("--prompts") ? opts[opts.indexOf("--prompts") + 1] : 2);
const cancelLast = opts.includes("--cancel");
const capturePath = opts.includes("--capture") ? opts[opts.indexOf("--capture") + 1] : null;

const child = spawn(agentCmd[0], agentCmd.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const received = [];
const fromAgent = new PassThrough();
child.stdout.on("data", (chunk) => received.push(chunk));
child.stdout.pipe(fromAgent);

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const app = acp.client().onRequest("session/request_permission", async (params) => {
  const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
  out({ permission: params.title ?? null });
  return { outcome: { outcome: "selected", optionId: allow.optionId } };
});

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(fromAgent));
await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: 2, capabilities: {}, info: { name: "sdk-typescript-client", version: "0.1.0" },
  });
  out({ initialize: init.protocolVersion });
  await ctx.buildSession(process.cwd()).withSession(async (session) => {
    for (let n = 1; n <= prompts; n++) {
      const response = await session.prompt([{ type: "text", text: `turn ${n}: fix the tests` }]);
      out({ prompt: n, response });
      if (cancelLast && n === prompts) await ctx.notify("session/cancel", { sessionId: session.sessionId });
      for (;;) {
        const message = await session.nextUpdate();
        if (message.kind === "stop") {
          out({ stop: message.stopReason ?? null });
          break;
        }
        out({ update: message.update.sessionUpdate });
      }
    }
  });
});
if (capturePath) writeFileSync(capturePath, Buffer.concat(received));
out({ done: true });
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
