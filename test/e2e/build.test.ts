/**
 * The production build (`npm run build`, scripts/build.mjs) runs as the images run it: the
 * bundles are built into a scratch directory, then started with plain `node` (no tsx): the
 * service on embedded PGlite (its migrations are found, its lazily imported packages load) and
 * the sidecar with the NODE_OPTIONS the webhook injects (its proto files are found, it answers
 * grpc.health.v1 and opens a chain through the service); the operator and the CLI bundles load
 * every module (the operator's Reflect metadata prelude runs before @peculiar/x509).
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SIDECAR_NODE_OPTIONS } from "../../operator/webhook/sidecar.js";
import { createGatewayClient, LOADER_OPTIONS } from "../../sidecar/wire/proto.js";
import { freePort } from "../support/postgres.js";

const require = createRequire(import.meta.url);
const root = path.resolve(import.meta.dirname, "../..");

/** A bundle of the build started with `node`; resolves when `readyUrl` answers 200. */
async function startBuilt(file: string, env: Record<string, string>, readyUrl: string) {
  const proc = spawn(process.execPath, [file], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", NODE_ENV: "production", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  proc.stdout!.on("data", (d) => (output = (output + d).slice(-4000)));
  proc.stderr!.on("data", (d) => (output = (output + d).slice(-4000)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${path.basename(file)} exited:\n${output}`);
    const ok = await fetch(readyUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return proc;
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${path.basename(file)} not ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Stops a process with SIGTERM and resolves with its exit code. */
async function stop(proc: ChildProcess | undefined): Promise<number | null> {
  if (!proc) return null;
  if (proc.exitCode === null) {
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGTERM");
    await exited;
  }
  return proc.exitCode;
}

/** A unary call of `method` on a grpc-js client built from a loaded package definition. */
const unary = <Res>(client: grpc.Client, method: string, req: unknown) =>
  new Promise<Res>((resolve, reject) =>
    (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[
      method
    ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
  );

/** grpc.health.v1 Check of `service` on the gRPC server at `address`: its status name. */
async function healthCheck(address: string, service: string): Promise<string> {
  const healthProto = require.resolve("grpc-health-check/proto/health/v1/health.proto");
  const def = protoLoader.loadSync("health/v1/health.proto", {
    ...LOADER_OPTIONS,
    includeDirs: [path.resolve(path.dirname(healthProto), "../..")],
  });
  const Health = ["grpc", "health", "v1", "Health"].reduce<unknown>(
    (o, k) => (o as Record<string, unknown>)[k],
    grpc.loadPackageDefinition(def),
  ) as typeof grpc.Client;
  const client = new Health(address, grpc.credentials.createInsecure());
  try {
    return (await unary<{ status: string }>(client, "Check", { service })).status;
  } finally {
    client.close();
  }
}

describe("the production build (npm run build)", () => {
  let outdir: string;
  let dataDir: string;
  let service: ChildProcess | undefined;
  let sidecar: ChildProcess | undefined;
  let serviceUrl: string;
  let sidecarHttp: string;
  let sidecarGrpc: string;
  let clientKey: string;
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;

  beforeAll(async () => {
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    expect(pkg.scripts.build).toBe("node scripts/build.mjs");
    // Inside the repository: the bundles import packages from its node_modules.
    mkdirSync(path.join(root, ".cache"), { recursive: true });
    outdir = mkdtempSync(path.join(root, ".cache", "build-test-"));
    execFileSync(process.execPath, ["scripts/build.mjs", "--outdir", outdir], { cwd: root, stdio: "pipe" });
    dataDir = mkdtempSync(path.join(os.tmpdir(), "tg-build-"));

    const port = await freePort();
    serviceUrl = `http://127.0.0.1:${port}`;
    service = await startBuilt(
      path.join(outdir, "service.js"),
      {
        PORT: String(port),
        TOLLGATE_DATA_DIR: dataDir,
        TOLLGATE_ADMIN_TOKEN: adminToken,
        TOLLGATE_MASTER_KEY: randomBytes(32).toString("hex"),
      },
      `${serviceUrl}/readyz`,
    );

    const admin = async (method: string, url: string, body: unknown) => {
      const r = await fetch(`${serviceUrl}${url}`, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`${method} ${url} → ${r.status}: ${await r.text()}`);
      return r.json();
    };
    await admin("PUT", "/v1/admin/organizations/built", {});
    const key = await admin("POST", "/v1/admin/organizations/built/api-keys", {
      name: "sidecar",
      role: "client",
    });
    const keyFile = path.join(dataDir, "api-key");
    clientKey = key.api_key;
    writeFileSync(keyFile, key.api_key, { mode: 0o600 });

    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    sidecarGrpc = `127.0.0.1:${grpcPort}`;
    sidecarHttp = `http://127.0.0.1:${httpPort}`;
    sidecar = await startBuilt(
      path.join(outdir, "sidecar.js"),
      {
        NODE_OPTIONS: SIDECAR_NODE_OPTIONS,
        TOLLGATE_SERVICE_URL: serviceUrl,
        TOLLGATE_API_KEY_FILE: keyFile,
        TOLLGATE_GRPC_ADDRESS: sidecarGrpc,
        TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
        TOLLGATE_UPSTREAMS: "[]",
      },
      `${sidecarHttp}/readyz`,
    );
  });

  afterAll(async () => {
    await stop(sidecar);
    await stop(service);
    if (outdir) rmSync(outdir, { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("serves the service from dist/service.js on PGlite (migrations applied)", async () => {
    const ready = await fetch(`${serviceUrl}/readyz`);
    expect(ready.status).toBe(200);
    const orgs = await fetch(`${serviceUrl}/v1/admin/organizations/built`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(orgs.status).toBe(200);
  });

  it("serves the sidecar from dist/sidecar.js: /readyz, grpc.health.v1, a chain through the service", async () => {
    expect((await fetch(`${sidecarHttp}/readyz`)).status).toBe(200);
    expect(await healthCheck(sidecarGrpc, "")).toBe("SERVING");
    expect(await healthCheck(sidecarGrpc, "tollgate.v1.ToolGateway")).toBe("SERVING");
    const client = createGatewayClient(sidecarGrpc);
    try {
      const opened = await unary<{ chain_id: string }>(client, "OpenChain", { name: "built" });
      expect(opened.chain_id).toMatch(/\S/);
    } finally {
      client.close();
    }
  });

  it("replays on its worker threads from dist/replay-worker.js", async () => {
    const call = async (url: string, token: string, body: unknown) => {
      const r = await fetch(`${serviceUrl}${url}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(r.status, await r.clone().text()).toBeLessThan(300);
      return r.json();
    };
    const from = new Date(Date.now() - 60_000);
    const chain = await call("/v1/chains", clientKey, { name: "replayed" });
    await call(`/v1/chains/${chain.chain_id}/actions`, clientKey, {
      agent_name: "agent",
      action_type: "tool_call",
      action_name: "send_email",
      payload: {},
    });
    const answer = await call("/v1/admin/organizations/built/policies/replay", adminToken, {
      candidate: {
        custom_rules: [{ name: "no-mail", match: { action_name: "send_email" }, outcome: "deny" }],
      },
      from: from.toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
    });
    // The page was decided on a worker thread: the bundle resolved and ran the engine.
    expect(answer).toMatchObject({
      events_read: 1,
      chains_read: 1,
      changed: 1,
      changes: { "allow→deny": 1 },
    });
  });

  it("drains both on SIGTERM (exit 0)", async () => {
    expect(await stop(sidecar)).toBe(0);
    expect(await stop(service)).toBe(0);
  });

  it("loads every module of the operator and the CLI bundles", () => {
    // No configuration: the operator gets past every import (@peculiar/x509 needs the Reflect
    // metadata prelude first) and rejects its environment.
    const operator = spawnSync(process.execPath, [path.join(outdir, "operator.js")], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(operator.stderr).toMatch(/Invalid operator configuration/);
    expect(operator.status, operator.stderr).toBe(2);
    const cli = spawnSync(process.execPath, [path.join(outdir, "tollgate.js"), "--help"], {
      cwd: root,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/verify/);
  });
});
