/**
 * bench/cluster --quick in the cluster this project brought up (TOLLGATE_BENCH_CLUSTER: reused,
 * left running): it installs its own release beside nothing else, times governed, minimal-relay,
 * Go-relay and direct tool calls pod to pod and pod creation with vs without injection, writes well-formed
 * rows, and removes everything it added. No timing is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ResultRow } from "../../bench/lib/stats.js";
import { CLUSTER, kJson, ROOT, run, TAG } from "./support.js";

/** An API object, by name. */
type Named = { metadata: { name: string } };

describe("bench/cluster --quick", () => {
  it("measures a governed tool call pod to pod and pod creation with injection, then cleans up", async () => {
    const r = await run(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "bench/cluster/run.ts"), "--quick"],
      {
        env: { TOLLGATE_BENCH_CLUSTER: CLUSTER, TOLLGATE_TEST_IMAGE_TAG: TAG },
        timeoutMs: 480_000,
      },
    );
    expect(r.code, r.stderr.slice(-20000)).toBe(0);
    const result = JSON.parse(readFileSync(path.join(ROOT, "bench/results/cluster.json"), "utf8"));
    expect(result).toMatchObject({ name: "cluster", cluster: "reused", pods: 4, concurrency: 2 });
    const rows = result.rows as ResultRow[];
    const pods = "injected (4 pods, 2 at a time)";
    expect(rows.map((x) => x.figure)).toEqual([
      "governed tool call p50, pod to pod (sidecar Invoke → service → tool; 10 ms gaps)",
      "governed tool call p99, pod to pod (sidecar Invoke → service → tool; 10 ms gaps)",
      "minimal relay call p50, pod to pod (the same hops, nothing done at them)",
      "minimal relay call p99, pod to pod (the same hops, nothing done at them)",
      "Go relay call p50, pod to pod (the same hops in Go: grpc-go, net/http)",
      "Go relay call p99, pod to pod (the same hops in Go: grpc-go, net/http)",
      "added p50 (governed − direct)",
      "added p99 (governed − direct)",
      "Go relay added p50 (Go relay − direct)",
      "Go relay added p99 (Go relay − direct)",
      `pod admission (create → API response) p50, ${pods}`,
      `pod admission (create → API response) p99, ${pods}`,
      `pod create → Ready p50, ${pods}`,
      `pod create → Ready p99, ${pods}`,
    ]);
    for (const row of rows) {
      expect(row).toMatchObject({ benchmark: "cluster", unit: "ms", repeats: 1 });
      expect(Number.isFinite(row.value), row.figure).toBe(true);
    }
    // Governed and relays vs direct, injected vs plain: both measured, ratio = value / baseline.
    for (const row of [...rows.slice(0, 6), ...rows.slice(10)]) {
      expect(row.value, row.figure).toBeGreaterThan(0);
      expect(row.baselineValue, row.figure).toBeGreaterThan(0);
      expect(row.ratio).toBeCloseTo(row.value / row.baselineValue!, 6);
    }
    // The added latency is the difference of the two p50s (p99s) of the same run, its baseline
    // the relay's added latency the same way; the Go relay's likewise, against the same baseline.
    for (const q of [0, 1]) {
      const [governed, relay, goRelay, added, goAdded] = [0, 2, 4, 6, 8].map((i) => rows[q + i]!);
      expect(added!.value).toBeCloseTo(governed!.value - governed!.baselineValue!, 6);
      expect(added!.baselineValue).toBeCloseTo(relay!.value - relay!.baselineValue!, 6);
      expect(goAdded!.value).toBeCloseTo(goRelay!.value - goRelay!.baselineValue!, 6);
      expect(goAdded!.baselineValue).toBeCloseTo(added!.baselineValue!, 6);
    }
    for (const row of [rows[6]!, rows[7]!, rows[11]!]) expect(typeof row.met).toBe("boolean");
    // Nothing of the benchmark is left in the cluster.
    const namespaces = (await kJson(["get", "namespaces"])).items.map((n: Named) => n.metadata.name);
    expect(namespaces.filter((n: string) => n.startsWith("tollgate-bench"))).toEqual([]);
    const webhooks = (await kJson(["get", "mutatingwebhookconfigurations"])).items.map(
      (w: Named) => w.metadata.name,
    );
    expect(webhooks).not.toContain("tollgate-bench-sidecar-injector");
  });
});
