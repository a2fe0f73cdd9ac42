/**
 * The kube benchmarks in their small mode: bench/operator and bench/webhook run end to end
 * against a real control plane, the operator process (and for the operator, the service on real
 * PostgreSQL), and write well-formed results. No timing is asserted.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ResultRow } from "../../bench/lib/stats.js";
import { root } from "./helpers.js";

/** Runs `bench/<name>/run.ts --quick` as a child process; resolves with its exit code and output. */
function runQuickBench(name: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(root, `bench/${name}/run.ts`), "--quick"],
      { cwd: root, env: { ...process.env, LOG_LEVEL: "error" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.stderr.on("data", (c) => {
      out += c;
    });
    child.on("exit", (code) => resolve({ code, out }));
  });
}

/** The result file a benchmark wrote (bench/lib/report.ts). */
const resultOf = (name: string) =>
  JSON.parse(readFileSync(path.join(root, `bench/results/${name}.json`), "utf8")) as {
    name: string;
    rows: ResultRow[];
    repeats: unknown[];
  } & Record<string, unknown>;

/** Every row is well-formed: finite value, the ratio its value and baseline give, a known verdict. */
function expectWellFormed(rows: ResultRow[], benchmark: string) {
  for (const r of rows) {
    expect(r.benchmark, r.figure).toBe(benchmark);
    expect(Number.isFinite(r.value), r.figure).toBe(true);
    expect(r.value, r.figure).toBeGreaterThanOrEqual(0);
    if (r.baselineValue !== null && r.ratio !== null)
      expect(r.ratio).toBeCloseTo(r.value / r.baselineValue, 6);
    expect([true, false, null]).toContain(r.met);
    expect(r.repeats).toBe(1);
  }
}

describe("bench/operator --quick", () => {
  it("converges every resource and reports Synced against informer delivery and the controller floor", async () => {
    const { code, out } = await runQuickBench("operator");
    expect(code, out).toBe(0);
    const result = resultOf("operator");
    expect(result.name).toBe("operator");
    expectWellFormed(result.rows, "operator");
    const figures = result.rows.map((r) => `${r.figure} | ${r.baseline}`);
    expect(figures).toEqual([
      "one at a time: write → Synced p99 | informer event delivery p99",
      "one at a time: write → Synced p99 | controller floor p99",
      "one at a time: write → Synced p50 | controller floor p50",
      "burst of 10: write → Synced p99 | informer event delivery p99",
      "burst of 10: write → Synced p99 | controller floor p99",
      "burst of 10: write → Synced p50 | controller floor p50",
      "burst of 10: all Synced after | controller floor",
    ]);
    const targeted = result.rows.filter((r) => r.target !== "—");
    expect(targeted.map((r) => r.target)).toEqual(["≤ 2× and ≤ 1000 ms", "≤ 2× and ≤ 1000 ms"]);
    for (const r of targeted) expect(typeof r.met).toBe("boolean");
    expect(result.count).toBe(10);
    expect(result.repeats).toHaveLength(1);
    // Each new resource is reconciled once: the echo of its own finalizer write is not re-queued
    // (that doubled the count); an occasional conflict retry is allowed for.
    expect(result.reconcilesPerResource).toBeGreaterThanOrEqual(1);
    expect(result.reconcilesPerResource).toBeLessThan(1.5);
    expect(out).toContain("| operator | one at a time: write → Synced p99 |");
  }, 300_000);
});

describe("bench/webhook --quick", () => {
  it("injects every Pod of the injected namespaces only, and reports p50/p99 with and without", async () => {
    const { code, out } = await runQuickBench("webhook");
    expect(code, out).toBe(0);
    const result = resultOf("webhook");
    expect(result.name).toBe("webhook");
    expectWellFormed(result.rows, "webhook");
    expect(result.rows.map((r) => r.figure)).toEqual([
      "Pod create p99, 10 concurrent, with injection",
      "Pod create p50, 10 concurrent, with injection",
      "Pod create p99, 10 concurrent, through the minimal webhook",
      "Pod create p99, 10 concurrent, with injection",
      "Pods created per second, 10 concurrent, with injection",
    ]);
    const [p99] = result.rows;
    expect(p99!.baseline).toBe("Pod create p99 without the webhook");
    expect(p99!.target).toBe("≤ 1.2×");
    expect(typeof p99!.met).toBe("boolean");
    expect(result.pods).toBe(40);
    expect(result.clients).toBe(10);
    expect(result.repeats).toHaveLength(1);
    const calls = result.webhookCallMeanMs as { apiserver: number; webhookServer: number };
    expect(calls.apiserver).toBeGreaterThan(0);
    expect(calls.webhookServer).toBeGreaterThan(0);
    expect(out).toContain("| webhook | Pod create p99, 10 concurrent, with injection |");
  }, 300_000);
});
