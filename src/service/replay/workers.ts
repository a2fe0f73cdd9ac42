/**
 * The threads that decide a replay's pages (issue 28, "Replay before enforce"; docs/policy-cel.md).
 * The request's thread only reads pages (each one JSON string from PostgreSQL) and hands them
 * out; the pages are decoded and decided here, on up to {@link REPLAY_THREADS} worker threads
 * (worker.ts) shared by every replay of the process, so that a replay of many events neither
 * holds up the requests the service's main thread serves nor waits for one core. Pages are
 * independent (each holds whole chains), so each is decided by a fresh Replayer and the
 * answers are merged in page order (replay.ts mergeTallies): the answer is the same as deciding
 * page after page on one thread, whatever the number of threads (test/service/replay.test.ts).
 *
 * Workers start on demand and stop after {@link IDLE_MS} without a page (unref'd: they never
 * keep the process alive). A worker that fails or exits fails the pages it held (the replay
 * answers 500, never a tally of part of its pages); the next page starts a new one.
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { ReplayerOptions, ReplayTally } from "./replay.js";

/**
 * The CPUs a cgroup grants, rounded up, from its files' text: cgroup v2 `cpu.max`
 * ("<quota> <period>" in µs, "max <period>" for no limit), or cgroup v1 `cpu.cfs_quota_us` and
 * `cpu.cfs_period_us` given as "<quota> <period>" (quota −1 for no limit). Null when there is no
 * limit or the text is neither.
 */
export function cgroupCpuLimit(quotaAndPeriod: string): number | null {
  const m = /^\s*(-?\d+|max)\s+(\d+)\s*$/.exec(quotaAndPeriod);
  if (!m || m[1] === "max" || Number(m[1]) <= 0 || Number(m[2]) === 0) return null;
  return Math.ceil(Number(m[1]) / Number(m[2]));
}

/**
 * The container's CPU limit (cgroup v2, else v1), else null: availableParallelism() counts the
 * node's CPUs, not the limit (measured in a container with `--cpus=1` on 2 cores: 2).
 */
function containerCpuLimit(): number | null {
  const read = (file: string) => readFileSync(path.join("/sys/fs/cgroup", file), "utf8");
  try {
    return cgroupCpuLimit(read("cpu.max"));
  } catch {
    try {
      return cgroupCpuLimit(`${read("cpu/cpu.cfs_quota_us")} ${read("cpu/cpu.cfs_period_us")}`);
    } catch {
      return null;
    }
  }
}

/**
 * Worker threads per process: one per CPU the process may use (the container's CPU limit where
 * there is one), at most 4 (PostgreSQL and the main thread need cores too).
 */
export const REPLAY_THREADS = Math.max(
  1,
  Math.min(4, availableParallelism(), containerCpuLimit() ?? Infinity),
);

/** Milliseconds without a page after which the workers stop (memory back to the process). */
export const IDLE_MS = 60_000;

/** A page for a worker: decide the first `keep` rows of `json` (store.ts ReplayPage) with `options`. */
export interface PageRequest {
  id: number;
  options: ReplayerOptions;
  json: string;
  keep: number;
}

/** A worker's answer to one PageRequest. */
export type PageReply = { id: number; tally: ReplayTally } | { id: number; error: string };

/**
 * The worker's entry: the production build's bundle of worker.ts (scripts/build.mjs sets
 * TOLLGATE_REPLAY_WORKER_BUNDLE to its path relative to this module's source), else worker.ts
 * itself, through tsx.
 */
function workerEntry(): { url: URL; execArgv: string[] } {
  const bundle = process.env.TOLLGATE_REPLAY_WORKER_BUNDLE;
  if (bundle) return { url: new URL(bundle, import.meta.url), execArgv: process.execArgv };
  return { url: new URL("./worker.ts", import.meta.url), execArgv: [...process.execArgv, "--import", "tsx"] };
}

interface Waiter {
  resolve: (tally: ReplayTally) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  waiting: Map<number, Waiter>;
}

/** A pool of replay worker threads (see the module comment). */
export class ReplayWorkers {
  private readonly threads: Thread[] = [];
  private nextId = 1;
  private idle: NodeJS.Timeout | null = null;

  constructor(readonly size = REPLAY_THREADS) {}

  /**
   * Decides the first `keep` rows of a page on the least busy worker.
   * @throws Error "replay worker: …" when the worker fails on the page or exits before answering.
   */
  decide(options: ReplayerOptions, json: string, keep: number): Promise<ReplayTally> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const thread = this.pick();
    const id = this.nextId++;
    return new Promise<ReplayTally>((resolve, reject) => {
      thread.waiting.set(id, { resolve, reject });
      thread.worker.postMessage({ id, options, json, keep } satisfies PageRequest);
    });
  }

  /** Stops every worker (pages they held fail). */
  async close(): Promise<void> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const threads = this.threads.splice(0);
    for (const t of threads) this.fail(t, new Error("stopped"));
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private pick(): Thread {
    let best: Thread | undefined;
    for (const t of this.threads) if (!best || t.waiting.size < best.waiting.size) best = t;
    if (best && (best.waiting.size === 0 || this.threads.length >= this.size)) return best;
    return this.start();
  }

  private start(): Thread {
    const { url, execArgv } = workerEntry();
    const thread: Thread = { worker: new Worker(url, { execArgv }), waiting: new Map() };
    thread.worker.unref();
    thread.worker.on("message", (reply: PageReply) => {
      const waiter = thread.waiting.get(reply.id);
      if (!waiter) return;
      thread.waiting.delete(reply.id);
      if ("error" in reply) waiter.reject(new Error(`replay worker: ${reply.error}`));
      else waiter.resolve(reply.tally);
      this.idleCheck();
    });
    thread.worker.on("error", (err) => this.fail(thread, err));
    thread.worker.on("exit", (code) => this.fail(thread, new Error(`exited (code ${code})`)));
    this.threads.push(thread);
    return thread;
  }

  /** The thread is gone: its pages fail, and a later page starts another. */
  private fail(thread: Thread, err: Error): void {
    const i = this.threads.indexOf(thread);
    if (i >= 0) this.threads.splice(i, 1);
    const failed = new Error(`replay worker: ${err.message}`);
    for (const waiter of thread.waiting.values()) waiter.reject(failed);
    thread.waiting.clear();
  }

  private idleCheck(): void {
    if (this.idle || this.threads.some((t) => t.waiting.size > 0)) return;
    this.idle = setTimeout(() => void this.close(), IDLE_MS);
    this.idle.unref();
  }
}

let shared: ReplayWorkers | null = null;

/** The process's pool, made on first use. */
export const replayWorkers = (): ReplayWorkers => {
  shared ??= new ReplayWorkers();
  return shared;
};
