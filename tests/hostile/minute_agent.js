// A v1 agent that decides by its wall clock's minute, as gemini-cli does (it names a
// session's recording file by the minute it was made): a prompt in the minute its session was
// made is answered at once, one in a later minute never (PROMPT-04).
//
// What crossed the wire is the same either way; only the agent's clock tells the two apart, so
// a replay reproduces it only when it holds that clock (acp_model/fuzzing/clock.py). Node, not
// Python: libfaketime 0.9.10 breaks Python 3.11+'s sleeps, so a Python agent's clock is not held.
const readline = require("readline");

const made = new Map(); // session id -> the minute its clock read when it was made
const minute = () => Math.floor(Date.now() / 60000);
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\n");

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (!msg || typeof msg !== "object" || !("id" in msg) || !("method" in msg)) return;
  const { method, id } = msg;
  const params = msg.params && typeof msg.params === "object" ? msg.params : {};
  if (method === "initialize") {
    send({ jsonrpc: "2.0", id, result: { protocolVersion: 1, agentCapabilities: {},
                                        agentInfo: { name: "minute-agent", version: "1" } } });
  } else if (method === "session/new") {
    const sid = `minute-${made.size + 1}`;
    made.set(sid, minute());
    send({ jsonrpc: "2.0", id, result: { sessionId: sid } });
  } else if (method === "session/prompt") {
    if (made.get(params.sessionId) === minute()) {
      send({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } });
    }
  } else {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } });
  }
});
