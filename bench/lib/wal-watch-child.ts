/**
 * The sampler behind bench/lib/wal-watch.ts: `node --import tsx wal-watch-child.ts <url>`.
 * Polls the WAL insert and flush positions every SAMPLE_EVERY_MS, prints "sampling" once the
 * first sample is in, and on SIGTERM prints the samples (one JSON line, WalSample[]) and exits.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import type { WalSample } from "./wal-watch.js";

// Every 5 ms: ~200 queries/s cost a few % of one core, alike in the service's and pgbench's runs.
const SAMPLE_EVERY_MS = 5;
const POSITIONS = `SELECT (pg_current_wal_insert_lsn() - '0/0')::bigint AS inserted,
  (pg_current_wal_flush_lsn() - '0/0')::bigint AS flushed`;

const client = new pg.Client({ connectionString: process.argv[2] });
await client.connect();
let stopping = false;
process.once("SIGTERM", () => {
  stopping = true;
});
const samples: WalSample[] = [];
const t0 = performance.now();
while (!stopping) {
  const { rows } = await client.query(POSITIONS);
  samples.push({
    atMs: performance.now() - t0,
    inserted: Number(rows[0].inserted),
    flushed: Number(rows[0].flushed),
  });
  if (samples.length === 1) process.stdout.write("sampling\n");
  await sleep(SAMPLE_EVERY_MS);
}
await client.end();
process.stdout.write(`${JSON.stringify(samples)}\n`, () => process.exit(0));
