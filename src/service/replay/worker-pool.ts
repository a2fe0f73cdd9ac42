/**
 * Deciding a replay's pages on a worker thread (issue 28, replay speed; docs/policy-cel.md
 * "Replay before enforce"): the request's thread reads page after page from PostgreSQL (its
 * rows, pg's parsing) while one worker thread (worker.ts) decides the page before — the two
 * halves of a replay's CPU on two cores. One worker serves every replay of the process, each
 * replay's pages in the order posted, so the answer is the inline one (test/service/replay.test.ts
 * compares them). The worker is started at the first replay and kept (unref'd: it does not keep
 * the process alive); when it fails or exits, the replays it was deciding fail (a 500, never an
 * answer from part of the pages) and the next replay starts a new one.
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import {
  type DecisionSession,
  inlineDecider,
  type PageToDecide,
  type ReplayDecider,
  type ReplayerOptions,
  type ReplayTally,
} from "./replay.js";

/** A message to the worker: a replay's id and what to do (answered in order, see WorkerReply). */
export type WorkerRequest =
  | { op: "open"; id: number; options: ReplayerOptions }
  | { op: "page"; id: number; page: PageToDecide }
  | { op: "tally"; id: number }
  | { op: "close"; id: number };

/** The worker's answer to a `page` (decided) or `tally` request, or that it failed. */
export type WorkerReply =
  | { id: number; op: "decided" }
  | { id: number; op: "tally"; tally: ReplayTally }
  | { id: number; op: "failed"; message: string };

/**
 * The worker's entry: the production build's bundle of worker.ts (scripts/build.mjs sets
 * TOLLGATE_REPLAY_WORKER_BUNDLE to its path relative to this module's source), else worker.ts
 * itself, loaded through tsx.
 */
function workerEntry(): { url: URL; execArgv: string[] } {
  const bundle = process.env.TOLLGATE_REPLAY_WORKER_BUNDLE;
  if (bundle) return { url: new URL(bundle, import.meta.url), execArgv: process.execArgv };
  return { url: new URL("./worker.ts", import.meta.url), execArgv: [...process.execArgv, "--import", "tsx"] };
}

interface Open {
  /** The answers awaited, in the order asked. */
  waiting: { resolve: (reply: WorkerReply) => void; reject: (err: Error) => void }[];
  /** Set once the worker failed: every later request rejects with it. */
  failed: Error | null;
}

/** Decides replays' pages on one worker thread (see the module comment). */
export class WorkerDecider implements ReplayDecider {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly open_ = new Map<number, Open>();

  open(options: ReplayerOptions): DecisionSession {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    const state: Open = { waiting: [], failed: null };
    this.open_.set(id, state);
    worker.postMessage({ op: "open", id, options } satisfies WorkerRequest);
    const ask = (request: WorkerRequest) =>
      state.failed
        ? Promise.reject(state.failed)
        : new Promise<WorkerReply>((resolve, reject) => {
            state.waiting.push({ resolve, reject });
            worker.postMessage(request);
          });
    return {
      page: async (page) => {
        await ask({ op: "page", id, page });
      },
      tally: async () => {
        const reply = await ask({ op: "tally", id });
        if (reply.op !== "tally") throw new Error(`replay worker: answered ${reply.op} to tally`);
        return reply.tally;
      },
      close: () => {
        if (this.open_.delete(id) && this.worker === worker) {
          worker.postMessage({ op: "close", id } satisfies WorkerRequest);
        }
      },
    };
  }

  /** Stops the worker (the replays it was deciding fail). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }

  private start(): Worker {
    const { url, execArgv } = workerEntry();
    const worker = new Worker(url, { execArgv });
    worker.unref();
    worker.on("message", (reply: WorkerReply) => {
      const waiter = this.open_.get(reply.id)?.waiting.shift();
      if (!waiter) return;
      if (reply.op === "failed") waiter.reject(new Error(reply.message));
      else waiter.resolve(reply);
    });
    worker.on("error", (err) => this.fail(worker, err));
    worker.on("exit", (code) => this.fail(worker, new Error(`replay worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** The worker is gone: its replays fail, and the next replay starts another. */
  private fail(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = null;
    const failed = new Error(`replay worker: ${err.message}`);
    for (const state of this.open_.values()) {
      state.failed = failed;
      for (const waiter of state.waiting.splice(0)) waiter.reject(failed);
    }
  }
}

/**
 * The decider a service uses (TOLLGATE_REPLAY_WORKER): "auto" a worker thread when the machine
 * has a second core, else inline; "off" inline.
 */
export const serviceReplayDecider = (mode: "auto" | "off"): ReplayDecider & { close(): Promise<void> } =>
  mode === "auto" && availableParallelism() > 1
    ? new WorkerDecider()
    : { ...inlineDecider, close: async () => {} };
