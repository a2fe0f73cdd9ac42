/**
 * The sidecar fails closed (issue: "a deny must never turn into an allow", "same in the
 * sidecar"): hostile input to a denied action is INVALID_ARGUMENT and never forwarded; a service
 * answering 500 (or 4xx) is an error even where the fail mode is allow; only 502/503/504 and an
 * unreachable service reach the fail modes. The service sits behind a real HTTP proxy whose
 * answers the test sets.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../sidecar/config.js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import type { ToolGatewayClient } from "../../sidecar/generated/tollgate/v1/ToolGateway.js";
import { type Sidecar, startSidecar } from "../../sidecar/sidecar.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { expectFailure, type Stack, startStack, unary } from "./harness.js";

describe("sidecar fails closed", () => {
  let s: Stack;
  /** When set, the proxy answers this status to every action request instead of forwarding. */
  let answer: number | null = null;
  let proxy: http.Server;
  let sidecar: Sidecar;
  let client: ToolGatewayClient;
  let dir: string;
  let chainId: string;

  beforeAll(async () => {
    s = await startStack({ slug: "sidecar-fail-closed" });
    const policy = await s.admin("PUT", `/v1/admin/organizations/${s.org.slug}/policies/vault`, {
      config: {
        custom_rules: [
          {
            name: "no-secret-store",
            match: { action_name: "read_secret_store" },
            outcome: "deny",
            reason: "off limits",
          },
        ],
      },
    });
    expect(policy.statusCode, policy.body).toBeLessThan(300);
    const target = new URL(s.t.url);
    proxy = http.createServer((req, res) => {
      if (answer !== null && req.url?.includes("/actions")) {
        res.writeHead(answer, { "content-type": "application/json" });
        return res.end(
          JSON.stringify({ statusCode: answer, code: "TG_ERR_INTERNAL", message: "Internal error" }),
        );
      }
      const upstream = http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const { port } = proxy.address() as net.AddressInfo;
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-fail-closed-"));
    const keyFile = path.join(dir, "api-key");
    writeFileSync(keyFile, `${s.org.clientKey}\n`, { mode: 0o600 });
    sidecar = await startSidecar({
      config: parseConfig({
        ...s.configInput,
        serviceUrl: `http://127.0.0.1:${port}`,
        apiKeyFile: keyFile,
        // Allow everywhere: any path into the fail modes would show as a forwarded call.
        failModes: { default: "allow", financial: "allow", external_communication: "allow" },
      }),
      apiKey: s.org.clientKey,
      sdkInternals: { pollIntervalMs: 100 },
      defaultMetrics: false,
    });
    client = createGatewayClient(sidecar.grpcAddress);
    chainId = (
      await unary<unknown, { chain_id: string }>(client, "OpenChain", {
        name: "fc",
        metadata: jsonToStruct({}),
      })
    ).chain_id;
  });
  afterAll(async () => {
    client?.close();
    await sidecar?.close();
    proxy?.closeAllConnections();
    await new Promise((r) => proxy?.close(r));
    await s?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const invoke = (action: string, payload: Record<string, unknown>) =>
    unary<unknown, InvokeResponse__Output>(client, "Invoke", {
      chain_id: chainId,
      agent_name: "worker",
      action_name: action,
      payload: jsonToStruct(payload),
      upstream: "tools",
    });
  const forwarded = (action: string) =>
    s.tools.calls.filter((c) => c.headers["x-tollgate-action-name"] === action);

  it("the denied action with a clean payload is PERMISSION_DENIED, not forwarded", async () => {
    const err = await expectFailure(invoke("read_secret_store", { path: "/vault/prod" }));
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(forwarded("read_secret_store")).toHaveLength(0);
  });

  it("NUL in the payload is INVALID_ARGUMENT naming the field, never forwarded", async () => {
    const err = await expectFailure(invoke("read_secret_store", { path: "/vault/prod\u0000" }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain("payload.path");
    expect(forwarded("read_secret_store")).toHaveLength(0);
  });

  it("a lone surrogate becomes U+FFFD on the wire (protobuf strings are UTF-8): still denied", async () => {
    const err = await expectFailure(invoke("read_secret_store", { path: "/vault/\ud800" }));
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(forwarded("read_secret_store")).toHaveLength(0);
  });

  // Each answer's own status (sidecar/wire/errors.ts toGatewayError): a rejected key or an unknown
  // failure is INTERNAL, a 400 INVALID_ARGUMENT, a 404 NOT_FOUND; none is UNAVAILABLE.
  it.each([
    [500, status.INTERNAL, "INTERNAL"],
    [400, status.INVALID_ARGUMENT, "INVALID_ARGUMENT"],
    [401, status.INTERNAL, "INTERNAL"],
    [403, status.INTERNAL, "INTERNAL"],
    [404, status.NOT_FOUND, "NOT_FOUND"],
    [409, status.INTERNAL, "INTERNAL"],
  ])(
    "the service answering %i is an error (gRPC %i, %s), never the fail mode allow",
    async (code, grpcCode, errorCode) => {
      answer = code;
      try {
        const err = await expectFailure(invoke("read_file", { path: "/tmp/a" }));
        expect(err.code).toBe(grpcCode);
        expect(err.errorCode).toBe(errorCode);
        expect(forwarded("read_file")).toHaveLength(0);
      } finally {
        answer = null;
      }
    },
  );

  it("502 from the proxy is unreachability: the fail mode allow forwards, flagged", async () => {
    answer = 502;
    try {
      const r = await invoke("list_files", { path: "/tmp" });
      expect(r.decision).toMatchObject({ policy_decision: "allow_with_flag", decision_source: "fail_mode" });
      expect(forwarded("list_files")).toHaveLength(1);
    } finally {
      answer = null;
    }
  });
});
