/**
 * A replay worker thread's entry (workers.ts starts it): decodes and decides the pages posted to
 * it, one at a time in the order posted, and answers each with its tally or its error.
 */
import { parentPort } from "node:worker_threads";
import { decidePage } from "./replay.js";
import type { PageReply, PageRequest } from "./workers.js";

const port = parentPort;
if (!port) throw new Error("src/service/replay/worker.ts runs as a worker thread (workers.ts)");

port.on("message", (m: PageRequest) => {
  let reply: PageReply;
  try {
    reply = { id: m.id, tally: decidePage(m.options, m.json, m.keep) };
  } catch (err) {
    reply = { id: m.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
