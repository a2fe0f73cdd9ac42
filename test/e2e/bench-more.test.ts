/**
 * bench/receipt, bench/grpc-passthrough and bench/memory in their small mode: each runs end to
 * end against its real parts (src/receipts; the sidecar process and a bare grpc-js server; the
 * service on real PostgreSQL and the sidecar, built and through tsx) and writes well-formed
 * results. No timing is asserted.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runBench } from "../support/run-bench.js";

const root = path.resolve(import.meta.dirname, "../..");

interface Row {
  benchmark: string;
  figure: string;
  value: number;
  unit: string;
  baselineValue: number | null;
  ratio: number | null;
  met: boolean | null;
  repeats: number;
}

/** Runs bench/<name>/run.ts --quick and returns its result rows. */
async function runQuick(name: string): Promise<Row[]> {
  const r = await runBench(`bench/${name}/run.ts`, ["--quick"], { cwd: root, timeoutMs: 110_000 });
  expect(r.status, r.stderr).toBe(0);
  const result = JSON.parse(readFileSync(path.join(root, `bench/results/${name}.json`), "utf8"));
  expect(result.name).toBe(name);
  for (const row of result.rows as Row[]) {
    expect(row.benchmark).toBe(name);
    expect(Number.isFinite(row.value) && row.value > 0, row.figure).toBe(true);
    expect(row.repeats).toBe(1);
  }
  return result.rows;
}

/** A row compared with a baseline of the same run: finite figures and ratio = value / baseline. */
function expectCompared(row: Row | undefined, unit: string) {
  expect(row?.unit).toBe(unit);
  expect(Number.isFinite(row!.baselineValue) && row!.baselineValue! > 0).toBe(true);
  expect(row!.ratio).toBeCloseTo(row!.value / row!.baselineValue!, 6);
  expect(typeof row!.met).toBe("boolean");
}

describe("bench/receipt --quick", () => {
  it("builds and verifies receipts beside raw crypto over the same bytes", async () => {
    const rows = await runQuick("receipt");
    const figures = [
      "build, 10-event receipt",
      "build, 1,000-event receipt",
      "verify 200-receipt chain, HMAC (service)",
      "verify 200-receipt chain, Ed25519 (tollgate verify)",
    ];
    // Each figure, then its floor with each RFC 8785 library (+ the same raw crypto), same run.
    const libraries = ["json-canon", "canonicalize", "canonicalize 5", "@truestamp/canonify"];
    const perFigure = 1 + libraries.length;
    expect(rows.map((r) => r.figure)).toEqual(
      figures.flatMap((f) => [f, ...libraries.map((l) => `library floor (${l} + raw crypto): ${f}`)]),
    );
    for (const [i, row] of rows.entries()) {
      if (i % perFigure === 0) {
        expectCompared(row, "receipts/s");
      } else {
        expect(row.ratio).toBeCloseTo(row.value / row.baselineValue!, 6);
        expect(row.baselineValue).toBe(rows[i - (i % perFigure)]!.baselineValue);
      }
    }
  });
});

describe("bench/grpc-passthrough --quick", () => {
  it("drives the sidecar and a bare grpc-js server with the same exchanges", async () => {
    const rows = await runQuick("grpc-passthrough");
    const exchanges = [
      "Invoke plumbing, 1 KiB payload (no service call)",
      "Invoke plumbing, 32 KiB payload (no service call)",
      "grpc.health.v1 Check",
    ];
    expect(rows.map((r) => r.figure)).toEqual(
      exchanges.flatMap((e) => [`${e}, 16 in flight`, `server CPU per call, ${e}`]),
    );
    for (const [i, row] of rows.entries()) {
      if (i % 2 === 0) expectCompared(row, "calls/s");
      else {
        expect(row.unit).toBe("µs");
        expect(row.baselineValue).toBeGreaterThan(0);
        expect(row.ratio).toBeCloseTo(row.baselineValue! / row.value, 6);
      }
    }
  });
});

describe("bench/memory --quick", () => {
  it("reads the RSS of the service and the sidecar at rest and under load, as built and through tsx", async () => {
    const rows = await runQuick("memory");
    const figures = [
      "sidecar RSS at rest",
      "sidecar RSS under load (max, 4 agents)",
      "service RSS at rest",
      "service RSS under load (max, 4 agents)",
    ];
    const sidecarFloors = [
      "sidecar anonymous RSS (RssAnon) at rest: what each pod adds (the node executable's pages are shared)",
      "sidecar anonymous RSS (RssAnon) under load: what each pod adds (the node executable's pages are shared)",
      "sidecar RSS at rest vs its packages alone",
    ];
    const embedded = [
      "service RSS at rest on embedded PGlite",
      "service peak RSS on embedded PGlite (VmHWM, start included)",
    ];
    expect(rows.map((r) => r.figure)).toEqual([
      ...figures,
      ...sidecarFloors,
      ...embedded,
      ...figures.map((f) => `${f}, through tsx`),
    ]);
    // The image configuration against the tsx one of the same run, with the targets.
    for (const row of rows.slice(0, 4)) {
      expect(row.unit).toBe("MiB");
      expect(row.ratio).toBeCloseTo(row.value / row.baselineValue!, 6);
      expect(typeof row.met).toBe("boolean");
    }
    // The sidecar's anonymous part of its RSS, and its RSS beside its packages alone (an idle
    // node importing them): both below the sidecar's own RSS.
    const [anonRest, anonPeak, packages] = [rows[4]!, rows[5]!, rows[6]!];
    expect(anonRest.value).toBeGreaterThan(0);
    expect(anonRest.value).toBeLessThan(rows[0]!.value);
    expect(anonPeak.value).toBeGreaterThanOrEqual(anonRest.value);
    expect(packages.value).toBe(rows[0]!.value);
    expect(packages.baselineValue).toBeGreaterThan(0);
    expect(packages.baselineValue).toBeLessThan(packages.value);
    expect(packages.ratio).toBeCloseTo(packages.value / packages.baselineValue!, 6);
    // The embedded default beside the same build on PostgreSQL at rest, and its own peak.
    const [onPglite, peak] = [rows[7]!, rows[8]!];
    expect(onPglite.baselineValue).toBe(rows[2]!.value);
    expect(onPglite.ratio).toBeCloseTo(onPglite.value / onPglite.baselineValue!, 6);
    expect(peak.value).toBeGreaterThanOrEqual(onPglite.value);
    const tsx = rows.slice(9);
    for (const [i, row] of tsx.entries()) {
      expect(row).toMatchObject({ unit: "MiB", baselineValue: null, ratio: null, met: null });
      expect(row.value).toBe(rows[i]!.baselineValue);
    }
    // The maximum under load includes the reading at rest.
    for (const i of [0, 2]) expect(rows[i + 1]!.value).toBeGreaterThanOrEqual(rows[i]!.value);
    for (const i of [0, 2]) expect(tsx[i + 1]!.value).toBeGreaterThanOrEqual(tsx[i]!.value);
  });
});
