/**
 * Real parts for benchmarks: a throwaway PostgreSQL cluster, pgbench baselines, and the
 * governance service as a separate process (so the load generator does not share its event loop).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import pg from "pg";
import {
  freePort,
  type PostgresCluster,
  type PostgresOptions,
  startPostgres,
} from "../../test/support/postgres.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * Builds the production bundles (`npm run build`: service.js, sidecar.js, ...) afresh into a
 * scratch directory under .cache/ inside the repository (so packages resolve from its
 * node_modules) and returns it; benchmarks run what the images run. The caller removes it.
 * @throws Error when the build fails.
 */
export function buildBundles(): string {
  const parent = path.join(repoRoot, ".cache");
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(path.join(parent, "bench-build-"));
  execFileSync(process.execPath, ["scripts/build.mjs", "--outdir", dir], { cwd: repoRoot, stdio: "ignore" });
  return dir;
}

/** Starts PostgreSQL and creates `databases` in it. */
export async function startDatabase(
  databases: string[],
  options: PostgresOptions = {},
): Promise<PostgresCluster & { urlOf(db: string): string }> {
  const cluster = await startPostgres(options);
  const c = new pg.Client({ connectionString: cluster.url });
  await c.connect();
  for (const db of databases) await c.query(`CREATE DATABASE ${db}`);
  await c.end();
  return { ...cluster, urlOf: (db: string) => cluster.url.replace(/\/[^/]*$/, `/${db}`) };
}

/** The governance service running as its own process against PostgreSQL. */
export interface ServiceProcess {
  url: string;
  adminToken: string;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts the service (`node --import tsx src/service/main.ts`, or `entry` instead of
 * `--import tsx src/service/main.ts`, e.g. a built `dist/service.js`; plus `nodeArgs` such as
 * --cpu-prof) on a free port; resolves when /readyz answers. `databaseUrl` null: embedded
 * PGlite in a fresh data directory. `adminToken` is `env.TOLLGATE_ADMIN_TOKEN` when given, else
 * a fresh one. The service's log (warn and above) goes to bench/results/logs/service-<port>.log,
 * so that an error answer in a run can be explained afterwards.
 */
export async function startServiceProcess(
  databaseUrl: string | null,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
  entry: string[] = ["--import", "tsx", "src/service/main.ts"],
): Promise<ServiceProcess> {
  const port = await freePort();
  // Replicas of one deployment pass the same TOLLGATE_ADMIN_TOKEN in `env`.
  const adminToken = env.TOLLGATE_ADMIN_TOKEN ?? `tga_${randomBytes(32).toString("base64url")}`;
  const logDir = path.join(repoRoot, "bench/results/logs");
  mkdirSync(logDir, { recursive: true });
  const log = openSync(path.join(logDir, `service-${port}.log`), "w");
  const proc = spawn(process.execPath, [...nodeArgs, ...entry], {
    cwd: repoRoot,
    env: {
      ...process.env,
      PORT: String(port),
      ...(databaseUrl !== null && { DATABASE_URL: databaseUrl }),
      TOLLGATE_ADMIN_TOKEN: adminToken,
      TOLLGATE_MASTER_KEY: randomBytes(32).toString("hex"),
      TOLLGATE_DATA_DIR: path.join(os.tmpdir(), `tg-bench-${port}`),
      LOG_LEVEL: "warn",
      DATABASE_POOL_MAX: "20",
      ...env,
    },
    stdio: ["ignore", log, "pipe"],
  });
  let stderr = "";
  proc.stderr!.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  // Generous: under a full parallel test run on 2 cores a tsx start-up can take most of a minute.
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`service exited:\n${stderr}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`service not ready:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    adminToken,
    proc,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * Starts a benchmark's helper script (`node --import tsx <script> ...args`, from the repository
 * root, with `env` added) that prints its address on its first stdout line once listening;
 * resolves with that address and a stop function (SIGTERM, then waits for the exit).
 * @throws Error when the script exits before printing.
 */
export function startScript(
  script: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ address: string; pid: number; stop(): Promise<void> }> {
  return startListener(process.execPath, ["--import", "tsx", path.join(repoRoot, script), ...args], env);
}

/**
 * Starts `command` with `args` (from the repository root, with `env` added), a process that
 * prints its address on its first stdout line once listening (a helper script, or a native
 * floor such as the Go relay); resolves with that address and a stop function (SIGTERM, then
 * waits for the exit).
 * @throws Error when the process exits before printing.
 */
export async function startListener(
  command: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ address: string; pid: number; stop(): Promise<void> }> {
  const proc = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const address = await new Promise<string>((resolve, reject) => {
    createInterface({ input: proc.stdout! }).once("line", (line) => resolve(line.trim()));
    proc.once("error", reject);
    proc.once("exit", (code) =>
      reject(new Error(`${[path.basename(command), ...args].join(" ")} exited with ${code}`)),
    );
  });
  return {
    address,
    pid: proc.pid!,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

/** How a benchmark stops its parts: see {@link teardown}. */
export interface Teardown {
  push(stop: () => Promise<unknown>): void;
  stopAll(): Promise<void>;
}

/**
 * A benchmark's teardown: `push` registers how to stop a part; `stopAll` stops them newest
 * first, ignoring failures. SIGINT, SIGTERM and SIGHUP run it too and exit with 128 + the
 * signal number, so an interrupted benchmark leaves no process or PostgreSQL behind. With a
 * `parent`, it is a scope inside it (parts stopped before the parent goes on): the parent's
 * stopAll, and so a signal, stops it too.
 */
export function teardown(parent?: Teardown): Teardown {
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  if (parent) {
    parent.push(stopAll);
  } else {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      process.once(
        signal,
        () => void stopAll().finally(() => process.exit(128 + os.constants.signals[signal])),
      );
    }
  }
  return { push: (stop) => void stops.push(stop), stopAll };
}

/** JSON request helper for benchmarks; throws on non-2xx. */
// biome-ignore lint/suspicious/noExplicitAny: benchmark responses of many shapes
export async function api(url: string, token: string, method: string, body?: unknown): Promise<any> {
  const r = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${url} → ${r.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Creates an organization with runaway limits off and returns a client API key. */
export async function benchOrg(svc: ServiceProcess, slug: string): Promise<string> {
  await api(`${svc.url}/v1/admin/organizations/${slug}`, svc.adminToken, "PUT", {
    runaway_limits: { max_events: 0, max_duration_seconds: 0, max_tokens: 0 },
  });
  const key = await api(`${svc.url}/v1/admin/organizations/${slug}/api-keys`, svc.adminToken, "POST", {
    name: "bench",
    role: "client",
  });
  return key.api_key;
}
