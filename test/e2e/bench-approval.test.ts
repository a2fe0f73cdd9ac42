/**
 * bench/approval-resume in its small mode: the benchmark runs end to end (service process on
 * real PostgreSQL, SDK callers blocked on approvals, approvals through the HTTP API) and writes
 * well-formed results. No timing is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/approval-resume --quick", () => {
  it("measures long-poll resume (same and other replica) beside the 5 s poll baselines", async () => {
    const r = await runBench("bench/approval-resume/run.ts", ["--quick"], { cwd: root, timeoutMs: 110_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("| approval-resume | approve → resumed p99 (long-poll) |");
    const result = JSON.parse(readFileSync(path.join(root, "bench/results/approval-resume.json"), "utf8"));
    expect(result.name).toBe("approval-resume");
    expect(result.callers).toEqual({ longPoll: 3, otherReplica: 2, plainPoll: 2 });
    const rows = result.rows as Array<Record<string, unknown>>;
    const byFigure = (figure: string, baseline?: string) =>
      rows.find((x) => x.figure === figure && (baseline === undefined || x.baseline === baseline));
    for (const row of rows) {
      expect(row).toMatchObject({ benchmark: "approval-resume", unit: "ms", better: "lower", repeats: 1 });
      expect(row.value).toBeGreaterThan(0);
    }
    const vsSpec = byFigure("approve → resumed p99 (long-poll)", "spec 5 s poll (constant)")!;
    expect(vsSpec.baselineValue).toBe(5000);
    expect(vsSpec.ratio).toBeCloseTo((vsSpec.value as number) / 5000, 6);
    expect(typeof vsSpec.met).toBe("boolean");
    const vsMeasured = byFigure("approve → resumed p99 (long-poll)", "SDK 5 s poll, same run")!;
    expect(vsMeasured.baselineValue).toBe(byFigure("approve → resumed p99 (SDK 5 s poll)")!.value);
    // The cross-replica resume (NOTIFY only) against the same run's same-replica long-poll.
    const otherReplica = byFigure(
      "approve → resumed p99 (long-poll, other replica)",
      "long-poll on the approving replica, same run",
    )!;
    expect(otherReplica.baselineValue).toBe(vsSpec.value);
    expect(byFigure("shortest gap between a caller's polls (long-poll, either replica)")).toBeDefined();
  });
});
