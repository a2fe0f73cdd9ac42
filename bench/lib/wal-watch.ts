/**
 * How long a durable PostgreSQL's commits stood still while a benchmark ran. Every durable
 * commit waits for the WAL to be flushed up to its record; when the disk stalls, the flush
 * position stops while WAL keeps being inserted, and every committer waits, whoever it is.
 *
 * wrk corrects its latencies for coordinated omission (and bench/lib/pgbench.ts corrects
 * pgbench's the same way), so a run's p99 is roughly the latency that 1% of the run's *time*
 * exceeded: once the flush stood still beyond X ms for more than 1% of a run, no durable
 * committer's corrected p99 in that run can be X ms or less. `shareBeyond` is that share.
 *
 * pgbench and wrk run synchronously and block the benchmark's event loop, so the sampling runs
 * in a child process (wal-watch-child.ts) that polls pg_current_wal_insert_lsn() and
 * pg_current_wal_flush_lsn() every few ms.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { repoRoot } from "./parts.js";

/** One sample: when (ms since the watch began), WAL inserted and WAL flushed (byte positions). */
export interface WalSample {
  atMs: number;
  inserted: number;
  flushed: number;
}

/** What the watch saw (durations in ms; `shareBeyond` is a fraction of `watchedMs`, 0–1). */
export interface WalStalls {
  /** The longest time the flush position stood still while WAL waited to be flushed. */
  longestMs: number;
  /** Time stood still beyond `thresholdMs`, summed over the stalls, over the watch's length. */
  shareBeyond: number;
  thresholdMs: number;
  watchedMs: number;
  samples: number;
}

/**
 * Reads stalls out of samples in time order. A stall is a stretch of samples with one flush
 * position while some sample in it saw WAL inserted beyond it (someone waited); its length is
 * from the first to the last sample of the stretch — a lower bound, so that a sampler that was
 * itself kept off the CPU does not make a stall of its own. An idle server (nothing inserted
 * beyond the flush) has no stalls.
 */
export function stallsOf(samples: WalSample[], thresholdMs: number): WalStalls {
  let longestMs = 0;
  let beyondMs = 0;
  let start = 0;
  while (start < samples.length) {
    const first = samples[start]!;
    let end = start;
    let waited = first.inserted > first.flushed;
    while (end + 1 < samples.length && samples[end + 1]!.flushed === first.flushed) {
      end++;
      waited ||= samples[end]!.inserted > first.flushed;
    }
    if (waited) {
      const ms = samples[end]!.atMs - first.atMs;
      longestMs = Math.max(longestMs, ms);
      beyondMs += Math.max(0, ms - thresholdMs);
    }
    start = end + 1;
  }
  const watchedMs = samples.length ? samples.at(-1)!.atMs - samples[0]!.atMs : 0;
  return {
    longestMs,
    shareBeyond: watchedMs > 0 ? beyondMs / watchedMs : 0,
    thresholdMs,
    watchedMs,
    samples: samples.length,
  };
}

/**
 * Starts watching the WAL flush of the cluster at `url` (any database); resolves once the
 * first sample is taken. `stop()` ends the watch and resolves with its stalls.
 * @throws Error when the watcher cannot connect or exits early.
 */
export async function watchWalFlush(
  url: string,
  thresholdMs: number,
): Promise<{ stop(): Promise<WalStalls> }> {
  const proc = spawn(
    process.execPath,
    ["--import", "tsx", path.join(repoRoot, "bench/lib/wal-watch-child.ts"), url],
    { cwd: repoRoot, stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  const early = new Promise<never>((_, reject) =>
    proc.once("exit", (code) => reject(new Error(`WAL flush watcher exited with ${code}`))),
  );
  early.catch(() => {}); // observed below; an exit after the result is expected
  const ready = await Promise.race([lines.next(), early]);
  if (ready.done) throw new Error("WAL flush watcher closed its output before sampling");
  return {
    async stop() {
      proc.kill("SIGTERM");
      const result = await Promise.race([lines.next(), early]);
      if (result.done) throw new Error("WAL flush watcher closed its output without a result");
      return stallsOf(JSON.parse(result.value) as WalSample[], thresholdMs);
    },
  };
}
