/**
 * Durable jobs in PostgreSQL: everything that must happen later (approval timeouts, fallback
 * escalation) survives a restart and runs once even with several replicas — due jobs are
 * claimed with FOR UPDATE SKIP LOCKED, and handlers are idempotent.
 */
import type { Clock } from "./clock.js";
import type { Database, Queryable } from "./db/pool.js";
import type { Logger } from "./logger.js";

/** Schedules a job; a second job with the same dedupeKey is ignored. */
export async function enqueueJob(
  q: Queryable,
  job: { kind: string; runAtMs: number; payload: Record<string, unknown>; dedupeKey?: string },
): Promise<void> {
  await q.query(
    "INSERT INTO jobs (kind, run_at, payload, dedupe_key) VALUES ($1,$2,$3,$4) ON CONFLICT (dedupe_key) DO NOTHING",
    [job.kind, new Date(job.runAtMs), job.payload, job.dedupeKey ?? null],
  );
}

/** A job handler; receives the job's payload and the current time (epoch ms). */
export type JobHandler = (payload: Record<string, unknown>, nowMs: number) => Promise<void>;

/**
 * Claims due jobs and runs them. A claimed job is leased for `leaseMs`; a failed job is retried
 * after a backoff (1 s doubling to 5 min). Returns how many jobs ran successfully.
 */
export async function runDueJobs(
  db: Database,
  opts: {
    clock: Clock;
    handlers: Record<string, JobHandler>;
    limit?: number;
    leaseMs?: number;
    log?: Logger;
  },
): Promise<number> {
  const nowMs = opts.clock.nowMs();
  const now = new Date(nowMs);
  const { rows } = await db.query(
    `UPDATE jobs SET locked_until = $2, attempts = attempts + 1
     WHERE id IN (SELECT id FROM jobs WHERE done_at IS NULL AND run_at <= $1 AND (locked_until IS NULL OR locked_until < $1)
                  ORDER BY run_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING id, kind, payload, attempts`,
    [now, new Date(nowMs + (opts.leaseMs ?? 60_000)), opts.limit ?? 20],
  );
  let ran = 0;
  for (const job of rows) {
    const handler = opts.handlers[job.kind];
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      await handler(job.payload, nowMs);
      await db.query("UPDATE jobs SET done_at = $2, last_error = NULL WHERE id = $1", [job.id, now]);
      ran++;
    } catch (err) {
      const backoff = Math.min(300_000, 1000 * 2 ** Math.min(job.attempts, 9));
      opts.log?.warn({ job_id: job.id, kind: job.kind, err }, "job failed; will retry");
      await db.query("UPDATE jobs SET last_error = $2, run_at = $3, locked_until = NULL WHERE id = $1", [
        job.id,
        String((err as Error).message).slice(0, 500),
        new Date(nowMs + backoff),
      ]);
    }
  }
  return ran;
}

/**
 * Runs `work` every `intervalMs` (measured from the end of the previous run) until stopped; a
 * failed run is logged and the loop goes on. Shared by the job scheduler and the outbox worker.
 */
export class PollingLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly work: () => Promise<unknown>,
    private readonly opts: { intervalMs: number; log?: Logger; what: string },
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.work()
        .catch((err) => this.opts.log?.error({ err }, `${this.opts.what} failed`))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs);
        });
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
  }

  /** Stops polling and waits for the run in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}

/** Polls for due jobs every `intervalMs` until stopped. */
export class Scheduler {
  private readonly loop: PollingLoop;

  constructor(
    db: Database,
    opts: { clock: Clock; handlers: Record<string, JobHandler>; intervalMs: number; log?: Logger },
  ) {
    this.loop = new PollingLoop(() => runDueJobs(db, opts), { ...opts, what: "scheduler tick" });
  }

  start(): void {
    this.loop.start();
  }

  /** Stops polling and waits for the tick in progress. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
