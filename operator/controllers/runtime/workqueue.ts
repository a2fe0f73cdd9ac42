/**
 * The operator's work queue (client-go workqueue semantics): keys `kind/namespace/name`
 * (./reconcile.ts `keyOf`), FIFO, deduplicated (a key waits at most once), never handed to two workers at a time (a key added
 * while it is being processed is queued again when `done` is called), delayed adds, and
 * per-key exponential backoff after failures.
 */

/** Timer functions, injectable so tests control time. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Options of {@link WorkQueue}. Delays in milliseconds. */
export interface WorkQueueOptions {
  /** First retry delay after a failure (default 250 ms); doubles per consecutive failure. */
  baseDelayMs?: number;
  /** Upper bound of the retry delay (default 30 000 ms). */
  maxDelayMs?: number;
  timers?: Timers;
}

/** A FIFO, deduplicating work queue with delayed and rate-limited adds. */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; handle: unknown }>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly timers: Timers;
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.baseDelayMs = opts.baseDelayMs ?? 250;
    this.maxDelayMs = opts.maxDelayMs ?? 30_000;
    this.timers = opts.timers ?? realTimers;
  }

  /** Adds a key now. No-op if it already waits; deferred until `done` if it is being processed. */
  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    const waiter = this.waiters.shift();
    if (waiter) {
      this.queued.delete(key);
      this.processing.add(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
  }

  /** Adds a key after `ms`; an earlier pending delayed add of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) this.timers.clearTimeout(existing.handle);
    const handle = this.timers.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    this.delayed.set(key, { at, handle });
  }

  /** The backoff delay the next failure of `key` will wait (ms). */
  backoffDelay(key: string): number {
    const n = this.failures.get(key) ?? 0;
    return Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs);
  }

  /** Re-adds a failed key after its exponential backoff delay; returns the delay (ms). */
  addRateLimited(key: string): number {
    const delay = this.backoffDelay(key);
    this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
    this.addAfter(key, delay);
    return delay;
  }

  /** Resets the failure count of a key (call after a successful reconcile). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Number of consecutive failures recorded for a key. */
  failureCount(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Waits for the next key; resolves undefined once the queue is shut down and drained. */
  get(): Promise<string | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.queued.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key processed; re-queues it if it was added meanwhile. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /** Keys waiting now (not counting delayed or in-process keys). */
  get length(): number {
    return this.queue.length;
  }

  /** Keys being processed. */
  get inFlight(): number {
    return this.processing.size;
  }

  /** Stops accepting keys, cancels delayed adds and releases idle workers. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { handle } of this.delayed.values()) this.timers.clearTimeout(handle);
    this.delayed.clear();
    this.queue.length = 0;
    this.queued.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }
}
