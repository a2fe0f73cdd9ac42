/**
 * pgbench baselines on the benchmark's own PostgreSQL: insert-only throughput (record-action's
 * baseline) and latency percentiles, the floor latency targets are set against (issue 9:
 * "added p99 ≤ 2× pgbench single-client p99"). pgbench prints only the average latency, so
 * the percentiles come from a per-transaction log (`-l`).
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
  max: number;
  /** Transactions logged. */
  count: number;
  /** Transactions per second, excluding connection time (pgbench's own figure). */
  tps: number;
}

/**
 * pgbench insert-only throughput: single-row INSERTs from `clients` connections for `seconds`,
 * without a transaction log (logging would slow the baseline down). Returns transactions per
 * second (excluding connection time) and pgbench's average latency in ms.
 * @throws Error when pgbench fails or its output cannot be parsed.
 */
export function pgbenchInsert(
  cluster: PostgresCluster,
  db: string,
  clients: number,
  seconds: number,
): { tps: number; latencyMs: number } {
  const { tps, latencyMs } = runInsert(cluster, db, clients, seconds, false);
  return { tps, latencyMs };
}

/**
 * Single-row INSERTs into a small table from `clients` connections (default 1: the
 * single-client baseline) for `seconds`, each transaction's latency logged. The table is
 * created when missing.
 * @throws Error when pgbench fails or its output cannot be parsed.
 */
export function pgbenchInsertLatency(
  cluster: PostgresCluster,
  db: string,
  seconds: number,
  clients = 1,
): PgbenchLatency {
  const r = runInsert(cluster, db, clients, seconds, true);
  return { ...r.percentiles!, tps: r.tps };
}

function runInsert(
  cluster: PostgresCluster,
  db: string,
  clients: number,
  seconds: number,
  log: boolean,
): { tps: number; latencyMs: number; percentiles: Omit<PgbenchLatency, "tps"> | null } {
  const url = cluster.url.replace(/\/[^/]*$/, `/${db}`);
  execFileSync(path.join(cluster.binDir, "psql"), [
    url,
    "-qc",
    "CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, v double precision, at timestamptz DEFAULT now())",
  ]);
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
        ...(log ? ["-l", `--log-prefix=${path.join(dir, "tx")}`] : []),
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
    const latencyMs = Number(/latency average = ([\d.]+) ms/.exec(out)?.[1]);
    if (!Number.isFinite(tps)) throw new Error(`could not parse pgbench output:\n${out}`);
    if (!log) return { tps, latencyMs, percentiles: null };
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
    return { tps, latencyMs, percentiles: { p50: p.p50, p99: p.p99, max: p.max, count: p.count } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
