/**
 * Tool credentials only in the sidecar (issue 27): upstream credentials named by a Secret,
 * mounted the way the kubelet mounts a Secret volume (`..data` symlink to a timestamped folder,
 * swapped atomically on update), read by the sidecar and put on the forwarded request.
 * Real parts: the governance service, the sidecar, real HTTP tools that refuse calls without
 * the credential, a real MCP server over Streamable HTTP, and a real OAuth 2.0 authorization
 * server (oidc-provider) issuing short-lived JWT access tokens that the tool verifies, also for
 * RFC 8693 token exchange (a grant registered on the provider). Tracing is on for the whole file,
 * exporting OTLP/JSON to a receiver here: no credential may reach a span.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { status } from "@grpc/grpc-js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from "jose";
import type { Configuration } from "oidc-provider";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ConfigError, parseConfig } from "../../sidecar/config.js";
import { createLogger } from "../../sidecar/logger.js";
import { Attr, startTracing, type Tracing } from "../../src/telemetry/tracing.js";
import { expectFailure, type Stack, startStack } from "./harness.js";

const execFileAsync = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secret = (label: string) => `${label}-${randomBytes(12).toString("hex")}`;

/**
 * Writes a Secret the way the kubelet's atomic writer does: the files into a new
 * `..<timestamp>` folder, a `..data_tmp` link renamed over `..data` (atomic), a `key → ..data/key`
 * link per key, and the previous folder removed.
 */
function writeSecret(dir: string, data: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  const old = readdirSync(dir).filter((n) => n.startsWith("..") && n !== "..data");
  const version = `..${new Date().toISOString().replace(/[:.]/g, "_")}.${randomBytes(4).toString("hex")}`;
  mkdirSync(path.join(dir, version));
  for (const [k, v] of Object.entries(data)) writeFileSync(path.join(dir, version, k), v, { mode: 0o400 });
  symlinkSync(version, path.join(dir, "..data_tmp"));
  renameSync(path.join(dir, "..data_tmp"), path.join(dir, "..data"));
  for (const k of Object.keys(data)) {
    try {
      symlinkSync(path.join("..data", k), path.join(dir, k));
    } catch {
      // the key's link exists already
    }
  }
  for (const n of readdirSync(dir)) if (!n.startsWith(".") && !(n in data)) unlinkSync(path.join(dir, n)); // keys gone from the Secret
  for (const o of old) rmSync(path.join(dir, o), { recursive: true, force: true });
}

/** Every log line the sidecar wrote (pino JSON), for the no-secret checks. */
function logCapture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger("trace", destination as never), text: () => lines.join("") };
}

/** A real HTTP tool that answers 401 unless `authorized(headers)`; records what it received. */
async function startGuardedTool(authorized: (h: http.IncomingHttpHeaders) => boolean | Promise<boolean>) {
  const seen: { path: string; headers: http.IncomingHttpHeaders; status: number }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const ok = await authorized(req.headers);
      seen.push({ path: req.url ?? "/", headers: req.headers, status: ok ? 200 : 401 });
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          ok
            ? { ok: true, body: JSON.parse(Buffer.concat(chunks).toString() || "null") }
            : { error: "unauthorized" },
        ),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A real MCP server (Streamable HTTP, stateless) with tool `lookup`, behind a bearer check. */
async function startMcpTool(validToken: () => string) {
  const seen: { method: string; status: number }[] = [];
  const server = http.createServer(async (req, res) => {
    const ok = req.headers.authorization === `Bearer ${validToken()}`;
    seen.push({ method: req.method ?? "", status: ok ? 0 : 401 });
    if (!ok) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized"}');
      return;
    }
    const mcp = new McpServer({ name: "crm", version: "1.0.0" });
    mcp.registerTool("lookup", { inputSchema: { id: z.string() } }, async ({ id }) => ({
      content: [{ type: "text" as const, text: `customer ${id}` }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** An HTTP server that reads requests and never answers; `seen` logs each request and its closing by the client. */
async function startHangingServer() {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.on("close", () => seen.push("closed by the client"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    seen,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** What the agent saw of failed calls, and --print-config's output (for the no-secret checks). */
const agentErrors: string[] = [];
/** Every credential value the tests used (secrets, access tokens, subject tokens): never in a span. */
const credentialValues: string[] = [];

/**
 * Tracing on for the whole file, the way a sidecar runs it (startTracing, OTLP http/json), the
 * exporter pointed at a receiver here that keeps every span exported (sidecar and service).
 */
type OtlpValue = { stringValue?: string } & Record<string, unknown>;
type OtlpSpan = {
  name: string;
  attributes?: { key: string; value: OtlpValue }[];
  events?: { name: string; attributes?: { key: string; value: OtlpValue }[] }[];
  status?: { code?: number; message?: string };
};
const exported: { spans: OtlpSpan[]; bodies: string[] } = { spans: [], bodies: [] };
let tracing: Tracing;
let otlpReceiver: http.Server;
const savedOtelEnv = {
  endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
  protocol: process.env.OTEL_EXPORTER_OTLP_PROTOCOL,
};
beforeAll(async () => {
  otlpReceiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const text = (req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString();
      exported.bodies.push(text);
      const doc = JSON.parse(text) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
      for (const rs of doc.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) exported.spans.push(...(ss.spans ?? []));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => otlpReceiver.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(otlpReceiver.address() as { port: number }).port}`;
  // The OTLP exporter reads its endpoint from process.env (src/telemetry/tracing.ts).
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
  tracing = await startTracing({
    serviceName: "tollgate-sidecar",
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" },
  });
  expect(tracing.settings.enabled).toBe(true);
});
afterAll(async () => {
  await tracing?.shutdown();
  otlpReceiver?.closeAllConnections();
  await new Promise((r) => otlpReceiver?.close(r));
  for (const [k, v] of [
    ["OTEL_EXPORTER_OTLP_ENDPOINT", savedOtelEnv.endpoint],
    ["OTEL_EXPORTER_OTLP_PROTOCOL", savedOtelEnv.protocol],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

describe("file credentials: bearer and headers, http and mcp upstreams", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "tg-creds-"));
  const credentialsDir = path.join(root, "credentials");
  const values = { bearer: [secret("tok1"), secret("tok2")], key: [secret("key1"), secret("key2")] };
  const mcpTokens = [secret("mcp1"), secret("mcp2")];
  let validBearer = values.bearer[0]!;
  let validKey = values.key[0]!;
  let validMcp = mcpTokens[0]!;
  let tool: Awaited<ReturnType<typeof startGuardedTool>>;
  let mcpTool: Awaited<ReturnType<typeof startMcpTool>>;
  let s: Stack;
  const logs = logCapture();
  credentialValues.push(...values.bearer, ...values.key, ...mcpTokens);

  beforeAll(async () => {
    tool = await startGuardedTool(
      (h) =>
        h.authorization === `Bearer ${validBearer}` ||
        (h["x-api-key"] === validKey && h["x-tenant"] === "acme"),
    );
    mcpTool = await startMcpTool(() => validMcp);
    writeSecret(path.join(credentialsDir, "pay"), { token: values.bearer[0]! });
    writeSecret(path.join(credentialsDir, "keyed"), { "x-api-key": values.key[0]!, "X-Tenant": "acme\n" });
    writeSecret(path.join(credentialsDir, "crm"), { token: mcpTokens[0]! });
    // A plain folder (no ..data link), as a local run or a bind mount has it.
    mkdirSync(path.join(credentialsDir, "plain"));
    writeFileSync(path.join(credentialsDir, "plain", "api-token"), values.bearer[0]!);
    writeSecret(path.join(credentialsDir, "reserved"), {
      "content-length": "0",
      "x-api-key": values.key[0]!,
    });
    s = await startStack({
      slug: "creds-org",
      log: logs.log,
      config: { credentialsDir },
      upstreams: [
        {
          name: "pay",
          type: "http",
          url: `${tool.url}/pay`,
          credentials: { secretName: "pay-credentials", type: "bearer" },
        },
        {
          name: "keyed",
          type: "http",
          url: `${tool.url}/keyed`,
          headers: { "x-tenant": "overridden-by-the-secret" },
          credentials: { secretName: "keyed-credentials", type: "headers" },
        },
        {
          name: "nosecret",
          type: "http",
          url: `${tool.url}/nosecret`,
          credentials: { secretName: "never-mounted", type: "bearer" },
        },
        {
          name: "reserved",
          type: "http",
          url: `${tool.url}/reserved`,
          credentials: { secretName: "reserved-credentials", type: "headers" },
        },
        {
          name: "plain",
          type: "http",
          url: `${tool.url}/plain`,
          credentials: { secretName: "plain-credentials", type: "bearer", key: "api-token" },
        },
        {
          name: "crm",
          type: "mcp",
          transport: "streamable_http",
          url: mcpTool.url,
          credentials: { secretName: "crm-credentials", type: "bearer" },
        },
      ],
    });
  });
  afterAll(async () => {
    await s?.close();
    await tool?.close();
    await mcpTool?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("the tools refuse a call without the credential", async () => {
    const direct = await fetch(`${tool.url}/pay`, { method: "POST", body: "{}" });
    expect(direct.status).toBe(401);
    const mcpDirect = await fetch(mcpTool.url, { method: "POST", body: "{}" });
    expect(mcpDirect.status).toBe(401);
    tool.seen.length = 0;
  });

  it("bearer: forwarded with the token; after an atomic ..data swap the next call sends the new one", async () => {
    const chainId = await s.openChain();
    const r = await s.invoke({
      chain_id: chainId,
      action_name: "read_file",
      payload: { n: 1 },
      upstream: "pay",
    });
    expect(r.forwarded).toBe(true);
    expect(r.upstream_status).toBe(200);
    expect(tool.seen.at(-1)?.headers.authorization).toBe(`Bearer ${values.bearer[0]}`);

    validBearer = values.bearer[1]!; // the tool rotates …
    writeSecret(path.join(credentialsDir, "pay"), { token: `${values.bearer[1]}\n` }); // … and so does the Secret
    const r2 = await s.invoke({
      chain_id: chainId,
      action_name: "read_file",
      payload: { n: 2 },
      upstream: "pay",
    });
    expect(r2.upstream_status).toBe(200);
    expect(tool.seen.at(-1)?.headers.authorization).toBe(`Bearer ${values.bearer[1]}`);
    expect(tool.seen.every((c) => c.status === 200)).toBe(true);
  });

  it("headers: every key of the Secret is a header (over a static one of the same name), re-read on a swap", async () => {
    const chainId = await s.openChain();
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "keyed" });
    expect(r.upstream_status).toBe(200);
    expect(tool.seen.at(-1)?.headers).toMatchObject({ "x-api-key": values.key[0], "x-tenant": "acme" });

    validKey = values.key[1]!;
    writeSecret(path.join(credentialsDir, "keyed"), { "x-api-key": values.key[1]!, "X-Tenant": "acme" });
    const r2 = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "keyed" });
    expect(r2.upstream_status).toBe(200);
    expect(tool.seen.at(-1)?.headers["x-api-key"]).toBe(values.key[1]);
  });

  it("a plain folder (no ..data link) is re-read when the file is replaced", async () => {
    const chainId = await s.openChain();
    validBearer = values.bearer[0]!;
    const file = path.join(credentialsDir, "plain", "api-token");
    writeFileSync(file, values.bearer[0]!);
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "plain" });
    expect(r.upstream_status).toBe(200);
    validBearer = values.bearer[1]!;
    writeFileSync(`${file}.new`, values.bearer[1]!);
    renameSync(`${file}.new`, file);
    const r2 = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "plain" });
    expect(r2.upstream_status).toBe(200);
    expect(tool.seen.at(-1)?.headers.authorization).toBe(`Bearer ${values.bearer[1]}`);
  });

  it("mcp over Streamable HTTP: every request to the server carries the token, rotation included", async () => {
    const chainId = await s.openChain();
    const r = await s.invoke({
      chain_id: chainId,
      action_name: "lookup",
      payload: { id: "c-1" },
      upstream: "crm",
    });
    expect(r.forwarded).toBe(true);
    expect(JSON.parse(r.result_json).content[0].text).toBe("customer c-1");

    validMcp = mcpTokens[1]!;
    writeSecret(path.join(credentialsDir, "crm"), { token: mcpTokens[1]! });
    const r2 = await s.invoke({
      chain_id: chainId,
      action_name: "lookup",
      payload: { id: "c-2" },
      upstream: "crm",
    });
    expect(JSON.parse(r2.result_json).content[0].text).toBe("customer c-2");
    // Only the direct probe of the first test was refused; the sidecar never was.
    expect(mcpTool.seen.filter((x) => x.status === 401)).toHaveLength(1);
  });

  it("no credential (Secret not mounted, a reserved header): UNAVAILABLE naming upstream and Secret, nothing forwarded", async () => {
    const chainId = await s.openChain();
    const before = tool.seen.length;
    const missing = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "nosecret" }),
    );
    expect(missing.code).toBe(status.UNAVAILABLE);
    expect(missing.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(missing.details).toBe(
      `upstream nosecret: credential unavailable (Secret never-mounted): cannot read key token at ${credentialsDir}/nosecret/token (ENOENT)`,
    );
    expect(missing.decision?.policy_decision).toBe("allow");
    const reserved = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "reserved" }),
    );
    expect(reserved.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(reserved.details).toBe(
      "upstream reserved: credential unavailable (Secret reserved-credentials): key content-length names a header the sidecar sets itself",
    );
    agentErrors.push(JSON.stringify(missing), JSON.stringify(reserved));
    expect(tool.seen.length).toBe(before);

    // The outcome says why: error_class CredentialUnavailable.
    let events: Record<string, unknown>[] = [];
    for (let i = 0; i < 100; i++) {
      events = (await s.storedChain(chainId)).events;
      if (events.length === 2 && events.every((e) => e.outcome)) break;
      await sleep(50);
    }
    expect(events.map((e) => (e.outcome as { error_class?: string } | undefined)?.error_class)).toEqual([
      "CredentialUnavailable",
      "CredentialUnavailable",
    ]);
  });

  it("--print-config shows the Secret's name and type, never a value", async () => {
    const upstreams = s.configInput.upstreams!.filter((u) => u.name === "pay" || u.name === "keyed");
    const { stdout } = await execFileAsync(
      process.execPath,
      ["--import", "tsx", "sidecar/main.ts", "--print-config"],
      {
        cwd: path.resolve(import.meta.dirname, "../.."),
        env: {
          PATH: process.env.PATH ?? "",
          TOLLGATE_SERVICE_URL: s.t.url,
          TOLLGATE_UPSTREAMS: JSON.stringify(upstreams),
          TOLLGATE_CREDENTIALS_DIR: credentialsDir,
        },
      },
    );
    const printed = JSON.parse(stdout);
    expect(printed.credentialsDir).toBe(credentialsDir);
    expect(printed.upstreams.map((u: { credentials?: unknown }) => u.credentials)).toEqual([
      { type: "bearer", secretName: "pay-credentials", key: "token" },
      { type: "headers", secretName: "keyed-credentials" },
    ]);
    agentErrors.push(stdout); // checked with the rest below
  });

  it("the values never reach the logs, /metrics or the agent's errors", async () => {
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(metrics).toContain("tollgate_sidecar_upstream");
    const everything = [logs.text(), metrics, ...agentErrors].join("\n");
    expect(logs.text()).toContain("upstream not reachable yet"); // the capture works: nosecret at start
    for (const v of [...values.bearer, ...values.key, ...mcpTokens]) expect(everything).not.toContain(v);
  });
});

describe("oauth2_client_credentials against a real authorization server (oidc-provider)", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "tg-oauth-"));
  const credentialsDir = path.join(root, "credentials");
  const AUDIENCE = "https://payments.tools.example";
  const TOKEN_TTL_SECONDS = 4;
  const clientSecrets = { payments: secret("cs-pay"), discovery: secret("cs-disc") };
  /** Token requests granted, by client id. */
  const granted: Record<string, number> = {};
  const logs = logCapture();
  let idp: http.Server;
  let issuer: string;
  let tool: Awaited<ReturnType<typeof startGuardedTool>>;
  /** A token endpoint that accepts the request and never answers. */
  let hanging: Awaited<ReturnType<typeof startHangingServer>>;
  let s: Stack;
  /** Every access token the tool accepted. */
  const accepted = new Set<string>();
  /** Tokens the tool no longer accepts (as if revoked at the authorization server). */
  const revoked = new Set<string>();
  /** The scope, audience and resource parameters of every token request. */
  const asked: { scope?: string; audience?: string; resource?: string }[] = [];
  type KoaToken = { path: string; oidc?: { body?: Record<string, string | undefined> } };

  const calls = (p: string) => tool.seen.filter((c) => c.path === p);
  credentialValues.push(...Object.values(clientSecrets));

  beforeAll(async () => {
    const { default: Provider } = await import("oidc-provider");
    const { privateKey } = await generateKeyPair("RS256", { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: "k1", alg: "RS256", use: "sig" };
    idp = await new Promise<http.Server>((resolve) => {
      const srv = http.createServer();
      srv.listen(0, "127.0.0.1", () => resolve(srv));
    });
    issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
    const client = (id: string, secretValue: string, method: string) => ({
      client_id: id,
      client_secret: secretValue,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: method,
      scope: "payments:write",
    });
    const configuration = {
      clients: [
        client("payments-sidecar", clientSecrets.payments, "client_secret_basic"),
        client("discovery-sidecar", clientSecrets.discovery, "client_secret_post"),
      ],
      jwks: { keys: [jwk] },
      scopes: ["payments:write"],
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        resourceIndicators: {
          enabled: true,
          // oidc-provider knows RFC 8707 `resource`, not `audience` (Auth0, Okta): a request
          // without `resource` gets the payments audience; what was sent is recorded below.
          defaultResource: async () => AUDIENCE,
          getResourceServerInfo: async (_ctx: unknown, resource: string) => {
            if (resource !== AUDIENCE) throw new Error(`unknown resource ${resource}`);
            return {
              scope: "payments:write",
              audience: AUDIENCE,
              accessTokenTTL: TOKEN_TTL_SECONDS,
              accessTokenFormat: "jwt",
              jwt: { sign: { alg: "RS256" } },
            };
          },
        },
      },
    };
    const provider = new Provider(issuer, configuration as unknown as Configuration);
    (
      provider as unknown as {
        on(e: string, f: (ctx: { oidc: { client?: { clientId: string } } }) => void): void;
      }
    ).on("grant.success", (ctx) => {
      const id = ctx.oidc.client?.clientId ?? "?";
      granted[id] = (granted[id] ?? 0) + 1;
    });
    // What each token request asked for (the body as the provider parsed it; no secrets kept).
    (
      provider as unknown as { use(f: (ctx: KoaToken, next: () => Promise<void>) => Promise<void>): void }
    ).use(async (ctx, next) => {
      await next();
      const b = ctx.oidc?.body;
      if (ctx.path === "/token" && b)
        asked.push({ scope: b.scope, audience: b.audience, resource: b.resource });
    });
    idp.on("request", provider.callback());

    // The tool accepts only a valid JWT from this issuer for its audience with its scope.
    const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
    tool = await startGuardedTool(async (h) => {
      const token = /^Bearer (.+)$/.exec(h.authorization ?? "")?.[1];
      if (!token || revoked.has(token)) return false;
      try {
        const { payload } = await jwtVerify(token, jwks, { issuer, audience: AUDIENCE });
        if (!String(payload.scope).split(" ").includes("payments:write")) return false;
        accepted.add(token);
        return true;
      } catch {
        return false;
      }
    });

    writeSecret(path.join(credentialsDir, "oauth-pay"), {
      client_id: "payments-sidecar",
      client_secret: clientSecrets.payments,
    });
    writeSecret(path.join(credentialsDir, "oauth-disc"), {
      client_id: "discovery-sidecar",
      client_secret: clientSecrets.discovery,
    });
    writeSecret(path.join(credentialsDir, "oauth-slow"), {
      client_id: "payments-sidecar",
      client_secret: clientSecrets.payments,
    });
    hanging = await startHangingServer();
    writeSecret(path.join(credentialsDir, "oauth-wrong"), {
      client_id: "payments-sidecar",
      client_secret: "not-the-secret",
    });
    const oauth = (secretName: string, extra: Record<string, unknown>) => ({
      type: "oauth2_client_credentials" as const,
      secretName,
      scope: "payments:write",
      ...extra,
    });
    s = await startStack({
      slug: "oauth-org",
      log: logs.log,
      config: { credentialsDir },
      upstreams: [
        {
          name: "oauth-pay",
          type: "http",
          url: `${tool.url}/pay`,
          credentials: oauth("payments-oauth", { tokenUrl: `${issuer}/token`, resource: AUDIENCE }),
        },
        {
          name: "oauth-disc",
          type: "http",
          url: `${tool.url}/disc`,
          credentials: oauth("discovery-oauth", {
            issuer,
            authMethod: "client_secret_post",
            audience: AUDIENCE,
          }),
        },
        {
          name: "oauth-slow",
          type: "http",
          url: `${tool.url}/slow`,
          timeout_ms: 1000,
          credentials: oauth("payments-oauth", { tokenUrl: `${hanging.url}/token` }),
        },
        {
          name: "oauth-wrong",
          type: "http",
          url: `${tool.url}/wrong`,
          credentials: oauth("wrong-oauth", { tokenUrl: `${issuer}/token` }),
        },
      ],
    });
  });
  afterAll(async () => {
    await s?.close();
    await tool?.close();
    await hanging?.close();
    idp?.closeAllConnections();
    await new Promise((r) => idp?.close(r));
    rmSync(root, { recursive: true, force: true });
  });

  it("one token, fetched at start and reused across calls; the tool accepts it", async () => {
    expect(granted["payments-sidecar"]).toBe(1); // HttpUpstream.start() warmed the cache
    const chainId = await s.openChain();
    for (let i = 0; i < 5; i++) {
      const r = await s.invoke({
        chain_id: chainId,
        action_name: "read_file",
        payload: { i },
        upstream: "oauth-pay",
      });
      expect(r.upstream_status).toBe(200);
    }
    expect(granted["payments-sidecar"]).toBe(1);
    expect(new Set(calls("/pay").map((c) => c.headers.authorization)).size).toBe(1);
    // Both OAuth upstreams fetch at start, concurrently: find this one's request, not the first.
    expect(asked).toContainEqual({ scope: "payments:write", resource: AUDIENCE, audience: undefined });
  });

  it("after expiry, concurrent calls share one token request", async () => {
    await sleep(TOKEN_TTL_SECONDS * 1000);
    const chainId = await s.openChain();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        s.invoke({ chain_id: chainId, action_name: "read_file", payload: { i }, upstream: "oauth-pay" }),
      ),
    );
    expect(results.map((r) => r.upstream_status)).toEqual(Array(8).fill(200));
    expect(granted["payments-sidecar"]).toBe(2);
    expect(
      new Set(
        calls("/pay")
          .slice(-8)
          .map((c) => c.headers.authorization),
      ).size,
    ).toBe(1);
  });

  it("steady calls across token lifetimes: never an expired token, about one request per lifetime", async () => {
    const before = granted["payments-sidecar"]!;
    const chainId = await s.openChain();
    const started = Date.now();
    const seenBefore = calls("/pay").length;
    while (Date.now() - started < 2 * TOKEN_TTL_SECONDS * 1000) {
      const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" });
      expect(r.upstream_status).toBe(200); // the tool checks exp: a stale token would be a 401
      await sleep(100);
    }
    const made = granted["payments-sidecar"]! - before;
    expect(made).toBeGreaterThanOrEqual(2);
    expect(made).toBeLessThanOrEqual(4);
    expect(calls("/pay").length - seenBefore).toBeGreaterThan(10);
  });

  it("the tool refuses the token (401): a tool error for that call, a new token for the next", async () => {
    const chainId = await s.openChain();
    const first = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" });
    expect(first.upstream_status).toBe(200);
    const used = calls("/pay").at(-1)!.headers.authorization!.slice("Bearer ".length);
    revoked.add(used);
    const before = granted["payments-sidecar"]!;
    const refused = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" });
    expect(refused).toMatchObject({ forwarded: true, upstream_error: true, upstream_status: 401 });
    const again = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" });
    expect(again.upstream_status).toBe(200);
    expect(granted["payments-sidecar"]).toBe(before + 1);
    expect(calls("/pay").at(-1)!.headers.authorization).not.toBe(`Bearer ${used}`);
  });

  it("issuer discovery and client_secret_post work the same way", async () => {
    const chainId = await s.openChain();
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-disc" });
    expect(r.upstream_status).toBe(200);
    // At start, and again now when the first token has expired (the tests before outlast its lifetime).
    expect(granted["discovery-sidecar"]).toBeGreaterThanOrEqual(1);
    expect(granted["discovery-sidecar"]).toBeLessThanOrEqual(2);
    expect(asked).toContainEqual({ scope: "payments:write", audience: AUDIENCE, resource: undefined });
  });

  it("the provider refuses the client: UNAVAILABLE with the OAuth error, nothing forwarded", async () => {
    const chainId = await s.openChain();
    const err = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-wrong" }),
    );
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toBe(
      `upstream oauth-wrong: credential unavailable (Secret wrong-oauth): token request to ${issuer}/token failed: refused: invalid_client (HTTP 401)`,
    );
    expect(calls("/wrong")).toHaveLength(0);
    agentErrors.push(JSON.stringify(err));
  });

  it("a token endpoint that never answers: the call fails after the upstream's timeout, nothing forwarded", async () => {
    const chainId = await s.openChain();
    const seenBefore = hanging.seen.length;
    const err = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-slow" }),
    );
    // The token request was sent and then given up by the sidecar (its timeout), not refused at once.
    await vi.waitFor(
      () => expect(hanging.seen.slice(seenBefore)).toEqual(["POST /token", "closed by the client"]),
      { timeout: 10_000 },
    );
    expect(err.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toBe(
      `upstream oauth-slow: credential unavailable (Secret payments-oauth): token request to ${hanging.url}/token failed: no answer in time`,
    );
    expect(calls("/slow")).toHaveLength(0);
  });

  it("a rotated client secret drops the cached token: a wrong one fails at once, the right one works again", async () => {
    const chainId = await s.openChain();
    const dir = path.join(credentialsDir, "oauth-pay");
    writeSecret(dir, { client_id: "payments-sidecar", client_secret: "rotated-wrong" });
    const err = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" }),
    );
    expect(err.details).toContain("refused: invalid_client");
    writeSecret(dir, { client_id: "payments-sidecar", client_secret: clientSecrets.payments });
    const before = granted["payments-sidecar"]!;
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" });
    expect(r.upstream_status).toBe(200);
    expect(granted["payments-sidecar"]).toBe(before + 1);
  });

  it("the provider down: once the token expired the call fails clearly and the tool sees nothing", async () => {
    idp.closeAllConnections();
    await new Promise((r) => idp.close(r));
    await sleep(TOKEN_TTL_SECONDS * 1000);
    const seen = calls("/pay").length;
    const chainId = await s.openChain();
    const err = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "oauth-pay" }),
    );
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toBe(
      `upstream oauth-pay: credential unavailable (Secret payments-oauth): token request to ${issuer}/token failed: ECONNREFUSED`,
    );
    expect(calls("/pay").length).toBe(seen);
    agentErrors.push(JSON.stringify(err));
  });

  it("client secrets and access tokens never reach the logs, /metrics or the agent's errors", async () => {
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    const everything = [logs.text(), metrics, ...agentErrors].join("\n");
    expect(logs.text()).toContain("access token obtained"); // the capture works (debug lines)
    expect(accepted.size).toBeGreaterThanOrEqual(4);
    for (const v of [...Object.values(clientSecrets), ...accepted]) expect(everything).not.toContain(v);
    // A JWT's signature part alone is secret enough to look for too.
    for (const t of accepted) expect(everything).not.toContain(t.split(".")[2]!);
    credentialValues.push(...accepted);
  });
});

describe("token_exchange (RFC 8693) against oidc-provider with a token exchange grant", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "tg-tokex-"));
  const credentialsDir = path.join(root, "credentials");
  const tokenFile = path.join(root, "serviceaccount", "token");
  const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
  const JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt";
  const LEDGER = "https://ledger.tools.example";
  /** The Kubernetes API server's issuer and the projected token's audience (the sidecar's). */
  const K8S_ISSUER = "https://kubernetes.default.svc.cluster.local";
  const SA_AUDIENCE = "tollgate";
  const clientSecret = secret("cs-tx");
  const logs = logCapture();
  /** Every exchange the provider granted: the subject token's jti and the audience asked for. */
  const exchanges: { jti: string; audience?: string; subjectTokenType?: string }[] = [];
  /** Every access token the tool accepted. */
  const accepted = new Set<string>();
  /** Every subject token written to the token file. */
  const subjectTokens: string[] = [];
  let saKey: CryptoKey;
  let saPublic: CryptoKey;
  let idp: http.Server;
  let issuer: string;
  let tool: Awaited<ReturnType<typeof startGuardedTool>>;
  let s: Stack;
  credentialValues.push(clientSecret);

  /** A service account token as the kubelet projects it, signed by `key`, written atomically. */
  async function writeServiceToken(key: CryptoKey = saKey, audience = SA_AUDIENCE): Promise<string> {
    const jwt = await new SignJWT({ kubernetes: { namespace: "agents" } })
      .setProtectedHeader({ alg: "RS256", kid: "sa" })
      .setIssuer(K8S_ISSUER)
      .setSubject("system:serviceaccount:agents:payments-agent")
      .setAudience(audience)
      .setJti(randomBytes(8).toString("hex"))
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(key);
    mkdirSync(path.dirname(tokenFile), { recursive: true });
    writeFileSync(`${tokenFile}.tmp`, jwt);
    renameSync(`${tokenFile}.tmp`, tokenFile);
    subjectTokens.push(jwt);
    return jwt;
  }
  const calls = () => tool.seen.filter((c) => c.path === "/ledger");

  beforeAll(async () => {
    const oidcProvider = await import("oidc-provider");
    const Provider = oidcProvider.default;
    // The OAuth errors oidc-provider answers with (its module has no types for them).
    type OAuthErrorClass = new (description: string) => Error;
    const { errors } = oidcProvider as unknown as { errors: Record<string, OAuthErrorClass> };
    ({ privateKey: saKey, publicKey: saPublic } = await generateKeyPair("RS256"));
    await writeServiceToken();
    const { privateKey } = await generateKeyPair("RS256", { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: "k1", alg: "RS256", use: "sig" };
    idp = await new Promise<http.Server>((resolve) => {
      const srv = http.createServer();
      srv.listen(0, "127.0.0.1", () => resolve(srv));
    });
    issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
    const ledgerServer = {
      scope: "ledger:read",
      audience: LEDGER,
      accessTokenTTL: 300,
      accessTokenFormat: "jwt",
      jwt: { sign: { alg: "RS256" } },
    };
    const configuration = {
      clients: [
        {
          client_id: "ledger-exchanger",
          client_secret: clientSecret,
          grant_types: [TOKEN_EXCHANGE],
          response_types: [],
          redirect_uris: [],
          token_endpoint_auth_method: "client_secret_basic",
          scope: "ledger:read",
        },
      ],
      jwks: { keys: [jwk] },
      scopes: ["ledger:read"],
      features: { devInteractions: { enabled: false } },
    };
    const provider = new Provider(issuer, configuration as unknown as Configuration);
    type GrantCtx = {
      oidc: {
        client: unknown;
        params: Record<string, string | undefined>;
        entity(n: string, t: unknown): void;
      };
      body: unknown;
    };
    type Token = { resourceServer: unknown; expiration: number; save(): Promise<string> };
    const p = provider as unknown as {
      ClientCredentials: new (o: { client: unknown; scope?: string }) => Token;
      ResourceServer: new (id: string, info: typeof ledgerServer) => unknown;
      registerGrantType(name: string, h: (ctx: GrantCtx) => Promise<void>, params: string[]): void;
    };
    // The exchange, as the built-in client_credentials grant issues its token (a real
    // ClientCredentials token of the provider), after checking the subject token: a JWT of the
    // cluster's issuer, signed by its key, for the sidecar's audience.
    p.registerGrantType(
      TOKEN_EXCHANGE,
      async (ctx) => {
        const { params, client } = ctx.oidc;
        if (params.subject_token_type !== JWT_TYPE)
          throw new errors.InvalidRequest!("unsupported subject_token_type");
        let jti: string;
        try {
          const { payload } = await jwtVerify(params.subject_token ?? "", saPublic, {
            issuer: K8S_ISSUER,
            audience: SA_AUDIENCE,
          });
          jti = String(payload.jti);
        } catch {
          throw new errors.InvalidGrant!("subject token invalid");
        }
        if (params.audience !== LEDGER) throw new errors.InvalidTarget!("unknown audience");
        const token = new p.ClientCredentials({ client, scope: params.scope });
        token.resourceServer = new p.ResourceServer(LEDGER, ledgerServer);
        ctx.oidc.entity("ClientCredentials", token);
        const value = await token.save();
        exchanges.push({ jti, audience: params.audience, subjectTokenType: params.subject_token_type });
        ctx.body = {
          access_token: value,
          issued_token_type: "urn:ietf:params:oauth:token-type:access_token",
          token_type: "Bearer",
          expires_in: token.expiration,
          scope: params.scope,
        };
      },
      ["subject_token", "subject_token_type", "requested_token_type", "audience", "scope", "resource"],
    );
    idp.on("request", provider.callback());

    // The tool accepts only a JWT of this issuer for the ledger audience.
    const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
    tool = await startGuardedTool(async (h) => {
      const token = /^Bearer (.+)$/.exec(h.authorization ?? "")?.[1];
      if (!token) return false;
      try {
        await jwtVerify(token, jwks, { issuer, audience: LEDGER });
        accepted.add(token);
        return true;
      } catch {
        return false;
      }
    });
    writeSecret(path.join(credentialsDir, "ledger"), {
      client_id: "ledger-exchanger",
      client_secret: clientSecret,
    });
    // The harness authenticates the sidecar with an API key; the token file is the one a pod's
    // sidecar authenticates with, here read only by the exchange.
    s = await startStack({
      slug: "tokex-org",
      log: logs.log,
      config: { credentialsDir, serviceTokenFile: tokenFile },
      upstreams: [
        {
          name: "ledger",
          type: "http",
          url: `${tool.url}/ledger`,
          credentials: {
            type: "token_exchange",
            secretName: "ledger-exchange",
            issuer,
            audience: LEDGER,
            scope: "ledger:read",
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await s?.close();
    await tool?.close();
    idp?.closeAllConnections();
    await new Promise((r) => idp?.close(r));
    rmSync(root, { recursive: true, force: true });
    credentialValues.push(...accepted, ...subjectTokens);
  });

  it("one exchange of the service account token, reused across calls; the tool accepts the token", async () => {
    expect(exchanges).toHaveLength(1); // HttpUpstream.start() warmed the cache
    expect(exchanges[0]).toMatchObject({ audience: LEDGER, subjectTokenType: JWT_TYPE });
    const chainId = await s.openChain();
    for (let i = 0; i < 4; i++) {
      const r = await s.invoke({
        chain_id: chainId,
        action_name: "read_file",
        payload: { i },
        upstream: "ledger",
      });
      expect(r.upstream_status).toBe(200);
    }
    expect(exchanges).toHaveLength(1);
    expect(new Set(calls().map((c) => c.headers.authorization)).size).toBe(1);
    expect(accepted.size).toBe(1);
  });

  it("a rotated service account token (file rewritten): the next call exchanges the new one", async () => {
    const first = calls().at(-1)!.headers.authorization;
    await writeServiceToken();
    const newJti = JSON.parse(Buffer.from(subjectTokens.at(-1)!.split(".")[1]!, "base64url").toString()).jti;
    const chainId = await s.openChain();
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "ledger" });
    expect(r.upstream_status).toBe(200);
    expect(exchanges).toHaveLength(2);
    expect(exchanges[1]!.jti).toBe(newJti);
    expect(calls().at(-1)!.headers.authorization).not.toBe(first);
    const r2 = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "ledger" });
    expect(r2.upstream_status).toBe(200);
    expect(exchanges).toHaveLength(2);
  });

  it("a subject token the provider refuses: UNAVAILABLE with invalid_grant, nothing forwarded", async () => {
    const { privateKey: otherKey } = await generateKeyPair("RS256");
    await writeServiceToken(otherKey); // not signed by the cluster's key
    const seen = calls().length;
    const chainId = await s.openChain();
    const err = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "ledger" }),
    );
    expect(err.code).toBe(status.UNAVAILABLE);
    expect(err.errorCode).toBe("UPSTREAM_UNAVAILABLE");
    expect(err.details).toBe(
      `upstream ledger: credential unavailable (Secret ledger-exchange): token request to ${issuer}/token failed: refused: invalid_grant (HTTP 400)`,
    );
    expect(calls().length).toBe(seen);
    agentErrors.push(JSON.stringify(err));
    // A token for another audience is refused the same way; the right one works again.
    await writeServiceToken(saKey, "kubernetes");
    const err2 = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "ledger" }),
    );
    expect(err2.details).toContain("refused: invalid_grant (HTTP 400)");
    expect(calls().length).toBe(seen);
    await writeServiceToken();
    const r = await s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "ledger" });
    expect(r.upstream_status).toBe(200);
  });

  it("configuration without a service token file is refused, naming TOLLGATE_SERVICE_TOKEN_FILE", () => {
    const input = {
      serviceUrl: "http://127.0.0.1:1",
      upstreams: [
        {
          name: "ledger",
          type: "http",
          url: "http://127.0.0.1:2/ledger",
          credentials: { type: "token_exchange", secretName: "ledger-exchange", tokenUrl: `${issuer}/token` },
        },
      ],
    };
    let err: unknown;
    try {
      parseConfig(input);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(
      "token_exchange (upstream ledger) exchanges the pod's service account token: set TOLLGATE_SERVICE_TOKEN_FILE",
    );
    expect(() => parseConfig({ ...input, serviceTokenFile: tokenFile })).not.toThrow();
  });

  it("subject tokens, client secret and access tokens never reach the logs, /metrics or the agent's errors", async () => {
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    const everything = [logs.text(), metrics, ...agentErrors].join("\n");
    expect(logs.text()).toContain("access token obtained");
    for (const v of [clientSecret, ...accepted, ...subjectTokens]) expect(everything).not.toContain(v);
    for (const t of [...accepted, ...subjectTokens]) expect(everything).not.toContain(t.split(".")[2]!);
  });
});

describe("traces", () => {
  const UPSTREAM_ATTR = Attr.upstream;
  it("no credential reaches a span's name, attributes, events or status (spans were exported)", async () => {
    await tracing.forceFlush();
    expect(exported.spans.length).toBeGreaterThan(0);
    // The credentialed forwards were traced (bearer, headers, mcp, oauth, token exchange, and
    // failed credentials): the capture sees what the check is about.
    const forwarded = new Set(
      exported.spans
        .filter((sp) => sp.name === "tollgate.forward")
        .map((sp) => sp.attributes?.find((a) => a.key === UPSTREAM_ATTR)?.value.stringValue),
    );
    for (const u of ["pay", "keyed", "crm", "nosecret", "oauth-pay", "oauth-disc", "oauth-wrong", "ledger"])
      expect(forwarded).toContain(u);
    expect(credentialValues.length).toBeGreaterThan(10);
    const texts = exported.spans.map((sp) =>
      JSON.stringify([sp.name, sp.attributes ?? [], sp.events ?? [], sp.status?.message ?? ""]),
    );
    const leaks = credentialValues.filter(
      (v) => texts.some((t) => t.includes(v)) || exported.bodies.some((b) => b.includes(v)),
    );
    expect(leaks).toEqual([]);
    // A JWT's signature part alone is looked for too.
    const signatures = credentialValues.filter((v) => v.split(".").length === 3).map((v) => v.split(".")[2]!);
    expect(signatures.length).toBeGreaterThan(0);
    expect(signatures.filter((sig) => exported.bodies.some((b) => b.includes(sig)))).toEqual([]);
  });
});
