/**
 * The replay worker thread's entry (worker-pool.ts starts it): decides the pages of replays
 * posted to it, each replay with its own Replayer, in the order posted, and answers each message
 * in turn: `decided` after a page, `tally` after `tally`, `failed` when one throws (the replay's
 * later messages are answered `failed` too). Messages: worker-pool.ts WorkerRequest/WorkerReply.
 */
import { parentPort } from "node:worker_threads";
import { Replayer } from "./replay.js";
import type { WorkerReply, WorkerRequest } from "./worker-pool.js";

const port = parentPort;
if (!port) throw new Error("src/service/replay/worker.ts runs as a worker thread (worker-pool.ts)");

/** The open replays by id; a failed one keeps its error. */
const sessions = new Map<number, Replayer | Error>();

port.on("message", (m: WorkerRequest) => {
  if (m.op === "open") {
    sessions.set(m.id, new Replayer(m.options));
    return;
  }
  if (m.op === "close") {
    sessions.delete(m.id);
    return;
  }
  const session = sessions.get(m.id) ?? new Error(`no open replay ${m.id}`);
  let reply: WorkerReply;
  if (session instanceof Error) reply = { id: m.id, op: "failed", message: session.message };
  else {
    try {
      if (m.op === "page") {
        session.page(m.page);
        reply = { id: m.id, op: "decided" };
      } else reply = { id: m.id, op: "tally", tally: session.tally() };
    } catch (err) {
      const message = `replay worker: ${(err as Error).message}`;
      sessions.set(m.id, new Error(message));
      reply = { id: m.id, op: "failed", message };
    }
  }
  port.postMessage(reply);
});
