/**
 * bench/sidecar-overhead --quick runs end to end (its own PostgreSQL, service and sidecar
 * processes, the Node.js and Go relay floors) and prints the figures it promises. Correctness
 * only: no timing assertion. The Go relay is built by scripts/build-go-relay.sh (under CI=true
 * by .ci/run beforehand: the benchmark, and so this test, fails without it).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

describe("bench/sidecar-overhead --quick", () => {
  it("measures direct and sidecar calls, sequential and at 500/s, and prints p50, p99 and the added latency", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "bench/sidecar-overhead/run.ts", "--quick"], {
      cwd: root,
      env: { ...process.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, `${out}\n${err}`).toBe(0);
    const ms = "(\\d+\\.\\d{3}) ms";
    for (const mode of ["paced", "back-to-back"]) {
      const section = out.slice(out.indexOf(`== ${mode} `));
      const line = (label: string) =>
        new RegExp(`^${label}: +p50 ${ms} +p99 ${ms} +\\(n=20`, "m").exec(section);
      const direct = line("direct");
      const decision = line("decision only");
      const sidecar = line("through sidecar");
      const added = /^added: +p50 (-?\d+\.\d{3}) ms .*p99 (-?\d+\.\d{3}) ms/m.exec(section);
      expect(direct && decision && sidecar && added, `${mode}:\n${out}`).toBeTruthy();
      expect(section).toMatch(
        /^sidecar share of the added p50: -?\d+\.\d{3} ms .*sidecar without a tool: p50 \d+\.\d{3} ms/m,
      );
      // added = through sidecar − direct, at each percentile
      expect(Number(added![1])).toBeCloseTo(Number(sidecar![1]) - Number(direct![1]), 2);
      expect(Number(added![2])).toBeCloseTo(Number(sidecar![2]) - Number(direct![2]), 2);
    }
    expect(out).toMatch(/last chain: \d+ events recorded, every outcome bound/);
    expect(out).toContain("| sidecar-overhead | paced: added p50 |");

    // The open-loop mode at 500 calls/s, against the pgbench single-client baseline.
    const rate = out.slice(out.indexOf("== rate (500 calls/s open loop"));
    const rateLine = (label: string) =>
      new RegExp(`^${label}: +p50 ${ms} +p99 ${ms} +\\(n=200`, "m").exec(rate);
    const [rd, rs] = [rateLine("direct"), rateLine("through sidecar")];
    const radded = /^added: +p50 (-?\d+\.\d{3}) ms .*p99 (-?\d+\.\d{3}) ms .*pgbench single-client p99/m.exec(
      rate,
    );
    expect(rd && rs && radded, rate).toBeTruthy();
    expect(Number(radded![2])).toBeCloseTo(Number(rs![2]) - Number(rd![2]), 2);
    expect(rate).toMatch(/^pgbench single-client INSERT: +p50 \d+\.\d{3} ms +p99 \d+\.\d{3} ms/m);
    expect(rate).toMatch(/^CPU per governed call: sidecar \d+ µs \(system \d+ µs\), service \d+ µs/m);
    expect(out).toContain("| sidecar-overhead | 500/s: added p99 vs pgbench single-client p99 |");

    // The Go relay floor beside the Node.js one (ADR 0011): latency, CPU, ratio and memory rows.
    expect(out).toMatch(/^Go relay: added p50 -?\d+\.\d{3} ms p99 -?\d+\.\d{3} ms .*CPU per call \d+ µs/m);
    expect(out).toMatch(/^relays at rest .*: Go relay RssAnon \d+\.\d MiB VmRSS \d+\.\d MiB/m);
    const { rows } = JSON.parse(
      readFileSync(path.join(root, "bench/results/sidecar-overhead.json"), "utf8"),
    ) as {
      rows: { figure: string; value: number }[];
    };
    const value = (figure: string) => rows.find((r) => r.figure === figure)?.value;
    const positive = [
      "Go relay RssAnon at rest",
      "Go relay VmRSS at rest",
      "minimal relay RssAnon at rest",
      ...["paced", "back-to-back"].flatMap((mode) =>
        [
          "Go relay CPU per call",
          "Go relay CPU ÷ minimal relay CPU",
          "Go relay RssAnon under the load",
          "Go relay VmRSS under the load",
          "minimal relay RssAnon under the load",
          "minimal relay CPU per call",
        ].map((f) => `${mode}: ${f}`),
      ),
    ];
    for (const figure of positive) expect(value(figure), figure).toBeGreaterThan(0);
    // Added latency is a difference of two percentiles (20 calls each here): present, its sign the machine's.
    for (const mode of ["paced", "back-to-back"]) {
      for (const q of ["p50", "p99"]) {
        const figure = `${mode}: Go relay added ${q} (the hops alone, Go)`;
        expect(Number.isFinite(value(figure)), figure).toBe(true);
      }
    }
    // VmRSS counts RssAnon and the shared pages besides.
    expect(value("Go relay VmRSS at rest")).toBeGreaterThan(value("Go relay RssAnon at rest")!);
  }, 300_000);
});
