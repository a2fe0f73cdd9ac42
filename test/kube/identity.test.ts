/**
 * Verified workload identity against a real kube-apiserver (issue 27): pods' projected service
 * account tokens (TokenRequest bound to a pod, audience tollgate) are reviewed by the service
 * (TokenReview), mapped to the organization of the namespace's label, recorded on chains and
 * events, hashed into the receipt and reported by v2 verification; wrong audience, unbound
 * tokens, ungoverned namespaces and tokens of deleted pods are refused; a CEL rule on
 * identity.serviceAccount decides by the verified service account; API keys can be turned off.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Io, main } from "../../src/cli/main.js";
import {
  type KubeIdentityApi,
  kubeApiServer,
  WorkloadAuthenticator,
} from "../../src/service/identity/token-review.js";
import { startTestService, type TestService } from "../support/service.js";
import { type KubeEnv, startKubeEnv } from "./helpers.js";

const NS = "acme-agents";
const ORG = "acme";

let env: KubeEnv;
let svc: TestService;
let reviews = 0;
let clientKey: string;
let adminKey: string;

/** A pod of `sa` in `ns` (it never runs: no kubelet) and a token bound to it. */
async function podToken(
  name: string,
  sa: string,
  opts: { audience?: string; bound?: boolean; ns?: string } = {},
): Promise<string> {
  const ns = opts.ns ?? NS;
  await env.apply({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns },
    spec: { serviceAccountName: sa, containers: [{ name: "agent", image: "agent:test" }] },
  });
  const args = [
    "create",
    "token",
    sa,
    "-n",
    ns,
    "--audience",
    opts.audience ?? "tollgate",
    "--duration",
    "10m",
  ];
  if (opts.bound !== false) args.push("--bound-object-kind", "Pod", "--bound-object-name", name);
  return (await env.k(args)).trim();
}

const record = (token: string, chainId: string, agent = "payer", action = "pay_invoice") =>
  svc.call("POST", `/v1/chains/${chainId}/actions`, {
    token,
    body: { agent_name: agent, action_type: "tool_call", action_name: action, payload: { amount_usd: 10 } },
  });

beforeAll(async () => {
  env = await startKubeEnv();
  const api = await kubeApiServer(env.cp.kubeconfigPath);
  // The real API server, counted: how many TokenReviews the service sends.
  const counted: KubeIdentityApi = {
    reviewToken: (token, audiences) => {
      reviews++;
      return api.reviewToken(token, audiences);
    },
    namespaceLabels: (name) => api.namespaceLabels(name),
  };
  svc = await startTestService({
    workloads: new WorkloadAuthenticator({ api: counted, trustDomain: "example.org", cacheSeconds: 10 }),
  });
  ({ clientKey, adminKey } = await svc.bootstrapOrg(ORG));
  await env.apply(
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: NS, labels: { "tollgate.dev/organization": ORG } },
    },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "elsewhere" } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "invoice-agent", namespace: NS } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "mailer", namespace: NS } },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "stray", namespace: "elsewhere" } },
  );
}, 180_000);

afterAll(async () => {
  await svc?.close();
  await env?.stop();
});

async function openChain(token: string): Promise<string> {
  const r = await svc.call("POST", "/v1/chains", { token, body: { name: "pay-run" } });
  expect(r.statusCode, r.body).toBe(201);
  return r.json().chain_id;
}

describe("workload identity (TokenReview against a real kube-apiserver)", () => {
  it("records the verified principal of each service account on the chain, its events, the receipt and v2 verification", async () => {
    const payer = await podToken("payer-1", "invoice-agent");
    const mailer = await podToken("mailer-1", "mailer");
    const chainId = await openChain(payer);
    expect((await record(payer, chainId, "cfo-agent")).statusCode).toBe(200);
    expect((await record(mailer, chainId, "cfo-agent", "send_email")).statusCode).toBe(200);

    const chain = (await svc.call("GET", `/v1/chains/${chainId}`, { token: payer })).json();
    const payerId = {
      namespace: NS,
      service_account: "invoice-agent",
      pod_name: "payer-1",
      pod_uid: (await env.get("pod", "payer-1", NS)).metadata.uid,
      spiffe_id: `spiffe://example.org/ns/${NS}/sa/invoice-agent`,
    };
    expect(chain.principal).toEqual(payerId);
    // agent_name stays the caller's label; the principal is who the service verified.
    expect(chain.events.map((e: any) => [e.agent_name, e.principal?.service_account])).toEqual([
      ["cfo-agent", "invoice-agent"],
      ["cfo-agent", "mailer"],
    ]);

    const done = await svc.call("POST", `/v1/chains/${chainId}/complete`, { token: payer });
    expect(done.statusCode, done.body).toBe(200);
    const receiptId = done.json().receipt_id;
    const receipt = (await svc.call("GET", `/v1/chains/${chainId}/receipt`, { token: payer })).json();
    expect(receipt.events_summary.map((e: any) => e.principal?.spiffe_id)).toEqual([
      `spiffe://example.org/ns/${NS}/sa/invoice-agent`,
      `spiffe://example.org/ns/${NS}/sa/mailer`,
    ]);
    const v2 = (
      await svc.call("GET", `/v1/verification/v2/receipts/${receiptId}`, { token: adminKey })
    ).json();
    expect(v2.overall_status).toBe("valid");
    expect(v2.events.status).toBe("valid");
    expect(v2.principals.map((p: any) => p.pod_name)).toEqual(["payer-1", "mailer-1"]);
    // The export carries them in each event record; tollgate verify names who acted, offline.
    const exported = (await svc.call("GET", "/v1/receipts/export", { token: adminKey })).json();
    let out = "";
    const io: Io = {
      stdout: (t) => (out += t),
      stderr: (t) => (out += t),
      readStdin: async () => JSON.stringify(exported),
      fetch,
    };
    expect(await main(["verify", "-"], io), out).toBe(0);
    expect(out).toContain(`acted: spiffe://example.org/ns/${NS}/sa/invoice-agent (pod payer-1)`);
    expect(out).toContain(`acted: spiffe://example.org/ns/${NS}/sa/mailer (pod mailer-1)`);
  });

  it("reviews a token once and serves it from memory until the cache period ends", async () => {
    const token = await podToken("payer-cache", "invoice-agent");
    const chainId = await openChain(token);
    const before = reviews;
    for (let i = 0; i < 5; i++) expect((await record(token, chainId)).statusCode).toBe(200);
    expect(reviews).toBe(before);
    svc.clock.advance(11_000);
    expect((await record(token, chainId)).statusCode).toBe(200);
    expect(reviews).toBe(before + 1);
  });

  it("refuses a wrong audience, a token bound to no pod, an ungoverned namespace and a forged token", async () => {
    const wrongAudience = await podToken("payer-aud", "invoice-agent", {
      audience: "https://kubernetes.default.svc",
    });
    let r = await svc.call("POST", "/v1/chains", { token: wrongAudience, body: { name: "x" } });
    expect(r.statusCode).toBe(401);
    expect(r.json().code).toBe("TG_ERR_UNAUTHENTICATED");

    const unbound = (
      await env.k([
        "create",
        "token",
        "invoice-agent",
        "-n",
        NS,
        "--audience",
        "tollgate",
        "--duration",
        "10m",
      ])
    ).trim();
    r = await svc.call("POST", "/v1/chains", { token: unbound, body: { name: "x" } });
    expect(r.statusCode).toBe(401);
    expect(r.json().message).toMatch(/not bound to a pod/);

    const stray = await podToken("stray-1", "stray", { ns: "elsewhere" });
    r = await svc.call("POST", "/v1/chains", { token: stray, body: { name: "x" } });
    expect(r.statusCode).toBe(403);
    expect(r.json().message).toMatch(/not governed/);

    const [h, , sig] = unbound.split(".");
    const forged = `${h}.${Buffer.from(JSON.stringify({ sub: "system:serviceaccount:acme-agents:admin" })).toString("base64url")}.${sig}`;
    r = await svc.call("POST", "/v1/chains", { token: forged, body: { name: "x" } });
    expect(r.statusCode).toBe(401);
    // A refusal never echoes the token.
    expect(r.body).not.toContain(forged.slice(0, 40));
  });

  it("refuses an expired token, even one it remembers", async () => {
    const token = await podToken("payer-old", "invoice-agent");
    const chainId = await openChain(token);
    expect((await record(token, chainId)).statusCode).toBe(200);
    const exp = JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).exp as number;
    const now = svc.clock.nowMs();
    svc.clock.set(exp * 1000);
    try {
      const r = await record(token, chainId);
      expect(r.statusCode).toBe(401);
      expect(r.json().message).toMatch(/expired/);
    } finally {
      svc.clock.set(now);
    }
  });

  it("refuses the token of a deleted pod once the cache period has passed", async () => {
    const token = await podToken("payer-gone", "invoice-agent");
    const chainId = await openChain(token);
    expect((await record(token, chainId)).statusCode).toBe(200);
    await env.k(["delete", "pod", "payer-gone", "-n", NS, "--grace-period=0", "--force", "--wait=true"]);
    // Both caches end: the service's (its clock) and the API server's own 10 s cache of
    // successful token authentications (real time), which also answers TokenReviews.
    svc.clock.advance(11_000);
    await new Promise((r) => setTimeout(r, 11_000));
    const r = await record(token, chainId);
    expect(r.statusCode).toBe(401);
    expect(r.json().message).toMatch(/refused/);
  });

  it("a CEL rule on identity.serviceAccount decides by the verified service account, not the agent name", async () => {
    // The chain's own policy_config carries the rule, so the other tests' chains are unaffected.
    const opened = await svc.call("POST", "/v1/chains", {
      token: clientKey,
      body: {
        name: "cel-identity",
        policy_config: {
          custom_rules: [
            {
              name: "only-invoice-agent-pays",
              match: { action_name: "pay_invoice" },
              expression: `identity.serviceAccount != "${NS}/invoice-agent"`,
              outcome: "deny",
              reason: "Only the invoice-agent workload may pay invoices",
            },
          ],
        },
      },
    });
    expect(opened.statusCode, opened.body).toBe(201);
    const chainId = opened.json().chain_id;
    const payer = await podToken("payer-cel", "invoice-agent");
    const mailer = await podToken("mailer-cel", "mailer");
    // Both claim agent "payer"; only the verified service account differs.
    const paid = await record(payer, chainId);
    expect(paid.statusCode, paid.body).toBe(200);
    expect(paid.json()).toMatchObject({ policy_decision: "allow", policy_name: null });
    const refused = await record(mailer, chainId);
    expect(refused.json()).toMatchObject({
      policy_decision: "deny",
      policy_name: "only-invoice-agent-pays",
      decision_reason: "Only the invoice-agent workload may pay invoices",
    });
    // An API-key caller has no identity: reading identity.serviceAccount fails closed.
    const keyed = (await record(clientKey, chainId)).json();
    expect(keyed).toMatchObject({
      policy_decision: "require_approval",
      policy_name: "only-invoice-agent-pays",
    });
    expect(keyed.decision_reason).toMatch(/could not be evaluated/);
  });

  it("an Organization can turn client API keys off; workload tokens keep working", async () => {
    const first = await svc.call("POST", "/v1/chains", { token: clientKey, body: { name: "k" } });
    expect(first.statusCode, first.body).toBe(201);
    const put = await svc.call("PUT", `/v1/admin/organizations/${ORG}`, {
      token: svc.adminToken,
      body: { api_keys_enabled: false },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().api_keys_enabled).toBe(false);
    const refused = await svc.call("POST", "/v1/chains", { token: clientKey, body: { name: "k" } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().message).toMatch(/turned client API keys off/);
    const token = await podToken("payer-nokeys", "invoice-agent");
    expect((await svc.call("POST", "/v1/chains", { token, body: { name: "k" } })).statusCode).toBe(201);
    await svc.call("PUT", `/v1/admin/organizations/${ORG}`, { token: svc.adminToken, body: {} });
  });
});
