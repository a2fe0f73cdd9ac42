/**
 * pgbench baselines on the benchmark's own PostgreSQL: insert-only throughput (record-action's
 * baseline) and latency percentiles, the floor latency targets are set against (issue 9:
 * "added p99 ≤ 2× pgbench single-client p99"). pgbench prints only the average latency, so
 * the percentiles come from a per-transaction log (`-l`); at 32 clients the log cost no
 * measurable throughput (27.2–28.7k TPS without it, 24.9–28.5k with it, session 6).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { PostgresCluster } from "../../test/support/postgres.js";
import { latencyHistogram, percentilesMs } from "./stats.js";

/** Latency of a pgbench run in ms (p50, p99, max from the transaction log) and its rate. */
export interface PgbenchLatency {
  p50: number;
  p99: number;
  /**
   * p99 corrected for coordinated omission the way wrk corrects its own (wrk 4 `stats_correct`):
   * a transaction slower than the expected interval (clients / TPS) also counts the requests an
   * open-loop caller would have sent meanwhile. Comparable with wrk's p99.
   */
  p99Corrected: number;
  max: number;
  /** Transactions logged. */
  count: number;
  /** Transactions per second, excluding connection time (pgbench's own figure). */
  tps: number;
}

/**
 * Single-row INSERTs into a small table from `clients` connections (default 1: the
 * single-client baseline) for `seconds`, each transaction's latency logged: the rate and the
 * latency percentiles. The table is created when missing.
 * @throws Error when pgbench fails or its output cannot be parsed.
 */
export function pgbenchInsertLatency(
  cluster: PostgresCluster,
  db: string,
  seconds: number,
  clients = 1,
): PgbenchLatency {
  const url = cluster.url.replace(/\/[^/]*$/, `/${db}`);
  execFileSync(
    path.join(cluster.binDir, "psql"),
    [
      url,
      "-qc",
      "CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, v double precision, at timestamptz DEFAULT now())",
    ],
    { stdio: "pipe" },
  ); // quiet: the second call's "already exists" notice is expected
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-pgbench-"));
  try {
    const script = path.join(dir, "insert.sql");
    writeFileSync(script, "INSERT INTO bench_rows (v) VALUES (random());\n");
    const out = execFileSync(
      path.join(cluster.binDir, "pgbench"),
      [
        "-n",
        "-c",
        String(clients),
        "-j",
        String(Math.min(clients, 2)),
        "-T",
        String(seconds),
        "-f",
        script,
        "-l",
        `--log-prefix=${path.join(dir, "tx")}`,
        "-h",
        "127.0.0.1",
        "-p",
        String(cluster.port),
        "-U",
        "postgres",
        db,
      ],
      { encoding: "utf8" },
    );
    const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`could not parse pgbench output:\n${out}`);
    // One file per pgbench thread; a line is `client_id tx_no latency_us script_no epoch epoch_us`.
    const h = latencyHistogram();
    for (const file of readdirSync(dir).filter((f) => f.startsWith("tx"))) {
      for (const line of readFileSync(path.join(dir, file), "utf8").split("\n")) {
        const us = Number(line.split(" ")[2]);
        if (line !== "" && Number.isFinite(us)) h.recordValue(Math.max(1, us));
      }
    }
    if (h.totalCount === 0) throw new Error(`pgbench logged no transactions:\n${out}`);
    const p = percentilesMs(h);
    const p99Corrected = percentilesMs(h.copyCorrectedForCoordinatedOmission((clients / tps) * 1e6)).p99;
    return { p50: p.p50, p99: p.p99, p99Corrected, max: p.max, count: p.count, tps };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
