/**
 * bench/soak in its small mode: the built service on real PostgreSQL and the built sidecar under
 * an open-loop load for a minute, memory sampled from /proc and /metrics, and well-formed result
 * rows (slopes, p99 per window, the windows' ratio). No timing and no slope is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ResultRow } from "../../bench/lib/stats.js";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/soak --quick", () => {
  it("samples both processes' RSS and heap and reports slopes and p99 per window", async () => {
    const r = await runBench("bench/soak/run.ts", ["--quick"], { cwd: root, timeoutMs: 240_000 });
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(readFileSync(path.join(root, "bench/results/soak.json"), "utf8"));
    expect(result).toMatchObject({ name: "soak", quick: true, errors: 0, sample_errors: 0 });
    // Chains were completed and replaced during the run (200 calls each, 3,000 calls).
    expect(result.chains_completed).toBeGreaterThan(0);
    // A sample every 2 s over a minute, each with both processes' readings.
    expect(result.samples.length).toBeGreaterThanOrEqual(20);
    for (const s of result.samples)
      for (const v of [
        s.rss.sidecar,
        s.rss.service,
        s.heap.sidecar,
        s.heap.service,
        s.old.sidecar,
        s.old.service,
        s.anon.sidecar,
        s.anon.service,
        s.heapTotal.sidecar,
        s.heapTotal.service,
      ])
        expect(v).toBeGreaterThan(0);
    expect(result.windows.map((w: { calls: number }) => w.calls)).toEqual([1500, 1500]);

    const rows = result.rows as ResultRow[];
    const slopes = (part: string, of: string[]) => of.map((m) => `${part} ${m} slope after 0.5 min warm-up`);
    // With a target, then where growth lives (no target).
    const targeted = ["RSS", "V8 heap used", "V8 old space used"];
    const attribution = ["RssAnon", "V8 heap committed", "RssAnon outside the V8 heap", "external memory"];
    expect(rows.map((row) => row.figure)).toEqual([
      ...slopes("sidecar", targeted),
      ...slopes("sidecar", attribution),
      "sidecar RSS at the end",
      ...slopes("service", targeted),
      ...slopes("service", attribution),
      "service RSS at the end",
      "p99, window 1 (min 0–0.5)",
      "p99, window 2 (min 0.5–1)",
      "p99 of the slowest of 2 windows",
    ]);
    for (const row of rows) {
      expect(row).toMatchObject({ benchmark: "soak", repeats: 1 });
      expect(Number.isFinite(row.value), row.figure).toBe(true);
    }
    for (const row of rows.filter((x) => x.figure.includes("slope"))) {
      expect(row.unit).toBe("MiB/10 min");
      if (targeted.some((m) => row.figure.includes(` ${m} slope`))) expect(row.met).toBe(row.value <= 1);
      else expect(row.met).toBeNull();
    }
    const windows = rows.filter((x) => x.figure.startsWith("p99, window"));
    for (const [i, row] of windows.entries()) {
      expect(row.unit).toBe("ms");
      expect(row.value).toBe(result.windows[i].p99);
    }
    // The slowest window's p99 beside the fastest's, their ratio against the 20% target.
    const ratio = rows.at(-1)!;
    expect(ratio.value).toBe(Math.max(...windows.map((w) => w.value)));
    expect(ratio.baselineValue).toBe(Math.min(...windows.map((w) => w.value)));
    expect(ratio.ratio).toBeCloseTo(ratio.value / ratio.baselineValue!, 6);
    expect(ratio.met).toBe(ratio.ratio! <= 1.2);
  }, 250_000);
});
