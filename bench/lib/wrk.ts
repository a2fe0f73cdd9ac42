/**
 * wrk (Debian package `wrk`) as the HTTP load client for throughput benchmarks whose baseline is
 * a C client (pgbench). A closed loop of node:http callers in a Node process took a large share
 * of the two cores itself: at 32 clients it let the service record 3.0–3.2k actions/s where wrk
 * drives the same service at 4.1–4.8k, and a bare Fastify route at 26k req/s where node:http
 * reached 7–16k. wrk keeps `connections` requests in flight (one per connection, closed loop),
 * like pgbench's clients.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** What one wrk run measured: requests/s, latency percentiles in ms, and failures. */
export interface WrkResult {
  perSecond: number;
  requests: number;
  p50: number;
  p99: number;
  /** Responses with a status outside 2xx/3xx, plus socket errors. */
  errors: number;
}

/** POST load: each request goes to the next of `paths` (round-robin) with `headers` and `body`. */
export interface WrkPost {
  paths: string[];
  headers: Record<string, string>;
  body: string;
}

/** Throws unless the wrk binary is on PATH (CI installs it: .ci/run). */
export function requireWrk(): void {
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
  } catch (err) {
    // wrk --version exits 1 after printing its version; only a missing binary is fatal.
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      throw new Error("wrk not found on PATH: install it (apt-get install wrk; .ci/run does)");
    }
  }
}

const lua = (s: string) => JSON.stringify(s); // JSON string literals are valid Lua strings here

/**
 * Runs wrk with one thread and `connections` connections against `origin` for `seconds`.
 * @throws Error when wrk fails or its output cannot be parsed.
 */
export function runWrk(origin: string, load: WrkPost, connections: number, seconds: number): WrkResult {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-wrk-"));
  try {
    const script = path.join(dir, "post.lua");
    writeFileSync(
      script,
      [
        `local paths = {${load.paths.map(lua).join(",")}}`,
        "local i = 0",
        'wrk.method = "POST"',
        `wrk.body = ${lua(load.body)}`,
        'wrk.headers["Content-Type"] = "application/json"',
        ...Object.entries(load.headers).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`),
        "request = function()",
        "  i = i % #paths + 1",
        "  return wrk.format(nil, paths[i])",
        "end",
      ].join("\n"),
      { mode: 0o600 },
    );
    const run = spawnSync(
      "wrk",
      ["-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-s", script, origin],
      { encoding: "utf8" },
    );
    if (run.status !== 0) throw new Error(`wrk failed (${run.status}): ${run.stderr}${run.stdout}`);
    return parseWrk(run.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Milliseconds from a wrk duration such as `812.00us`, `9.70ms` or `1.02s`. */
const ms = (text: string): number => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!m) throw new Error(`unparsable wrk duration ${text}`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[m[2] as "us" | "ms" | "s" | "m"];
  return Number(m[1]) * scale;
};

/** Parses wrk's summary (with --latency). */
export function parseWrk(out: string): WrkResult {
  const perSecond = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const p50 = /^\s+50%\s+(\S+)/m.exec(out)?.[1];
  const p99 = /^\s+99%\s+(\S+)/m.exec(out)?.[1];
  if (!Number.isFinite(perSecond) || !Number.isFinite(requests) || !p50 || !p99) {
    throw new Error(`could not parse wrk output:\n${out}`);
  }
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0;
  return { perSecond, requests, p50: ms(p50), p99: ms(p99), errors: non2xx + socketErrors };
}
