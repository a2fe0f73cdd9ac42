/**
 * Group commit for the recording hot path (docs/adr/0006). Guarded writes that arrive while
 * earlier ones are in flight wait and then go to PostgreSQL together: one statement advances
 * every chain of the batch and inserts every event, each row under its own guards (chain row
 * version, organization config and flags, API key). A row whose guard fails is simply not
 * written; the others are. Under load this turns N round trips (and N socket writes, which
 * dominated the service's CPU profile) into one; alone, a write goes out at once.
 */
import type { Queryable } from "../db/pool.js";
import { type GuardedWrite, writeEvents } from "./store.js";

interface Pending {
  write: GuardedWrite;
  resolve(xmin: string | null): void;
  reject(err: unknown): void;
}

/**
 * Coalesces concurrent guarded writes (see the module comment). At most `maxInFlight`
 * statements run at once (default 1: larger batches cost PostgreSQL and the service less per
 * action — at 32 clients ~14 rows per statement — and two in flight measured no faster, within
 * this machine's noise; PGlite serves one connection anyway), each with up to `maxBatch`
 * writes; a write that arrives while all are busy joins the next one. When a batch statement
 * fails, its writes are retried one by one so that one bad row cannot fail the others.
 */
export class RecordBatcher {
  readonly #queue: Pending[] = [];
  #inFlight = 0;

  constructor(
    private readonly db: Queryable,
    private readonly opts: { maxInFlight: number; maxBatch: number } = { maxInFlight: 1, maxBatch: 64 },
  ) {}

  /** Queues one write; resolves with the chain row's new version, or null when a guard failed. */
  write(write: GuardedWrite): Promise<string | null> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ write, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.opts.maxInFlight && this.#queue.length) {
      const batch = this.#queue.splice(0, this.opts.maxBatch);
      this.#inFlight++;
      void this.#run(batch);
    }
  }

  /**
   * Runs one batch. The next batch is sent before this one's callers are answered: each answer
   * runs its caller's continuation (the response is serialized and written), and a batch sent
   * after them would leave PostgreSQL idle meanwhile.
   */
  async #run(batch: Pending[]): Promise<void> {
    let versions: (string | null)[];
    try {
      versions = await writeEvents(
        this.db,
        batch.map((p) => p.write),
      );
    } catch (err) {
      await this.#oneByOne(batch, err);
      return this.#done();
    }
    this.#done();
    for (const [i, p] of batch.entries()) p.resolve(versions[i]!);
  }

  /** After a failed batch: one bad row must not fail the others, so each is written alone. */
  async #oneByOne(batch: Pending[], failure: unknown): Promise<void> {
    if (batch.length === 1) return batch[0]!.reject(failure);
    for (const p of batch) {
      await writeEvents(this.db, [p.write]).then(
        ([version]) => p.resolve(version!),
        (e) => p.reject(e),
      );
    }
  }

  #done(): void {
    this.#inFlight--;
    this.#pump();
  }
}
