/**
 * The disk under a benchmark's database: how long an 8 kB write plus fdatasync takes in a
 * directory, which is what every durable commit (a WAL flush) waits for. On a shared virtual
 * disk its tail (stalls of hundreds of ms) bounds the p99 of anything that commits durably.
 */
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { latencyHistogram, percentilesMs } from "./stats.js";

/** Latency of 8 kB write + fdatasync in ms (p50, p99, max) and how many were timed. */
export type SyncLatency = ReturnType<typeof percentilesMs>;

/**
 * Writes 8 kB and fdatasyncs it, back to back, for `seconds` in a scratch file under `dir`
 * (cycling over a 1 MB region, as a WAL segment is written), and returns the latency
 * percentiles. Blocks the caller for the whole time.
 * @throws Error when the file cannot be created or written.
 */
export function fdatasyncLatency(dir: string, seconds: number): SyncLatency {
  const file = path.join(dir, `fdatasync-probe-${process.pid}`);
  const fd = openSync(file, "w");
  const block = Buffer.alloc(8192, 1);
  const h = latencyHistogram();
  try {
    const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
    for (let i = 0; process.hrtime.bigint() < end; i++) {
      const t0 = process.hrtime.bigint();
      writeSync(fd, block, 0, block.length, (i % 128) * block.length);
      fdatasyncSync(fd);
      h.recordValue(Math.max(1, Number((process.hrtime.bigint() - t0) / 1000n)));
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return percentilesMs(h);
}
