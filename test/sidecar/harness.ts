/**
 * Test harness of the sidecar suites: the real governance service on real PostgreSQL over real
 * HTTP, an organization with an API key in a mounted-style key file, a real local HTTP tool
 * server, the sidecar itself, and a real @grpc/grpc-js client of tollgate.v1.ToolGateway.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { parseConfig, readApiKey, type SidecarConfigInput } from "../../sidecar/config.js";
import type { Decision__Output } from "../../sidecar/generated/tollgate/v1/Decision.js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import type { ToolGatewayClient } from "../../sidecar/generated/tollgate/v1/ToolGateway.js";
import type { Logger } from "../../sidecar/logger.js";
import { type Sidecar, startSidecar } from "../../sidecar/sidecar.js";
import { createGatewayClient, decodeDecision } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import type { SignedReceipt } from "../../src/receipts/schema.js";
import { startTestService, type TestService } from "../support/service.js";

/** One request the tool server received. */
export interface ToolCall {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** A real HTTP tool: POST /echo echoes, /fail answers 502, /slow waits `ms`, /text is text/plain. */
export interface ToolServer {
  url: string;
  calls: ToolCall[];
  close(): Promise<void>;
}

/** Starts the tool server on a loopback port. */
export async function startToolServer(): Promise<ToolServer> {
  const calls: ToolCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : null;
      const p = (req.url ?? "/").split("?")[0]!;
      calls.push({ path: p, headers: req.headers, body });
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(payload));
      };
      if (p === "/fail") return send(502, { error: "tool broke" });
      if (p === "/text") {
        res.writeHead(200, { "content-type": "text/plain" });
        return res.end("plain words");
      }
      if (p === "/slow")
        await new Promise((r) => setTimeout(r, Number((body as { ms?: number })?.ms ?? 1000)));
      send(200, { echo: body, tool: req.headers["x-tollgate-action-name"] });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const require = createRequire(import.meta.url);
/** Path of the real @modelcontextprotocol/server-memory entry point (run with node over stdio). */
export const memoryServerEntry = require.resolve("@modelcontextprotocol/server-memory/dist/index.js");

/** The real server-memory as the MCP upstream `memory` (stdio), keeping its store in `dir`. */
export const memoryUpstream = (dir: string): NonNullable<StackOptions["upstreams"]>[number] => ({
  name: "memory",
  type: "mcp",
  transport: "stdio",
  command: process.execPath,
  args: [memoryServerEntry],
  env: { MEMORY_FILE_PATH: path.join(dir, "memory.jsonl") },
});

/** A promisified unary call; rejects with the grpc ServiceError. */
export function unary<Req, Res>(
  client: ToolGatewayClient,
  method: "OpenChain" | "Invoke" | "CompleteChain" | "GetReceipt" | "GetDecision",
  request: Req,
  opts: { deadlineMs?: number; onCall?: (call: grpc.ClientUnaryCall) => void } = {},
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const options: grpc.CallOptions = opts.deadlineMs ? { deadline: Date.now() + opts.deadlineMs } : {};
    const fn = (
      client as unknown as Record<
        string,
        grpc.requestCallback<Res> | ((...a: unknown[]) => grpc.ClientUnaryCall)
      >
    )[method] as (...a: unknown[]) => grpc.ClientUnaryCall;
    const call = fn.call(
      client,
      request,
      new grpc.Metadata(),
      options,
      (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)),
    );
    opts.onCall?.(call);
  });
}

/** What a failed call tells: gRPC code, details, tollgate-error-code and the decoded decision. */
export interface CallError {
  code: grpc.status;
  details: string;
  errorCode: string | null;
  decision: Decision__Output | null;
}

/** Unpacks a grpc ServiceError (fails the test when `err` is not one). */
export function callError(err: unknown): CallError {
  const e = err as grpc.ServiceError;
  if (typeof e?.code !== "number") throw new Error(`expected a gRPC error, got ${String(err)}`);
  const bin = e.metadata?.get("tollgate-decision-bin")[0];
  const code = e.metadata?.get("tollgate-error-code")[0];
  return {
    code: e.code,
    details: e.details,
    errorCode: typeof code === "string" ? code : null,
    decision: Buffer.isBuffer(bin) ? decodeDecision(bin) : null,
  };
}

/** Rejects → CallError; resolves → test failure. */
export async function expectFailure(p: Promise<unknown>): Promise<CallError> {
  return p.then(
    (v) => {
      throw new Error(`expected the call to fail, it returned ${JSON.stringify(v)}`);
    },
    (err) => callError(err),
  );
}

/** The running stack of one test file. */
export interface Stack {
  t: TestService;
  org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  tools: ToolServer;
  sidecar: Sidecar;
  client: ToolGatewayClient;
  /** The sidecar's configuration input (to start another one like it). */
  configInput: SidecarConfigInput;
  apiKey: string;
  /** Calls a ToolGateway method. */
  rpc<Res = Record<string, unknown>>(
    method: Parameters<typeof unary>[1],
    request: unknown,
    opts?: Parameters<typeof unary>[3],
  ): Promise<Res>;
  /**
   * Invoke with the payload given as plain JSON (converted to a Struct) and agent_name
   * defaulting to "worker".
   */
  invoke(
    request: Record<string, unknown>,
    opts?: Parameters<typeof unary>[3],
  ): Promise<InvokeResponse__Output>;
  /** Opens a chain through the sidecar and returns its id. */
  openChain(name?: string, metadata?: Record<string, unknown>): Promise<string>;
  /** Decides an approval over real HTTP with the organization's admin API key. */
  decide(approvalId: string, decision: "approve" | "deny", notes?: string): Promise<void>;
  /** Pending approvals of the organization (admin API key). */
  pendingApprovals(): Promise<{ approval_id: string; chain_id: string; action_name: string }[]>;
  /** Waits until `chainId` has a pending approval and returns its id. */
  awaitPendingApproval(chainId: string): Promise<string>;
  /** What the service stored for a chain (events with decisions and outcomes). */
  storedChain(chainId: string): Promise<{ status: string; events: Record<string, unknown>[] }>;
  /** GET a service admin route with the service admin token. */
  admin(method: string, url: string, body?: unknown): Promise<{ statusCode: number; body: string }>;
  close(): Promise<void>;
}

/** Options of startStack. */
export interface StackOptions {
  slug?: string;
  /** Extra config keys (upstreams are merged after the default http ones). */
  config?: Partial<SidecarConfigInput>;
  /** Extra upstreams besides `tools` (http echo), `fail`, `slow`, `text`. */
  upstreams?: SidecarConfigInput["upstreams"];
  /** Approval poll interval of the SDK in ms (default 100 to keep the suite fast). */
  pollIntervalMs?: number;
  /** The sidecar's logger (default: one at the config's logLevel, "silent"). */
  log?: Logger;
}

/** Starts service, tool server and sidecar. */
export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const t = await startTestService({ listen: true });
  const org = await t.bootstrapOrg(opts.slug ?? "sidecar-org");
  const tools = await startToolServer();
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-sidecar-"));
  const keyFile = path.join(dir, "api-key");
  writeFileSync(keyFile, `${org.clientKey}\n`, { mode: 0o600 });
  const configInput: SidecarConfigInput = {
    serviceUrl: t.url,
    apiKeyFile: keyFile,
    grpcAddress: "127.0.0.1:0",
    httpAddress: "127.0.0.1:0",
    logLevel: "silent",
    ...opts.config,
    upstreams: [
      { name: "tools", type: "http", url: `${tools.url}/echo` },
      { name: "fail", type: "http", url: `${tools.url}/fail` },
      { name: "slow", type: "http", url: `${tools.url}/slow`, timeout_ms: 500 },
      { name: "text", type: "http", url: `${tools.url}/text` },
      ...(opts.upstreams ?? []),
    ],
  };
  const config = parseConfig(configInput);
  const apiKey = await readApiKey(config.apiKeyFile);
  const sidecar = await startSidecar({
    config,
    apiKey,
    ...(opts.log && { log: opts.log }),
    sdkInternals: { pollIntervalMs: opts.pollIntervalMs ?? 100 },
    defaultMetrics: false,
  });
  const client = createGatewayClient(sidecar.grpcAddress);
  const rpc: Stack["rpc"] = (method, request, o) => unary(client, method, request, o);
  const adminFetch = async (method: string, url: string, token: string, body?: unknown) => {
    const res = await fetch(`${t.url}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { statusCode: res.status, body: await res.text() };
  };
  const stack: Stack = {
    t,
    org,
    tools,
    sidecar,
    client,
    configInput,
    apiKey,
    rpc,
    invoke: (request, o) =>
      rpc<InvokeResponse__Output>(
        "Invoke",
        {
          agent_name: "worker",
          ...request,
          payload: jsonToStruct((request.payload as Record<string, unknown>) ?? {}),
        },
        o,
      ),
    async openChain(name = "test-chain", metadata = {}) {
      const r = await rpc<{ chain_id: string }>("OpenChain", { name, metadata: jsonToStruct(metadata) });
      return r.chain_id;
    },
    async decide(approvalId, decision, notes) {
      const r = await adminFetch("POST", `/v1/approvals/${approvalId}/decision`, org.adminKey, {
        decision,
        ...(notes && { notes }),
      });
      if (r.statusCode !== 200) throw new Error(`decision failed: ${r.statusCode} ${r.body}`);
    },
    async pendingApprovals() {
      const r = await adminFetch("GET", "/v1/approvals?status=pending", org.adminKey);
      if (r.statusCode !== 200) throw new Error(`list approvals failed: ${r.statusCode} ${r.body}`);
      return JSON.parse(r.body).approvals;
    },
    async awaitPendingApproval(chainId) {
      for (let i = 0; i < 500; i++) {
        const found = (await stack.pendingApprovals()).find((a) => a.chain_id === chainId);
        if (found) return found.approval_id;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no pending approval appeared for chain ${chainId}`);
    },
    async storedChain(chainId) {
      const r = await adminFetch("GET", `/v1/chains/${chainId}`, org.clientKey);
      if (r.statusCode !== 200) throw new Error(`get chain failed: ${r.statusCode} ${r.body}`);
      return JSON.parse(r.body);
    },
    admin: (method, url, body) => adminFetch(method, url, t.adminToken, body),
    async close() {
      client.close();
      await sidecar.close();
      await tools.close();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/** The signed receipt of `chainId`, polled (every 100 ms) until it exists. @throws after `timeoutMs` */
export async function waitForReceipt(s: Stack, chainId: string, timeoutMs = 10_000): Promise<SignedReceipt> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const r = await fetch(`${s.t.url}/v1/chains/${chainId}/receipt`, {
      headers: { authorization: `Bearer ${s.org.clientKey}` },
    });
    if (r.status === 200) return (await r.json()) as SignedReceipt;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`chain ${chainId} got no receipt`);
}

/** Polls GET /v1/approvals/{id} (admin key) until the approval has `status`. */
export async function waitForApprovalStatus(
  s: Stack,
  approvalId: string,
  status: string,
  timeoutMs = 10_000,
): Promise<{ status: string; decided_by: string | null }> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const r = await fetch(`${s.t.url}/v1/approvals/${approvalId}`, {
      headers: { authorization: `Bearer ${s.org.adminKey}` },
    });
    const body = (await r.json()) as { status: string; decided_by: string | null };
    if (body.status === status) return body;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`approval ${approvalId} never became ${status}`);
}

/** Waits for a pending approval of the organization whose id is not in `seen`, adds it, returns it. */
export async function nextPendingApproval(
  s: Stack,
  seen: Set<string>,
): Promise<{ approval_id: string; chain_id: string }> {
  for (;;) {
    const fresh = (await s.pendingApprovals()).find((a) => !seen.has(a.approval_id));
    if (fresh) {
      seen.add(fresh.approval_id);
      return fresh;
    }
    await new Promise((res) => setTimeout(res, 50));
  }
}

/**
 * Puts the MCP tests' organization policy: the memory server's `create_entities` needs approval
 * (rule "review-new-memories"); everything else is allowed. Fails the test when refused.
 */
export async function reviewNewMemories(s: Stack, slug: string): Promise<void> {
  const p = await s.admin("PUT", `/v1/admin/organizations/${slug}/policies/rules`, {
    config: {
      custom_rules: [
        {
          name: "review-new-memories",
          match: { action_name: "create_entities" },
          outcome: "require_approval",
          reason: "new memories are reviewed",
        },
      ],
    },
  });
  expect(p.statusCode, p.body).toBeLessThan(300);
}

/**
 * Runs scripts/<script> (installs, or reuses from the cache, a tool the tests need) and returns
 * the last line of its stdout: the tool's path. Throws when the script fails (the test fails).
 */
export function toolFromScript(script: string): string {
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../..");
  return execFileSync("bash", [path.join(root, "scripts", script)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .at(-1)!;
}

/**
 * A stack whose MCP face mirrors a real server-memory (agent "assistant", its store in a fresh
 * temporary directory removed at close), `create_entities` needing approval (reviewNewMemories).
 */
export async function startMemoryStack(slug: string, config: Partial<SidecarConfigInput>): Promise<Stack> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-mcp-memory-"));
  const s = await startStack({
    slug,
    config: { mcpUpstream: "memory", agentName: "assistant", ...config },
    upstreams: [memoryUpstream(dir)],
  });
  await reviewNewMemories(s, slug);
  const close = s.close;
  s.close = async () => {
    await close();
    rmSync(dir, { recursive: true, force: true });
  };
  return s;
}
