/**
 * The service benchmarks (record-action, decide-only) in their small mode: the benchmark code
 * runs end to end against real PostgreSQL and the service process, and writes well-formed
 * results. No timing is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

/** A result row as bench/results/*.json stores it. */
interface Row {
  figure: string;
  value: number;
  unit: string;
  baselineValue: number | null;
  ratio: number | null;
  target: string;
  repeats: number;
}

describe("bench/record-action --quick", () => {
  it("measures the service, the pgbench baseline, both floors and (durable) the WAL flush stalls on durable and no-fsync PostgreSQL (wrk load)", async () => {
    const r = await runBench("bench/record-action/run.ts", ["--quick"], { cwd: root, timeoutMs: 170_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("| record-action | actions/s at 4 clients, durable PostgreSQL |");
    const rows: Row[] = JSON.parse(
      readFileSync(path.join(root, "bench/results/record-action.json"), "utf8"),
    ).rows;
    // The disk probe comes first, under the durable configuration only.
    const [diskP99, diskMax] = rows.splice(0, 2);
    expect([diskP99!.figure, diskMax!.figure]).toEqual([
      "disk under durable PostgreSQL: 8 kB write + fdatasync, p99",
      "disk under durable PostgreSQL: 8 kB write + fdatasync, max",
    ]);
    expect(diskP99!.value).toBeGreaterThan(0);
    expect(diskMax!.value).toBeGreaterThanOrEqual(diskP99!.value);
    for (const label of ["durable PostgreSQL", "PostgreSQL without fsync"]) {
      const at = `4 clients, ${label}`;
      const durable = label === "durable PostgreSQL";
      const [throughput, p99, ...rest] = rows.splice(0, durable ? 10 : 8) as [Row, Row, ...Row[]];
      expect(throughput.figure).toBe(`actions/s at ${at}`);
      expect(throughput.value).toBeGreaterThan(0);
      expect(throughput.baselineValue).toBeGreaterThan(0);
      expect(throughput.ratio).toBeCloseTo(throughput.value / throughput.baselineValue!, 6);
      // Our p99 beside pgbench's, corrected for coordinated omission as wrk corrects ours.
      expect(p99).toMatchObject({ figure: `p99 at ${at}`, unit: "ms" });
      expect(p99.value).toBeGreaterThan(0);
      expect(p99.baselineValue).toBeGreaterThan(0);
      expect(p99.ratio).toBeCloseTo(p99.baselineValue! / p99.value, 6);
      const floors = rest.slice(0, 2);
      expect(floors.map((f) => f.figure)).toEqual([
        `floor: bare Fastify + one INSERT per request, ${at}`,
        `floor: bare Fastify + group commit, ${at}`,
      ]);
      for (const f of floors) {
        expect(f.value).toBeGreaterThan(0);
        expect(f.baselineValue).toBe(throughput.baselineValue);
      }
      // CPU per action of each party beside pgbench's per transaction; the total is their sum.
      const [total, service, postgres, client] = rest.slice(2, 6) as [Row, Row, Row, Row];
      expect(rest.slice(2, 6).map((c) => c.figure)).toEqual(
        ["all processes", "service", "PostgreSQL", "load client"].map((p) => `CPU per action at ${at}: ${p}`),
      );
      for (const c of [service, postgres, client]) expect(c.value).toBeGreaterThan(0);
      expect(total.value).toBeCloseTo(service.value + postgres.value + client.value, 3);
      expect(total.baselineValue).toBeCloseTo(postgres.baselineValue! + client.baselineValue!, 3);
      expect(total.ratio).toBeCloseTo(total.baselineValue! / total.value, 6);
      // Durable only: how long the WAL flush stood still in the service's runs beside pgbench's.
      const wal = rest.slice(6);
      expect(wal.map((w) => w.figure)).toEqual(
        durable
          ? ["longest", "time beyond 25 ms"].map(
              (f) => `WAL flush stood still during the service's runs at ${at}: ${f}`,
            )
          : [],
      );
      for (const w of wal) {
        expect(w.value).toBeGreaterThanOrEqual(0);
        expect(w.baselineValue).toBeGreaterThanOrEqual(0);
      }
      if (durable) expect(wal.map((w) => w.unit)).toEqual(["ms", "% of run"]);
      // Then, when the disk left the run under 1% stalled, the p99 of such runs (here: the one run).
      const clear = `p99 at ${at}, runs whose WAL flush stood still beyond 25 ms < 1% of the time`;
      if (durable && wal[1]!.value < 1) {
        const p99Clear = rows.shift()!;
        expect(p99Clear).toMatchObject({
          figure: clear,
          unit: "ms",
          value: p99.value,
          target: "≤ 25 ms",
          repeats: 1,
        });
      }
    }
    expect(rows).toEqual([]);
  }, 180_000);
});

describe("bench/decide-only --quick", () => {
  it("measures the evaluate route, the hello-world baseline and the one-read floor in the same run", async () => {
    const r = await runBench("bench/decide-only/run.ts", ["--quick"], { cwd: root, timeoutMs: 110_000 });
    expect(r.status, r.stderr).toBe(0);
    const [row, cel, floor] = JSON.parse(
      readFileSync(path.join(root, "bench/results/decide-only.json"), "utf8"),
    ).rows;
    expect(row).toMatchObject({ benchmark: "decide-only", unit: "/s", repeats: 1 });
    expect(row.value).toBeGreaterThan(0);
    expect(row.baselineValue).toBeGreaterThan(0);
    expect(row.ratio).toBeCloseTo(row.value / row.baselineValue, 6);
    // the 50-CEL-rule variant, against the no-custom-rules rate of the same run
    expect(cel).toMatchObject({ benchmark: "decide-only", unit: "/s", repeats: 1, target: "≥ 0.8×" });
    expect(cel.baselineValue).toBe(row.value);
    expect(cel.ratio).toBeCloseTo(cel.value / cel.baselineValue, 6);
    // the floor: bare Fastify + one chain read per request, against the same hello-world
    expect(floor).toMatchObject({ benchmark: "decide-only", unit: "/s", repeats: 1 });
    expect(floor.value).toBeGreaterThan(0);
    expect(floor.baselineValue).toBe(row.baselineValue);
    expect(floor.ratio).toBeCloseTo(floor.value / floor.baselineValue, 6);
  });
});
