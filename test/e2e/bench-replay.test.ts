/**
 * bench/replay in its small mode: records events through the service (its production bundle, on
 * real PostgreSQL), copies them, and replays two candidates over HTTP on the service's replay
 * worker threads, beside the same pages read alone; the bench itself fails when two replays of a
 * candidate answer differently. No timing is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/replay --quick", () => {
  it("replays each candidate beside the pages read alone, and the answers agree", async () => {
    const r = await runBench("bench/replay/run.ts", ["--quick"], { cwd: root, timeoutMs: 170_000 });
    expect(r.status, r.stderr).toBe(0);
    const result = JSON.parse(readFileSync(path.join(root, "bench/results/replay.json"), "utf8"));
    expect(result.name).toBe("replay");
    const candidates = ["CEL + thresholds candidate", "thresholds-only candidate"];
    expect(result.rows.map((row: { figure: string }) => row.figure)).toEqual(
      candidates.flatMap((c) => [
        `events replayed per second (4000 events, ${c})`,
        `events replayed per CPU-second of the service (${c})`,
        `events replayed per second, client wall time (${c}, HTTP round trip included)`,
        `the service's event-loop delay, max during the replay (${c})`,
      ]),
    );
    for (const row of result.rows) {
      expect(Number.isFinite(row.value) && row.value > 0, row.figure).toBe(true);
    }
    for (const c of candidates) {
      // The CEL candidate changes decisions (its rules deny or hold some recorded events).
      expect(result.last[c]).toMatchObject({ events_read: 4000, events_replayed: 4000, truncated: false });
    }
    expect(result.last[candidates[0]!].changed).toBeGreaterThan(0);
  }, 180_000);
});
