/**
 * Wake-ups for held approval-status requests (README "HTTP API" → approval-status `wait`, an
 * extension beyond the spec). A caller blocked on an approval asks
 * GET /v1/chains/{chain_id}/approval-status?wait=5; the route holds the request until the
 * approval leaves `pending` or the wait elapses, so the spec's one request per 5 s now also
 * learns of a decision at once instead of at the next tick.
 *
 * Two paths wake a held request, both keyed by chain id:
 * - in-process: the code that resolves an approval (decided, timed out, cancelled) is given
 *   the service's ApprovalWaiters and calls `wake` after its transaction commits — enough on
 *   PGlite (one process);
 * - across replicas (PostgreSQL): the resolving transaction sends {@link notifyApprovalChanged}
 *   (pg_notify, delivered at COMMIT, dropped on rollback) and every service process LISTENs on
 *   one dedicated connection (approval-listener.ts) and wakes its own waiters.
 * A wake-up only makes the held request read the status again; it answers when the read shows
 * a decision, so a duplicate or early wake-up costs one read and never a wrong answer.
 */
import type { Queryable } from "../db/pool.js";

/** PostgreSQL NOTIFY channel of approval changes; the payload is the chain id. */
export const APPROVAL_CHANNEL = "tollgate_approval";

/** Longest hold of one approval-status request, in seconds: the spec's poll interval. */
export const MAX_APPROVAL_WAIT_SECONDS = 5;

/**
 * Sends the cross-replica wake-up for `chainId` inside the caller's transaction (PostgreSQL
 * delivers it at COMMIT; PGlite accepts and ignores it).
 */
export async function notifyApprovalChanged(q: Queryable, chainId: string): Promise<void> {
  await q.query("SELECT pg_notify($1, $2)", [APPROVAL_CHANNEL, chainId]);
}

/** One held request: `woken` remembers a wake-up that arrived while it was reading. */
interface Waiter {
  woken: boolean;
  release: (() => void) | null;
}

/** The shape of an approval-status answer that the hold inspects. */
export interface HeldStatus {
  approval: { status: string } | null;
}

/**
 * How a hold ended: `first_read` (the approval was no longer pending at the first read, so the
 * request was not held), `woken` (a wake-up was followed by a read showing the resolution),
 * `elapsed` (the wait ran out; a resolution read then was missed by every wake-up path),
 * `shutdown` (the service began closing while it was pending).
 */
export type HoldEnd = "first_read" | "woken" | "elapsed" | "shutdown";

/**
 * The held approval-status requests of one service instance. `close()` (graceful shutdown)
 * answers every hold at once with the current status and makes later holds answer without
 * waiting, so draining the HTTP server never waits for a poll interval.
 */
export class ApprovalWaiters {
  readonly #byChain = new Map<string, Set<Waiter>>();
  #closed = false;

  /** Whether close() was called (the service is shutting down). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Number of requests held right now (reading or waiting). */
  get size(): number {
    let n = 0;
    for (const set of this.#byChain.values()) n += set.size;
    return n;
  }

  /** Number of held requests waiting right now: their last read showed the approval pending. */
  get waiting(): number {
    let n = 0;
    for (const set of this.#byChain.values()) for (const w of set) if (w.release) n++;
    return n;
  }

  /**
   * Reads the status with `read` and, while the approval is pending, holds for at most
   * `waitMs` milliseconds, reading again on each wake-up of `chainId`; returns the first read
   * that shows no pending approval, else the read made when the wait elapsed (or the service
   * began closing), with how the hold ended. `read` runs on the pool per call: no connection is
   * held while waiting.
   * @throws whatever `read` throws.
   */
  async hold<T extends HeldStatus>(
    chainId: string,
    waitMs: number,
    read: () => Promise<T>,
  ): Promise<{ status: T; ended: HoldEnd }> {
    const deadline = performance.now() + waitMs;
    const waiter: Waiter = { woken: false, release: null };
    // Subscribe before the first read so that a decision committed during it is not missed.
    this.#add(chainId, waiter);
    try {
      let before: HoldEnd = "first_read";
      for (;;) {
        const status = await read();
        if (status.approval?.status !== "pending") return { status, ended: before };
        if (this.#closed) return { status, ended: "shutdown" };
        const left = deadline - performance.now();
        if (left <= 0) return { status, ended: "elapsed" };
        before = await this.#sleep(waiter, left);
      }
    } finally {
      this.#remove(chainId, waiter);
    }
  }

  /** Wakes the held requests of `chainId`. */
  wake(chainId: string): void {
    for (const w of this.#byChain.get(chainId) ?? []) this.#release(w);
  }

  /** Wakes every held request (the listener reconnected and may have missed notifications). */
  wakeAll(): void {
    for (const set of this.#byChain.values()) for (const w of set) this.#release(w);
  }

  /** Ends every hold now (each answers with a fresh read); later holds do not wait. */
  close(): void {
    this.#closed = true;
    this.wakeAll();
  }

  /** Sleeps at most `ms`; resolves with what ended the sleep. */
  #sleep(waiter: Waiter, ms: number): Promise<"woken" | "elapsed"> {
    if (waiter.woken) {
      waiter.woken = false;
      return Promise.resolve("woken");
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        waiter.release = null;
        resolve("elapsed");
      }, ms);
      waiter.release = () => {
        clearTimeout(timer);
        resolve("woken");
      };
    });
  }

  #release(w: Waiter): void {
    const release = w.release;
    w.release = null;
    if (release) release();
    else w.woken = true;
  }

  #add(chainId: string, w: Waiter): void {
    const set = this.#byChain.get(chainId);
    if (set) set.add(w);
    else this.#byChain.set(chainId, new Set([w]));
  }

  #remove(chainId: string, w: Waiter): void {
    const set = this.#byChain.get(chainId);
    set?.delete(w);
    if (set?.size === 0) this.#byChain.delete(chainId);
  }
}
