/**
 * Fail closed (issue: "a deny must never turn into an allow"):
 * - input the service cannot store or evaluate (NUL, unpaired surrogates, deep nesting,
 *   non-finite numbers) answers 400 naming the field — the SDK raises a typed error and the
 *   fail modes never apply, so a custom deny rule cannot be talked out of its deny;
 * - fail modes apply only when the backend is unreachable (connection refused or reset, DNS
 *   failure, the request timeout, 502/503/504 from a proxy); every other answer, 500 included,
 *   is a ServiceApiError. One test per class, against real sockets.
 */
import http from "node:http";
import type net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ActionDeniedError,
  BackendUnavailableError,
  Chain,
  createConfig,
  ServiceApiError,
} from "../../src/sdk/index.js";
import { makeTicker, type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
let chain: Chain;

const eventCount = async (chainId: string) => (await env.stored(chainId)).events.length;

beforeAll(async () => {
  env = await startSdkEnv("fail-closed");
  const policy = await env.t.call("PUT", `/v1/admin/organizations/${env.org.slug}/policies/vault`, {
    token: env.t.adminToken,
    body: {
      config: {
        custom_rules: [
          {
            name: "no-secret-store",
            match: { action_name: "read_secret_store" },
            outcome: "deny",
            reason: "The secret store is off limits",
          },
        ],
      },
    },
  });
  expect(policy.statusCode, policy.body).toBeLessThan(300);
  // Fail mode allow for every category: any path into the fail modes would show as an allow.
  chain = await new Chain("fail-closed", {
    config: env.config({
      failModes: { default: "allow", financial: "allow", external_communication: "allow" },
    }),
  }).enter();
});
afterAll(async () => env?.close());

describe("hostile input to a denied action stays denied", () => {
  it("the custom rule denies the action with a clean payload", async () => {
    const err = await chain
      .recordAgentAction({
        agentName: "agent",
        actionType: "tool_call",
        actionName: "read_secret_store",
        payload: { path: "/vault/prod" },
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.policyName).toBe("no-secret-store");
  });

  it.each([
    ["NUL in a payload value", { path: "/vault/prod\u0000" }, "body.payload.path", "U+0000"],
    ["a lone high surrogate", { path: "/vault/\ud800" }, "body.payload.path", "unpaired"],
    ["a lone low surrogate, nested", { a: [{ b: "x\udc00" }] }, "body.payload.a.0.b", "unpaired"],
    ["NUL in a payload key", { "pa\u0000th": "/vault/prod" }, "body.payload.pa\u0000th", "U+0000"],
  ])(
    "%s → ServiceApiError 400 naming the field, no event, never an allow",
    async (_name, payload, field, why) => {
      const before = await eventCount(chain.chainId!);
      const err = await chain
        .recordAgentAction({
          agentName: "agent",
          actionType: "tool_call",
          actionName: "read_secret_store",
          payload,
        })
        .catch((e) => e);
      expect(err).toBeInstanceOf(ServiceApiError);
      expect(err).not.toBeInstanceOf(BackendUnavailableError);
      expect(err.statusCode).toBe(400);
      expect(err.code).toBe("TG_ERR_VALIDATION");
      expect(err.message).toContain(field);
      expect(err.message).toContain(why);
      expect(err.details.issues[0].pointer.startsWith("/payload/")).toBe(true);
      expect(await eventCount(chain.chainId!)).toBe(before);
    },
  );

  it("the SDK's truncation never splits a surrogate pair into an unstorable string", async () => {
    const config = env.config({ maxPayloadStringLength: 5 });
    const c = await new Chain("emoji", { config }).enter();
    // "abcd" + "😀" (two UTF-16 units): a cut at 5 units would leave a lone high surrogate.
    const d = await c.recordAgentAction({
      agentName: "agent",
      actionType: "tool_call",
      actionName: "read_file",
      payload: { text: "abcd😀😀" },
    });
    expect(d.policy_decision).toBe("allow");
    const stored = (await env.stored(c.chainId!)).events[0]!.payload.text as string;
    expect(stored.isWellFormed()).toBe(true);
    expect(stored.startsWith("abcd")).toBe(true);
  });

  it("metadata nested 10,000 levels deep → 400 naming the depth limit, no chain created", async () => {
    // Written as text: JSON.stringify itself would overflow the stack at this depth.
    const metadata = `${'{"m":'.repeat(10_000)}1${"}".repeat(10_000)}`;
    const before = Number(
      (await env.t.service.ctx.db.query("SELECT count(*)::int AS n FROM chains")).rows[0]!.n,
    );
    const r = await env.t.service.app.inject({
      method: "POST",
      url: "/v1/chains",
      headers: { authorization: `Bearer ${env.org.clientKey}`, "content-type": "application/json" },
      payload: `{"name":"deep","metadata":${metadata}}`,
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().message).toMatch(/^body\.metadata(\.m)+: must not be nested more than 32 levels deep$/);
    const after = Number(
      (await env.t.service.ctx.db.query("SELECT count(*)::int AS n FROM chains")).rows[0]!.n,
    );
    expect(after).toBe(before);
  });

  it("a number the service cannot represent (1e400) → 400", async () => {
    const r = await env.t.service.app.inject({
      method: "POST",
      url: `/v1/chains/${chain.chainId}/actions`,
      headers: { authorization: `Bearer ${env.org.clientKey}`, "content-type": "application/json" },
      payload:
        '{"agent_name":"a","action_type":"tool_call","action_name":"pay","payload":{"amount_usd":1e400}}',
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().message).toBe("body.payload.amount_usd: must be a finite number");
  });

  it("a body over the 1 MiB limit → 413, not a 5xx", async () => {
    const r = await env.t.call("POST", `/v1/chains/${chain.chainId}/actions`, {
      token: env.org.clientKey,
      body: {
        agent_name: "a",
        action_type: "tool_call",
        action_name: "x",
        payload: { big: "x".repeat(1_100_000) },
      },
    });
    expect(r.statusCode).toBe(413);
  });

  it("NUL in a query string or path segment → 400, not a 5xx", async () => {
    const q = await env.t.call("GET", "/v1/public-verification-tokens?cursor=%00", {
      token: env.org.adminKey,
    });
    expect(q.statusCode).toBe(400);
    const p = await env.t.call("GET", "/v1/chains/%00", { token: env.org.clientKey });
    expect(p.statusCode).toBe(400);
  });
});

describe("authentication comes before validation", () => {
  it.each([
    ["POST", "/v1/public-verification-tokens", { artifact_type: "receipt", artifact_id: "not-a-uuid" }],
    ["POST", "/v1/chains", { name: 7, metadata: "x" }],
    ["POST", "/v1/chains/not-a-uuid/actions", { agent_name: "\u0000" }],
    ["GET", "/v1/chains/not-a-uuid", undefined],
  ])("%s %s without credentials → 401 whatever the body", async (method, url, body) => {
    const r = await env.t.call(method, url, { body });
    expect(r.statusCode).toBe(401);
    expect(r.json().code).toBe("TG_ERR_UNAUTHENTICATED");
    expect(r.body).not.toMatch(/artifact|uuid|expected/i);
  });
});

/** A real HTTP server standing in for a proxy in front of the service. */
async function serve(handler: http.RequestListener): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A chain entered against the real service whose later requests go to `url` instead. */
async function chainAgainst(url: string, mode: "allow" | "deny", timeoutSeconds = 5): Promise<Chain> {
  let target = env.t.url;
  const config = createConfig(
    env.org.clientKey,
    {
      backendUrl: env.t.url,
      backendTimeoutSeconds: timeoutSeconds,
      failModes: { default: mode, financial: mode, external_communication: mode },
    },
    {
      ...makeTicker(),
      fetch: (input, init) => fetch(String(input).replace(env.t.url, target), init),
    },
  );
  const c = await new Chain("classes", { config }).enter();
  target = url;
  return c;
}

describe("fail modes apply only when the backend is unreachable", () => {
  const answering = (status: number) =>
    serve((_req, res) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ statusCode: status, code: `TG_ERR_TEST_${status}`, message: `answered ${status}` }),
      );
    });

  it.each([400, 401, 403, 404, 409, 500])(
    "HTTP %i → ServiceApiError with the status, even under fail mode allow",
    async (status) => {
      const proxy = await answering(status);
      try {
        const c = await chainAgainst(proxy.url, "allow");
        const err = await c
          .recordAgentAction({ agentName: "agent", actionType: "tool_call", actionName: "read_secret_store" })
          .catch((e) => e);
        expect(err).toBeInstanceOf(ServiceApiError);
        expect(err.statusCode).toBe(status);
        expect(err.code).toBe(`TG_ERR_TEST_${status}`);
      } finally {
        await proxy.close();
      }
    },
  );

  it.each([502, 503, 504])(
    "HTTP %i from a proxy → the fail mode (allow: flagged; deny: BackendUnavailableError)",
    async (status) => {
      const proxy = await serve((_req, res) => {
        res.writeHead(status, { "content-type": "text/html" });
        res.end("<html>bad gateway</html>");
      });
      try {
        const allowed = await (await chainAgainst(proxy.url, "allow")).recordAgentAction({
          agentName: "a",
          actionType: "tool_call",
          actionName: "read_file",
        });
        expect(allowed).toMatchObject({ policy_decision: "allow_with_flag", decision_source: "fail_mode" });
        const err = await (await chainAgainst(proxy.url, "deny"))
          .recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "read_file" })
          .catch((e) => e);
        expect(err).toBeInstanceOf(BackendUnavailableError);
        expect(err.message).toContain(`HTTP ${status}`);
      } finally {
        await proxy.close();
      }
    },
  );

  it("connection refused → the fail mode", async () => {
    const closed = await serve(() => undefined);
    await closed.close();
    const err = await (await chainAgainst(closed.url, "deny"))
      .recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "read_file" })
      .catch((e) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(err.message).toContain("ECONNREFUSED");
  });

  it("connection reset before an answer → the fail mode", async () => {
    const resetting = await serve((req) => req.socket.resetAndDestroy());
    try {
      const err = await (await chainAgainst(resetting.url, "deny"))
        .recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "read_file" })
        .catch((e) => e);
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect(err.message).toMatch(/ECONNRESET|UND_ERR_SOCKET/);
    } finally {
      await resetting.close();
    }
  });

  it("DNS failure → the fail mode", async () => {
    const err = await (await chainAgainst("http://tollgate-test.invalid:8000", "deny"))
      .recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "read_file" })
      .catch((e) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect(err.message).toMatch(/ENOTFOUND|EAI_AGAIN|EAI_NONAME/);
  });

  it("the request timeout → the fail mode", async () => {
    const silent = await serve(() => undefined); // reads the request, never answers
    try {
      const c = await chainAgainst(silent.url, "deny", 0.3);
      const err = await c
        .recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "read_file" })
        .catch((e) => e);
      expect(err).toBeInstanceOf(BackendUnavailableError);
      expect(err.message).toMatch(/no response from the governance service within 0.3 s/);
    } finally {
      await silent.close();
    }
  });
});
