/**
 * bench/capacity in its small mode: the built service on real PostgreSQL under a short agent
 * ramp (record, decide, outcome, complete), one organization's receipt chain grown to two marks
 * with append, verification and a whole-chain export verified offline, and receipt writers in
 * one organization beside the same writers spread over several. Asserts the shape of the
 * results and what the run must have done, never a timing.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ResultRow } from "../../bench/lib/stats.js";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/capacity --quick", () => {
  it("ramps agents, grows one organization's receipt chain and compares one organization with several", async () => {
    const r = await runBench("bench/capacity/run.ts", ["--quick"], { cwd: root, timeoutMs: 240_000 });
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(readFileSync(path.join(root, "bench/results/capacity.json"), "utf8"));
    expect(result).toMatchObject({ name: "capacity", quick: true, durable: false });

    // The ramp stops at the first saturated step: every step before it was not; a step within
    // the SLO is never saturated.
    const steps = result.steps as {
      agents: number;
      calls: number;
      met: boolean;
      saturated: boolean;
      completion: { count: number };
    }[];
    expect(steps.length).toBeGreaterThanOrEqual(1);
    expect(steps.map((s) => s.agents)).toEqual([2, 4].slice(0, steps.length));
    for (const s of steps.slice(0, -1)) expect(s.saturated).toBe(false);
    for (const s of steps) if (s.met) expect(s.saturated).toBe(false);
    // 3 s at 1 call/s per agent, 2 calls per chain: every agent completed a chain.
    for (const s of steps) {
      expect(s.calls).toBe(s.agents * 3);
      expect(s.completion.count).toBeGreaterThanOrEqual(s.agents);
    }

    // Both marks reached, every receipt verified (the bench throws otherwise).
    expect(result.marks.map((m: { length: number }) => m.length)).toEqual([20, 60]);
    for (const m of result.marks) expect(m.exportSeconds + m.verifyChainSeconds).toBeGreaterThan(0);

    for (const run of [result.spread.one, result.spread.single, result.spread.spread])
      expect(run.receipts).toBeGreaterThan(0);
    expect([result.spread.single.orgs, result.spread.spread.orgs]).toEqual([1, 2]);

    const rows = result.rows as ResultRow[];
    for (const row of rows) {
      expect(row).toMatchObject({ benchmark: "capacity", repeats: 1 });
      expect(Number.isFinite(row.value) && row.value > 0, row.figure).toBe(true);
    }
    const figures = rows.map((row) => row.figure);
    expect(figures).toEqual(
      expect.arrayContaining([
        "receipt append p50 at 60 vs 20 receipts",
        "whole-chain verification per receipt at 60 vs 20",
        "receipts/s, 2 writers in one organization",
      ]),
    );
    for (const row of rows.filter((x) => x.baselineValue !== null))
      expect(row.ratio).toBeCloseTo(row.value / row.baselineValue!, 6);
  }, 250_000);
});
