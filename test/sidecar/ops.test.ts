/**
 * Operating the sidecar: gRPC health and reflection, /healthz /readyz /metrics, graceful drain
 * (in-flight calls finish or fail cleanly, new ones are refused), and the real entry point
 * `sidecar/main.ts` as a process: --help, configuration errors, the key file, SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONFIG_ENVIRONMENT } from "../../sidecar/config.js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import { createGatewayClient, LOADER_OPTIONS } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { freePort } from "../support/postgres.js";
import { expectFailure, type Stack, startStack, unary } from "./harness.js";

const require = createRequire(import.meta.url);
const root = path.resolve(import.meta.dirname, "../..");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function loadClient(protoFile: string, includeDir: string, service: string, address: string): grpc.Client {
  const def = protoLoader.loadSync(protoFile, { ...LOADER_OPTIONS, includeDirs: [includeDir] });
  const ctor = service
    .split(".")
    .reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], grpc.loadPackageDefinition(def));
  return new (ctor as typeof grpc.Client)(address, grpc.credentials.createInsecure());
}

const healthCheck = (client: grpc.Client, service: string) =>
  new Promise<string>((resolve, reject) =>
    (client as unknown as Record<string, (...a: unknown[]) => void>).Check!(
      { service },
      (err: Error | null, res: { status: string }) => (err ? reject(err) : resolve(res.status)),
    ),
  );

describe("sidecar operations (in process)", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ slug: "ops-org" });
  });
  afterAll(async () => s?.close());

  it("serves grpc.health.v1 and server reflection", async () => {
    const healthProto = require.resolve("grpc-health-check/proto/health/v1/health.proto");
    const health = loadClient(
      "health/v1/health.proto",
      path.resolve(path.dirname(healthProto), "../.."),
      "grpc.health.v1.Health",
      s.sidecar.grpcAddress,
    );
    expect(await healthCheck(health, "")).toBe("SERVING");
    expect(await healthCheck(health, "tollgate.v1.ToolGateway")).toBe("SERVING");
    health.close();

    const reflectionProto = require.resolve(
      "@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto",
    );
    const reflection = loadClient(
      "grpc/reflection/v1/reflection.proto",
      path.resolve(path.dirname(reflectionProto), "../../.."),
      "grpc.reflection.v1.ServerReflection",
      s.sidecar.grpcAddress,
    );
    const stream = (reflection as unknown as Record<string, () => grpc.ClientDuplexStream<unknown, unknown>>)
      .ServerReflectionInfo!();
    const answer = once(stream, "data");
    stream.write({ list_services: "*" });
    const [res] = (await answer) as [{ list_services_response: { service: { name: string }[] } }];
    stream.end();
    reflection.close();
    expect(res.list_services_response.service.map((x) => x.name)).toContain("tollgate.v1.ToolGateway");
  });

  it("answers /healthz, /readyz and /metrics", async () => {
    expect((await fetch(`${s.sidecar.httpUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${s.sidecar.httpUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
    const chainId = await s.openChain();
    await s.rpc("Invoke", {
      chain_id: chainId,
      agent_name: "w",
      action_name: "read_file",
      upstream: "tools",
    });
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(/tollgate_sidecar_invocations_total\{decision="allow",surface="grpc"\} 1/);
    expect(metrics).toMatch(/tollgate_sidecar_decision_duration_seconds_count 1/);
    expect(metrics).toMatch(
      /tollgate_sidecar_upstream_duration_seconds_count\{upstream="tools",result="ok"\} 1/,
    );
    expect(metrics).toContain("tollgate_sidecar_approval_wait_seconds");
    expect(metrics).toContain("tollgate_sidecar_errors_total");
    expect(metrics).not.toContain(s.apiKey);
    expect((await fetch(`${s.sidecar.httpUrl}/mcp`, { method: "POST" })).status).toBe(404); // face off
  });

  it("drain: an in-flight call finishes, new calls are refused, readiness turns 503", async () => {
    const chainId = await s.openChain();
    const inflight = s.rpc<InvokeResponse__Output>("Invoke", {
      chain_id: chainId,
      agent_name: "w",
      action_name: "long_job",
      payload: jsonToStruct({ ms: 300 }),
      upstream: "slow",
    });
    while (!s.tools.calls.some((c) => c.headers["x-tollgate-action-name"] === "long_job")) await sleep(10);
    const drained = s.sidecar.drain(10_000);
    await sleep(50);
    expect((await fetch(`${s.sidecar.httpUrl}/readyz`)).status).toBe(503);
    const fresh = createGatewayClient(s.sidecar.grpcAddress);
    const refused = await expectFailure(
      unary(fresh, "Invoke", { chain_id: chainId, agent_name: "w", action_name: "late", upstream: "tools" }),
    );
    fresh.close();
    expect(refused.code).toBe(grpc.status.UNAVAILABLE);
    const r = await inflight;
    expect(r.forwarded).toBe(true);
    expect(JSON.parse(r.result_json).tool).toBe("long_job");
    await drained;
    const stored = await s.storedChain(chainId);
    expect(stored.events[0]?.outcome).toMatchObject({ status: "success" }); // reported before the drain ended
    expect(s.tools.calls.some((c) => c.headers["x-tollgate-action-name"] === "late")).toBe(false);
  });
});

describe("sidecar/main.ts as a process", () => {
  let s: Stack;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    s = await startStack({ slug: "main-org" });
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await s?.close();
  });

  const run = (args: string[], env: Record<string, string>) => {
    const child = spawn(process.execPath, ["--import", "tsx", "sidecar/main.ts", ...args], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    return {
      child,
      output: () => out,
      exited: new Promise<number>((resolve) => child.once("exit", (code) => resolve(code ?? -1))),
    };
  };

  it("--help documents the environment; bad configuration exits 2 naming the variable", async () => {
    const help = run(["--help"], {});
    expect(await help.exited).toBe(0);
    // Every setting the configuration reads is documented in --help.
    for (const name of CONFIG_ENVIRONMENT) expect(help.output()).toContain(`  ${name} `);
    const bad = run([], {
      TOLLGATE_SERVICE_URL: "not a url",
      TOLLGATE_UPSTREAMS: '[{"name":"x","type":"ftp"}]',
    });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain("TOLLGATE_SERVICE_URL");
    expect(bad.output()).toContain("TOLLGATE_UPSTREAMS");
    const noKey = run([], { TOLLGATE_SERVICE_URL: s.t.url, TOLLGATE_API_KEY_FILE: "/nonexistent/api-key" });
    expect(await noKey.exited).toBe(2);
    expect(noKey.output()).toContain("TOLLGATE_API_KEY_FILE");
  });

  it("serves with the key from its file, and on SIGTERM fails a waiting call cleanly and exits 0", async () => {
    const keyFile = path.join(path.dirname(s.configInput.apiKeyFile!), "mounted-key");
    writeFileSync(keyFile, s.apiKey, { mode: 0o600 });
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const proc = run([], {
      TOLLGATE_SERVICE_URL: s.t.url,
      TOLLGATE_API_KEY_FILE: keyFile,
      TOLLGATE_ORGANIZATION: "main-org",
      TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TOLLGATE_UPSTREAMS: JSON.stringify([{ name: "tools", type: "http", url: `${s.tools.url}/echo` }]),
      TOLLGATE_DRAIN_TIMEOUT_MS: "500",
      LOG_LEVEL: "info",
    });
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${httpPort}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (i > 300 || proc.child.exitCode !== null)
        throw new Error(`sidecar did not become ready:\n${proc.output()}`);
      await sleep(50);
    }
    const client = createGatewayClient(`127.0.0.1:${grpcPort}`);
    const { chain_id } = await unary<unknown, { chain_id: string }>(client, "OpenChain", { name: "process" });
    const ok = await unary<unknown, InvokeResponse__Output>(client, "Invoke", {
      chain_id,
      agent_name: "w",
      action_name: "read_file",
      upstream: "tools",
    });
    expect(ok.forwarded).toBe(true);

    const waiting = expectFailure(
      unary(client, "Invoke", {
        chain_id,
        agent_name: "w",
        action_name: "pay",
        payload: jsonToStruct({ amount_usd: 9000 }),
        upstream: "tools",
      }),
    );
    await s.awaitPendingApproval(chain_id);
    proc.child.kill("SIGTERM");
    const err = await waiting;
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.errorCode).toBe("SHUTTING_DOWN");
    expect(await proc.exited).toBe(0);
    client.close();
    expect(proc.output()).toContain("Tollgate sidecar listening");
    expect(proc.output()).not.toContain(s.apiKey);
    expect(s.tools.calls.some((c) => c.headers["x-tollgate-action-name"] === "pay")).toBe(false);
  });
});
