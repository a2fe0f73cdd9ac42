/**
 * The service benchmarks (record-action, decide-only) in their small mode: the benchmark code
 * runs end to end against real PostgreSQL and the service process, and writes well-formed
 * results. No timing is asserted.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/record-action --quick", () => {
  it("measures the service, the pgbench baseline and both floors in the same run (wrk load)", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "bench/record-action/run.ts", "--quick"], {
      cwd: root,
      encoding: "utf8",
      timeout: 110_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("| record-action | actions/s at 4 clients |");
    const result = JSON.parse(readFileSync(path.join(root, "bench/results/record-action.json"), "utf8"));
    const [throughput, p99] = result.rows;
    expect(throughput.value).toBeGreaterThan(0);
    expect(throughput.baselineValue).toBeGreaterThan(0);
    expect(throughput.ratio).toBeCloseTo(throughput.value / throughput.baselineValue, 6);
    expect(p99.unit).toBe("ms");
    expect(p99.value).toBeGreaterThan(0);
    const floors = result.rows.slice(2, 4);
    expect(floors.map((f: { figure: string }) => f.figure)).toEqual([
      "floor: bare Fastify + one INSERT per request, 4 clients",
      "floor: bare Fastify + group commit, 4 clients",
    ]);
    for (const f of floors) {
      expect(f.value).toBeGreaterThan(0);
      expect(f.baselineValue).toBe(throughput.baselineValue);
    }
    // CPU per action of each party beside pgbench's per transaction; the total is their sum.
    const [total, service, postgres, client] = result.rows.slice(4);
    expect(result.rows.slice(4).map((c: { figure: string }) => c.figure)).toEqual(
      ["all processes", "service", "PostgreSQL", "load client"].map(
        (p) => `CPU per action at 4 clients: ${p}`,
      ),
    );
    for (const c of [service, postgres, client]) expect(c.value).toBeGreaterThan(0);
    expect(total.value).toBeCloseTo(service.value + postgres.value + client.value, 3);
    expect(total.baselineValue).toBeCloseTo(postgres.baselineValue + client.baselineValue, 3);
    expect(total.ratio).toBeCloseTo(total.baselineValue / total.value, 6);
  });
});

describe("bench/decide-only --quick", () => {
  it("measures the evaluate route and the hello-world baseline in the same run", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "bench/decide-only/run.ts", "--quick"], {
      cwd: root,
      encoding: "utf8",
      timeout: 110_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const [row] = JSON.parse(readFileSync(path.join(root, "bench/results/decide-only.json"), "utf8")).rows;
    expect(row).toMatchObject({ benchmark: "decide-only", unit: "/s", repeats: 1 });
    expect(row.value).toBeGreaterThan(0);
    expect(row.baselineValue).toBeGreaterThan(0);
    expect(row.ratio).toBeCloseTo(row.value / row.baselineValue, 6);
  });
});
