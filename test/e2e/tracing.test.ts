/**
 * OpenTelemetry traces across agent → sidecar → service → PostgreSQL (issue 22, README
 * "Operations → Tracing"), against a real OpenTelemetry Collector built from the Go module proxy
 * (scripts/build-otelcol.sh, cached; the test fails when it cannot be built): OTLP/HTTP in on
 * loopback, the file exporter writing OTLP JSON lines to a temporary file.
 *
 * Real processes: PostgreSQL, the service (`node --import tsx src/service/main.ts`) and the
 * sidecar (`sidecar/main.ts`) with OTEL_* set, an HTTP tool that records the headers it gets. The
 * test is the agent: gRPC calls with a W3C `traceparent` in the metadata. A second service and
 * sidecar with OTEL_* unset show that nothing is exported, nothing propagated, and the answers
 * are the same.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  TRACEPARENT_META_KEY,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDatabase } from "../../bench/lib/parts.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { api } from "../support/http.js";
import { freePort, type PostgresCluster } from "../support/postgres.js";

const root = path.resolve(import.meta.dirname, "../..");
const memoryServerEntry = createRequire(import.meta.url).resolve(
  "@modelcontextprotocol/server-memory/dist/index.js",
);

/** One span as the file exporter writes it (OTLP JSON), with its resource's service.name. */
interface ExportedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number };
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
};
const plainValue = (v: AnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attrs = (list: { key: string; value: AnyValue }[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, plainValue(a.value)]));

/** Every span in the exporter's file so far. */
function readSpans(file: string): ExportedSpan[] {
  if (!existsSync(file)) return [];
  const out: ExportedSpan[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const doc = JSON.parse(line) as { resourceSpans: any[] };
    for (const rs of doc.resourceSpans) {
      const service = String(attrs(rs.resource?.attributes)["service.name"]);
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          out.push({
            service,
            scope: ss.scope?.name ?? "",
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId ?? "",
            name: s.name,
            kind: s.kind,
            attributes: attrs(s.attributes),
            status: s.status ?? {},
          });
    }
  }
  return out;
}

interface Proc {
  child: ChildProcess;
  out: () => string;
  stop(): Promise<void>;
}

function start(args: string[], env: Record<string, string>): Proc {
  let out = "";
  const child = spawn(args[0]!, args.slice(1), { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return {
    child,
    out: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function waitFor<T>(
  what: string,
  proc: Proc | null,
  probe: () => Promise<T | null> | T | null,
): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const v = await Promise.resolve(probe()).catch(() => null);
    if (v !== null && v !== undefined) return v;
    if (proc && proc.child.exitCode !== null) throw new Error(`${what}: process exited\n${proc.out()}`);
    if (Date.now() > deadline) throw new Error(`${what}: timed out\n${proc?.out() ?? ""}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The environment of a child: PATH and HOME only, plus `env` (no OTEL_* of this process). */
const childEnv = (env: Record<string, string>) => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  ...env,
});

/** OTEL_* of a traced process: OTLP/HTTP to the collector, a short batch delay. */
const otel = (endpoint: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
  OTEL_BSP_SCHEDULE_DELAY: "100",
});

/** A governed stack: the service and a sidecar in front of the recording tool. */
interface Stack {
  service: Proc;
  sidecar: Proc;
  baseUrl: string;
  /** The sidecar's MCP face (mirrors server-memory). */
  mcpUrl: string;
  client: grpc.Client;
  approverKey: string;
  /** Every secret of the stack (API keys, admin token): none may appear in a span. */
  secrets: string[];
  stop(): Promise<void>;
}

async function startStack(opts: {
  dir: string;
  databaseUrl: string;
  toolUrl: string;
  tracing: Record<string, string>;
}): Promise<Stack> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
  const service = start([process.execPath, "--import", "tsx", "src/service/main.ts"], {
    ...childEnv(opts.tracing),
    PORT: String(port),
    DATABASE_URL: opts.databaseUrl,
    TOLLGATE_ADMIN_TOKEN: adminToken,
    TOLLGATE_MASTER_KEY: randomBytes(32).toString("hex"),
    TOLLGATE_DATA_DIR: path.join(opts.dir, "service"),
    LOG_LEVEL: "info",
  });
  await waitFor("service ready", service, async () => ((await fetch(`${baseUrl}/readyz`)).ok ? true : null));
  await api(baseUrl, adminToken, "PUT", "/v1/admin/organizations/trace-org", { approval_timeout_hours: 24 });
  const key = async (role: string) =>
    (
      await api(baseUrl, adminToken, "POST", "/v1/admin/organizations/trace-org/api-keys", {
        name: role,
        role,
      })
    ).api_key as string;
  const clientKey = await key("client");
  const approverKey = await key("admin");
  const keyFile = path.join(opts.dir, "api-key");
  writeFileSync(keyFile, `${clientKey}\n`, { mode: 0o600 });
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const sidecar = start([process.execPath, "--import", "tsx", "sidecar/main.ts"], {
    ...childEnv(opts.tracing),
    TOLLGATE_SERVICE_URL: baseUrl,
    TOLLGATE_API_KEY_FILE: keyFile,
    TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
    TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
    TOLLGATE_UPSTREAMS: JSON.stringify([
      { name: "tool", type: "http", url: opts.toolUrl },
      {
        name: "memory",
        type: "mcp",
        transport: "stdio",
        command: process.execPath,
        args: [memoryServerEntry],
        env: { MEMORY_FILE_PATH: path.join(opts.dir, "memory.jsonl") },
      },
    ]),
    TOLLGATE_MCP_UPSTREAM: "memory",
    LOG_LEVEL: "info",
  });
  await waitFor("sidecar ready", sidecar, async () =>
    (await fetch(`http://127.0.0.1:${httpPort}/readyz`)).ok ? true : null,
  );
  const client = createGatewayClient(`127.0.0.1:${grpcPort}`) as unknown as grpc.Client;
  return {
    service,
    sidecar,
    baseUrl,
    mcpUrl: `http://127.0.0.1:${httpPort}/mcp`,
    client,
    approverKey,
    secrets: [clientKey, approverKey, adminToken],
    async stop() {
      client.close();
      await sidecar.stop();
      await service.stop();
    },
  };
}

/** A unary call with `metadata`; resolves with the response and the initial metadata the server sent. */
function call<Res>(
  client: grpc.Client,
  method: string,
  request: unknown,
  metadata: grpc.Metadata,
): Promise<{ res: Res; headers: grpc.Metadata }> {
  return new Promise((resolve, reject) => {
    let headers = new grpc.Metadata();
    const fn = (client as unknown as Record<string, (...a: unknown[]) => grpc.ClientUnaryCall>)[method]!;
    const c = fn.call(client, request, metadata, (err: grpc.ServiceError | null, res: Res) =>
      err ? reject(err) : resolve({ res, headers }),
    );
    c.on("metadata", (md: grpc.Metadata) => {
      headers = md;
    });
  });
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
/** An agent's span context as W3C traceparent. */
const agentSpan = () => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};
const withTraceparent = (traceparent: string) => {
  const md = new grpc.Metadata();
  md.set("traceparent", traceparent);
  return md;
};

describe("tracing: agent → sidecar → service → PostgreSQL", () => {
  let dir: string;
  let db: PostgresCluster & { urlOf(db: string): string };
  let collector: Proc;
  let traces: string;
  let otlpHttp: string;
  let tool: http.Server;
  let toolUrl: string;
  const toolHeaders: http.IncomingHttpHeaders[] = [];
  let traced: Stack;

  const spansOf = (traceId: string) => readSpans(traces).filter((s) => s.traceId === traceId);

  beforeAll(async () => {
    const bin = execFileSync("bash", [path.join(root, "scripts/build-otelcol.sh")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
      timeout: 900_000,
    })
      .trim()
      .split("\n")
      .at(-1)!;
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-tracing-"));
    traces = path.join(dir, "traces.jsonl");
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    otlpHttp = `http://127.0.0.1:${httpPort}`;
    writeFileSync(
      path.join(dir, "otelcol.yaml"),
      `receivers:
  otlp:
    protocols:
      grpc: { endpoint: "127.0.0.1:${grpcPort}" }
      http: { endpoint: "127.0.0.1:${httpPort}" }
exporters:
  file:
    path: ${JSON.stringify(traces)}
    flush_interval: 100ms
service:
  telemetry:
    metrics: { level: none }
  pipelines:
    traces: { receivers: [otlp], exporters: [file] }
`,
    );
    collector = start([bin, "--config", path.join(dir, "otelcol.yaml")], childEnv({}));
    await waitFor("collector ready", collector, () =>
      collector.out().includes("Everything is ready") ? true : null,
    );

    tool = http.createServer((req, res) => {
      toolHeaders.push(req.headers);
      req.resume().on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: true }));
      });
    });
    await new Promise<void>((r) => tool.listen(0, "127.0.0.1", r));
    toolUrl = `http://127.0.0.1:${(tool.address() as { port: number }).port}/tool`;

    db = await startDatabase(["traced", "untraced"]);
    traced = await startStack({
      dir: mkdtempSync(path.join(dir, "traced-")),
      databaseUrl: db.urlOf("traced"),
      toolUrl,
      tracing: otel(otlpHttp),
    });
  }, 900_000);

  afterAll(async () => {
    await traced?.stop();
    await db?.stop();
    await collector?.stop();
    await new Promise((r) => (tool ? tool.close(r) : r(null)));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("one governed call is one trace with spans of the agent's parent, the sidecar, the service and PostgreSQL", async () => {
    const open = agentSpan();
    const { res: opened } = await call<{ chain_id: string }>(
      traced.client,
      "OpenChain",
      { name: "traced-run", metadata: jsonToStruct({}) },
      withTraceparent(open.traceparent),
    );
    const agent = agentSpan();
    toolHeaders.length = 0;
    const { res, headers } = await call<{ forwarded: boolean; decision: { policy_decision: string } }>(
      traced.client,
      "Invoke",
      {
        chain_id: opened.chain_id,
        agent_name: "reader",
        action_type: "tool_call",
        action_name: "read_invoice",
        payload: jsonToStruct({ id: "INV-7", api_key: "sk_live_not_in_any_span" }),
        upstream: "tool",
      },
      withTraceparent(agent.traceparent),
    );
    expect(res.forwarded).toBe(true);
    expect(res.decision.policy_decision).toBe("allow");

    // Each process exports in batches, and a parent span ends (and is exported) after its
    // children: wait for every span asserted below, not just for one of each process.
    const expected = [
      "tollgate.v1.ToolGateway/Invoke",
      "execute_tool read_invoice",
      "POST /v1/chains/{chain_id}/actions",
      "POST /v1/chains/:chain_id/actions",
      "tollgate.decision",
      "tollgate.forward",
    ];
    const spans = await waitFor("the trace's spans", null, () => {
      const s = spansOf(agent.traceId);
      const names = new Set(s.map((x) => x.name));
      const pg = s.some((x) => x.attributes["db.system.name"] === "postgresql");
      const ids = new Set(s.map((x) => x.spanId));
      const parented = s.every((x) => x.parentSpanId === agent.spanId || ids.has(x.parentSpanId));
      return expected.every((n) => names.has(n)) && pg && parented ? s : null;
    });
    const byName = (name: string) => spans.filter((s) => s.name === name);
    // The sidecar's server span is the agent span's child.
    const invoke = byName("tollgate.v1.ToolGateway/Invoke");
    expect(invoke).toHaveLength(1);
    expect(invoke[0]!.parentSpanId).toBe(agent.spanId);
    expect(invoke[0]!.service).toBe("tollgate-sidecar");
    expect(invoke[0]!.kind).toBe(2); // SERVER
    expect(invoke[0]!.attributes).toMatchObject({
      "rpc.system": "grpc",
      "rpc.service": "tollgate.v1.ToolGateway",
      "rpc.method": "Invoke",
      "rpc.grpc.status_code": 0,
      "tollgate.chain.id": opened.chain_id,
      "tollgate.action.name": "read_invoice",
      "tollgate.agent.name": "reader",
    });
    // The governed execution: the GenAI conventions' execute_tool span below the server span.
    const execute = byName("execute_tool read_invoice");
    expect(execute).toHaveLength(1);
    expect(execute[0]!.parentSpanId).toBe(invoke[0]!.spanId);
    expect(execute[0]!.kind).toBe(1); // INTERNAL
    expect(execute[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "read_invoice",
      "gen_ai.tool.type": "function",
    });
    expect(execute[0]!.attributes).not.toHaveProperty("gen_ai.tool.call.id"); // no idempotency key sent
    // The SDK's request span (below execute_tool), the service's request span below it, the
    // decision and its queries.
    const request = byName("POST /v1/chains/{chain_id}/actions");
    expect(request).toHaveLength(1);
    expect(request[0]!.scope).toBe("tollgate-sdk");
    expect(request[0]!.parentSpanId).toBe(execute[0]!.spanId);
    const served = byName("POST /v1/chains/:chain_id/actions");
    expect(served).toHaveLength(1);
    expect(served[0]!.service).toBe("tollgate-service");
    expect(served[0]!.parentSpanId).toBe(request[0]!.spanId);
    expect(served[0]!.attributes).toMatchObject({
      "http.route": "/v1/chains/:chain_id/actions",
      "http.response.status_code": 200,
    });
    const decision = byName("tollgate.decision");
    expect(decision).toHaveLength(1);
    expect(decision[0]!.parentSpanId).toBe(served[0]!.spanId);
    expect(decision[0]!.attributes).toMatchObject({
      "tollgate.decision": "allow",
      "tollgate.action.name": "read_invoice",
    });
    const queries = spans.filter((s) => s.attributes["db.system.name"] === "postgresql");
    expect(queries.length).toBeGreaterThan(0);
    const ids = new Set(spans.map((s) => s.spanId));
    for (const q of queries) expect(ids.has(q.parentSpanId)).toBe(true);
    // The forward, and the tool got the forward span's traceparent.
    const forward = byName("tollgate.forward");
    expect(forward).toHaveLength(1);
    expect(forward[0]!.attributes).toMatchObject({ "tollgate.upstream.name": "tool" });
    expect(forward[0]!.parentSpanId).toBe(execute[0]!.spanId);
    expect(toolHeaders.at(-1)?.traceparent).toMatch(
      new RegExp(`^00-${agent.traceId}-${forward[0]!.spanId}-01$`),
    );
    // Every span but the agent's own has its parent in the trace.
    for (const s of spans) if (s !== invoke[0]) expect(ids.has(s.parentSpanId), s.name).toBe(true);
    // The agent learns the sidecar's span context from the response metadata.
    expect(headers.get("traceparent")[0]).toBe(`00-${agent.traceId}-${invoke[0]!.spanId}-01`);
    // No payload value, key or token in any attribute.
    const text = JSON.stringify(readSpans(traces));
    for (const secret of ["sk_live_not_in_any_span", "INV-7", ...traced.secrets])
      expect(text).not.toContain(secret);
  });

  it("a call that needs approval shows the approval wait; completion shows the receipt build; logs carry the trace id", async () => {
    const { res: opened } = await call<{ chain_id: string }>(
      traced.client,
      "OpenChain",
      { name: "approval-run", metadata: jsonToStruct({}) },
      new grpc.Metadata(),
    );
    const agent = agentSpan();
    const invoked = call<{ forwarded: boolean; decision: { decision_source: string } }>(
      traced.client,
      "Invoke",
      {
        chain_id: opened.chain_id,
        agent_name: "payer",
        action_type: "tool_call",
        action_name: "pay_invoice",
        payload: jsonToStruct({ amount_usd: 7500 }),
        upstream: "tool",
      },
      withTraceparent(agent.traceparent),
    );
    const approvalId = await waitFor("the pending approval", null, async () => {
      const chain = await api(traced.baseUrl, traced.approverKey, "GET", `/v1/chains/${opened.chain_id}`);
      return (
        (chain.events?.find((e: { approval_id?: string }) => e.approval_id)?.approval_id as string) ?? null
      );
    });
    await api(traced.baseUrl, traced.approverKey, "POST", `/v1/approvals/${approvalId}/decision`, {
      decision: "approve",
      notes: "checked",
    });
    const { res } = await invoked;
    expect(res.forwarded).toBe(true);
    expect(res.decision.decision_source).toBe("human_approval");

    const spans = await waitFor("the approval trace", null, () => {
      const s = spansOf(agent.traceId);
      return s.some((x) => x.name === "tollgate.approval.wait") &&
        s.some((x) => x.name === "tollgate.forward")
        ? s
        : null;
    });
    const invoke = spans.find((s) => s.name === "tollgate.v1.ToolGateway/Invoke")!;
    expect(invoke.parentSpanId).toBe(agent.spanId);
    const wait = spans.find((s) => s.name === "tollgate.approval.wait")!;
    expect(wait.service).toBe("tollgate-sidecar");
    expect(wait.attributes).toMatchObject({
      "tollgate.approval.id": approvalId,
      "tollgate.approval.result": "approved",
    });
    expect(spans.find((s) => s.name === "tollgate.decision")!.attributes["tollgate.decision"]).toBe(
      "require_approval",
    );
    // The polls are requests below the wait, served by the service in the same trace.
    const polls = spans.filter((s) => s.name === "GET /v1/chains/{chain_id}/approval-status");
    expect(polls.length).toBeGreaterThan(0);
    for (const p of polls) expect(p.parentSpanId).toBe(wait.spanId);
    expect(spans.some((s) => s.name === "GET /v1/chains/:chain_id/approval-status")).toBe(true);

    const done = agentSpan();
    await call(
      traced.client,
      "CompleteChain",
      { chain_id: opened.chain_id },
      withTraceparent(done.traceparent),
    );
    const completion = await waitFor("the completion trace", null, () => {
      const s = spansOf(done.traceId);
      return s.some((x) => x.name === "tollgate.receipt.build") ? s : null;
    });
    const build = completion.find((s) => s.name === "tollgate.receipt.build")!;
    expect(build.service).toBe("tollgate-service");
    expect(build.attributes["tollgate.chain.id"]).toBe(opened.chain_id);
    expect(build.attributes["tollgate.receipt.id"]).toEqual(expect.any(String));

    // The sidecar's "call waits for approval" line carries the trace and span ids.
    const line = traced.sidecar
      .out()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "call waits for approval" && l.approvalId === approvalId);
    expect(line?.trace_id).toBe(agent.traceId);
    expect(line?.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it("an MCP tools/call with params._meta.traceparent continues the client's trace", async () => {
    const client = new Client({ name: "traced-agent", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(traced.mcpUrl)));
    try {
      const agent = agentSpan();
      const result = await client.callTool({
        name: "create_entities",
        arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["wrote notes"] }] },
        _meta: { traceparent: agent.traceparent },
      });
      expect(result.isError).toBeFalsy();
      // A parent span ends after its children: wait for every span asserted below.
      const expected = [
        "tools/call create_entities",
        "execute_tool create_entities",
        "tollgate.forward",
        "tollgate.decision",
      ];
      const spans = await waitFor("the MCP trace", null, () => {
        const s = spansOf(agent.traceId);
        const names = new Set(s.map((x) => x.name));
        return expected.every((n) => names.has(n)) ? s : null;
      });
      // The MCP conventions' server span (semconv 1.39.0, sidecar/tracing.ts SEMCONV_VERSION).
      const server = spans.find((s) => s.name === "tools/call create_entities")!;
      expect(server.service).toBe("tollgate-sidecar");
      expect(server.parentSpanId).toBe(agent.spanId);
      expect(server.kind).toBe(2); // SERVER
      expect(server.attributes).toMatchObject({
        "mcp.method.name": "tools/call",
        "mcp.session.id": client.transport?.sessionId ?? "(the client has a session)",
        "mcp.protocol.version": expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), // a revision date
        "jsonrpc.request.id": expect.stringMatching(/^\d+$/),
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "create_entities",
      });
      // The GenAI conventions' execute_tool span below it; its call id is the JSON-RPC request id.
      const execute = spans.find((s) => s.name === "execute_tool create_entities")!;
      expect(execute.parentSpanId).toBe(server.spanId);
      expect(execute.kind).toBe(1); // INTERNAL
      expect(execute.attributes).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "create_entities",
        "gen_ai.tool.call.id": server.attributes["jsonrpc.request.id"],
      });
      const forward = spans.find((s) => s.name === "tollgate.forward")!;
      expect(forward.parentSpanId).toBe(execute.spanId);
      expect(forward.attributes).toMatchObject({
        "tollgate.upstream.name": "memory",
        "tollgate.upstream.type": "mcp",
      });
      expect(JSON.stringify(spans)).not.toContain("wrote notes");
    } finally {
      await client.close();
    }
  });

  it("a modern-era (2026-07-28) tools/call continues the trace of its _meta traceparent", async () => {
    const client = new ModernClient(
      { name: "traced-modern-agent", version: "1.0.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    await client.connect(new ModernTransport(new URL(traced.mcpUrl)));
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
      const agent = agentSpan();
      const result = await client.callTool({
        name: "read_graph",
        arguments: {},
        _meta: { [TRACEPARENT_META_KEY]: agent.traceparent },
      });
      expect(result.isError).toBeFalsy();
      const spans = await waitFor("the modern MCP trace", null, () => {
        const s = spansOf(agent.traceId);
        return s.some((x) => x.name === "tools/call read_graph") &&
          s.some((x) => x.name === "tollgate.forward")
          ? s
          : null;
      });
      const server = spans.find((s) => s.name === "tools/call read_graph")!;
      expect(server.parentSpanId).toBe(agent.spanId);
      expect(server.attributes).toMatchObject({
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2026-07-28",
        "gen_ai.tool.name": "read_graph",
      });
      expect(server.attributes["mcp.session.id"]).toBeUndefined(); // stateless: no session
    } finally {
      await client.close();
    }
  });

  it("with OTEL_* unset nothing is exported or propagated, and the answers are the same", async () => {
    const untraced = await startStack({
      dir: mkdtempSync(path.join(dir, "untraced-")),
      databaseUrl: db.urlOf("untraced"),
      toolUrl,
      tracing: {},
    });
    try {
      expect(untraced.sidecar.out()).toContain("tracing is off");
      const { res: opened } = await call<{ chain_id: string }>(
        untraced.client,
        "OpenChain",
        { name: "untraced-run", metadata: jsonToStruct({}) },
        new grpc.Metadata(),
      );
      const agent = agentSpan();
      toolHeaders.length = 0;
      const { res, headers } = await call<{ forwarded: boolean; decision: { policy_decision: string } }>(
        untraced.client,
        "Invoke",
        {
          chain_id: opened.chain_id,
          agent_name: "reader",
          action_type: "tool_call",
          action_name: "read_invoice",
          payload: jsonToStruct({ id: "INV-8" }),
          upstream: "tool",
        },
        withTraceparent(agent.traceparent),
      );
      expect(res.forwarded).toBe(true);
      expect(res.decision.policy_decision).toBe("allow");
      expect(headers.get("traceparent")).toEqual([]);
      expect(toolHeaders.at(-1)?.traceparent).toBeUndefined();
      // Longer than the traced processes' batch delay and the collector's flush interval.
      await new Promise((r) => setTimeout(r, 1500));
      expect(spansOf(agent.traceId)).toEqual([]);
      expect(readSpans(traces).filter((s) => s.attributes["tollgate.chain.id"] === opened.chain_id)).toEqual(
        [],
      );
      expect(untraced.sidecar.out()).not.toContain("trace_id");
      expect(untraced.service.out()).not.toContain("trace_id");
    } finally {
      await untraced.stop();
    }
  });
});
