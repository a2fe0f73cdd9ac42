import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { root } from "./helpers.js";

/** Runs `bench/operator/run.ts --quick` as a child process; resolves with its exit code and output. */
function runQuickBench(): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(root, "bench/operator/run.ts"), "--quick"],
      {
        cwd: root,
        env: { ...process.env, LOG_LEVEL: "error" },
        stdio: ["ignore", "pipe", "pipe"],
      },
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

describe("bench/operator --quick", () => {
  it("converges every resource, injects every pod and prints its numbers", async () => {
    const { code, out } = await runQuickBench();
    expect(code, out).toBe(0);
    const line = out.split("\n").find((l) => l.startsWith("RESULT "));
    expect(line, out).toBeDefined();
    const result = JSON.parse(line!.slice("RESULT ".length));
    for (const key of [
      "reconcile",
      "reconcileBaseline",
      "burst",
      "webhook",
      "webhookBaseline",
      "podCreateInjected",
      "podCreatePlain",
    ]) {
      expect(result[key].n, key).toBeGreaterThan(0);
      expect(Number.isFinite(result[key].p99), key).toBe(true);
      expect(result[key].p50, key).toBeLessThanOrEqual(result[key].p99);
    }
    expect(result.reconcile.n).toBe(10);
    expect(result.webhook.n).toBe(200);
    expect(out).toContain("reconcile apply → Synced");
    expect(out).toContain("webhook AdmissionReview over HTTPS");
  }, 300_000);
});
