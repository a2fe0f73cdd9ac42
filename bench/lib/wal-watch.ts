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
 * in psql (`\watch`, every 5 ms: ~4% of a core for psql and as much for its backend, alike in
 * the service's and pgbench's runs), its output going to a file that stop() reads.
 */
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

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

/** Sample intervals on each side of a stall, and how many of them must see the flush move. */
const BUSY_INTERVALS = 4;
const BUSY_MOVES = 3;

/**
 * Reads stalls out of samples in time order. A stall is a stretch of samples with one flush
 * position while WAL was inserted beyond it (someone waited), with the flush moving in most
 * sample intervals just before and just after it: under load the flush moves every interval,
 * while at the edges of a run, when no one commits, WAL that needs no commit's flush (written
 * by vacuum, say) can wait for the WAL writer for up to wal_writer_delay (200 ms) without anyone
 * waiting on it. Its length is from the first to the last sample of the stretch — a lower bound,
 * so that a sampler that was itself kept off the CPU does not make a stall of its own. A stall
 * that runs into the end of the watch is not counted.
 */
export function stallsOf(samples: WalSample[], thresholdMs: number): WalStalls {
  const moved = (i: number) => i > 0 && i < samples.length && samples[i]!.flushed !== samples[i - 1]!.flushed;
  const busy = (from: number) => {
    let moves = 0;
    for (let i = from; i < from + BUSY_INTERVALS; i++) if (moved(i)) moves++;
    return moves >= BUSY_MOVES;
  };
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
    if (waited && busy(start - BUSY_INTERVALS + 1) && busy(end + 1)) {
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

const SAMPLE_EVERY_S = 0.005;
// The server's clock (ms), WAL inserted and WAL flushed (bytes): one line per sample.
const POSITIONS = `SELECT round(extract(epoch FROM clock_timestamp()) * 1000, 3),
  pg_current_wal_insert_lsn() - '0/0', pg_current_wal_flush_lsn() - '0/0'`;

/**
 * Parses psql's unaligned output ("ms inserted flushed" per line) into samples, times from the
 * first; a line cut short when psql was stopped is dropped.
 */
export function parseSamples(text: string): WalSample[] {
  const rows = text
    .split("\n")
    .map((line) => line.split(" ").map(Number))
    .filter((row) => row.length === 3 && row.every(Number.isFinite));
  const t0 = rows[0]?.[0] ?? 0;
  return rows.map(([at, inserted, flushed]) => ({ atMs: at! - t0, inserted: inserted!, flushed: flushed! }));
}

/**
 * Starts watching the WAL flush of `cluster` (its `url`, any database) with its `psql`;
 * resolves once the first sample is taken. `stop()` ends the watch and resolves with its stalls.
 * @throws Error when psql exits early or takes no sample within 10 s.
 */
export async function watchWalFlush(
  cluster: { binDir: string; url: string },
  thresholdMs: number,
): Promise<{ stop(): Promise<WalStalls> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-wal-watch-"));
  const file = path.join(dir, "samples");
  const out = openSync(file, "w");
  const proc = spawn(path.join(cluster.binDir, "psql"), ["-X", "-q", "-At", "-F", " ", cluster.url], {
    stdio: ["pipe", out, "pipe"],
  });
  closeSync(out);
  // Kept for the error below; psql also says "Cancel request sent" when stopped.
  let stderr = "";
  proc.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk;
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  // psql reads its next command from stdin once \watch ends; closing stdin then makes it exit.
  proc.stdin!.write(`${POSITIONS} \\watch ${SAMPLE_EVERY_S}\n`);
  const stop = async () => {
    proc.kill("SIGINT"); // ends \watch
    proc.stdin!.end();
    await exited;
    const samples = parseSamples(readFileSync(file, "utf8"));
    rmSync(dir, { recursive: true, force: true });
    return samples;
  };
  for (const deadline = Date.now() + 10_000; readFileSync(file, "utf8").indexOf("\n") < 0; ) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`WAL flush watcher (psql) took no sample (exit ${proc.exitCode}): ${stderr.trim()}`);
    }
    await sleep(10);
  }
  return { stop: async () => stallsOf(await stop(), thresholdMs) };
}
