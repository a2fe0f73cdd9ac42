import http from "node:http";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  conditionOf,
  root,
  spawnOperator,
  useOperatorEnv,
  waitFor,
  waitForEvent,
  waitReady,
} from "./helpers.js";

const NS = "acme-agents";

describe("the operator reconciles CRDs into a running governance service", () => {
  const fx = useOperatorEnv({ identity: "operator-a" });

  /** The secret API key in a namespace's tollgate-api-key Secret, with its key id. */
  const namespaceKey = async (ns: string) => {
    const s = await fx.env.get("secret", "tollgate-api-key", ns);
    if (!s?.data?.["api-key"]) return undefined;
    return {
      apiKey: Buffer.from(s.data["api-key"], "base64").toString("utf8"),
      keyId: s.metadata.annotations["tollgate.dev/api-key-id"] as string,
    };
  };
  const activeKeys = async (slug: string, ns: string) => {
    const r = await fx.svc.call("GET", `/v1/admin/organizations/${slug}/api-keys`, {
      token: fx.svc.adminToken,
    });
    expect(r.statusCode, r.body).toBe(200);
    return (r.json().api_keys as Array<{ key_id: string; name: string; revoked_at: string | null }>).filter(
      (k) => k.name === `tollgate-operator/namespace/${ns}` && !k.revoked_at,
    );
  };
  /** Opens a chain over real HTTP with an API key and records one payment of `amount` USD. */
  const pay = async (apiKey: string, amount: number) => {
    const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
    const chain = await fetch(`${fx.svc.url}/v1/chains`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "k8s" }),
    });
    if (chain.status !== 201)
      return { status: chain.status, body: (await chain.json()) as Record<string, unknown> };
    const { chain_id } = (await chain.json()) as { chain_id: string };
    const action = await fetch(`${fx.svc.url}/v1/chains/${chain_id}/actions`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        agent_name: "payments-agent",
        action_type: "tool_call",
        action_name: "pay",
        payload: { amount_usd: amount },
      }),
    });
    return { status: action.status, body: (await action.json()) as Record<string, unknown> };
  };
  const adminOrg = (slug: string) =>
    fx.svc.call("GET", `/v1/admin/organizations/${slug}`, { token: fx.svc.adminToken });

  it("applies the examples and reports Ready with observedGeneration", async () => {
    await fx.env.k(["apply", "-f", path.join(root, "examples")]);
    const org = await waitReady(fx.env, "organization", "acme");
    const pol = await waitReady(fx.env, "governancepolicy", "payments", NS);
    const team = await waitReady(fx.env, "approverteam", "finance", NS);
    expect(org.status).toMatchObject({ observedGeneration: 1, organization: "acme" });
    expect(pol.status).toMatchObject({ organization: "acme", serviceName: "acme-agents.payments" });
    expect(pol.metadata.finalizers).toEqual(["tollgate.dev/finalizer"]);
    expect(team.status.serviceName).toBe("acme-agents.finance");

    const r = await adminOrg("acme");
    expect(r.statusCode, r.body).toBe(200);
    const o = r.json();
    expect(o).toMatchObject({
      display_name: "Acme Corp",
      managed_by: "tollgate-operator/acme",
      evaluation_mode: "enforce",
    });
    // The organization's version also covers its policies and teams, which synced after it.
    expect(org.status.serviceVersion).toMatch(/^[0-9a-f]{16}$/);
    expect(o.policies).toEqual([
      expect.objectContaining({
        name: "acme-agents.payments",
        policy_version: "2024-06-01",
        managed_by: "tollgate-operator/acme-agents/payments",
        version: pol.status.serviceVersion,
      }),
    ]);
    expect(o.approver_teams.map((t: { name: string }) => t.name)).toEqual(["acme-agents.finance"]);
    expect(o.approver_teams[0].fallback_approvers).toEqual(["ceo@acme.example"]);
    expect(o.effective_config.financial_approval_threshold_usd).toBe(5000);
    expect(o.effective_config.custom_rules.map((c: { name: string }) => c.name)).toEqual([
      "no-production-deletes",
      "flag-large-exports",
      "large-invoices",
      "refunds-only-from-invoice-agent",
      "no-email-after-customer-read",
    ]);

    const listed = await fx.env.k(["get", "governancepolicies", "-n", NS]);
    expect(listed).toMatch(/payments\s+acme\s+True\s+True/);
    await waitForEvent(fx.env, { namespace: NS, name: "payments", reason: "Synced", type: "Normal" });
  });

  it("refuses a second Organization claiming the same slug, and deleting it leaves the service alone", async () => {
    await fx.env.apply({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "Organization",
      metadata: { name: "acme-copy" },
      spec: { slug: "acme", killSwitch: { active: true, reason: "should never apply" } },
    });
    const copy = await waitFor("SlugConflict", async () => {
      const o = await fx.env.get("organization", "acme-copy");
      return conditionOf(o, "Synced")?.reason === "SlugConflict" ? o : undefined;
    });
    expect(conditionOf(copy, "Synced")?.message).toBe("slug acme is already managed by Organization acme");
    await fx.env.k(["delete", "organization", "acme-copy", "--wait=true", "--timeout=60s"]);
    const o = (await adminOrg("acme")).json();
    expect(o.kill_switch.active).toBe(false);
    expect(o.policies).toHaveLength(1);
  });

  it("mints one API key into the governed namespace's Secret, and the service accepts it", async () => {
    const key = await waitFor("API key Secret", () => namespaceKey(NS));
    expect(key.apiKey).toMatch(/^tg_/);
    const keys = await activeKeys("acme", NS);
    expect(keys.map((k) => k.key_id)).toEqual([key.keyId]);
    const ns = await fx.env.get("namespace", NS);
    expect(ns.metadata.finalizers).toContain("tollgate.dev/finalizer");
    const r = await pay(key.apiKey, 100);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.policy_decision).toBe("allow");
  });

  it("editing a policy changes the service's decisions", async () => {
    const { apiKey } = (await namespaceKey(NS))!;
    expect((await pay(apiKey, 3000)).body.policy_decision).toBe("allow");
    await fx.env.k([
      "patch",
      "governancepolicy",
      "payments",
      "-n",
      NS,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { thresholds: { financialApprovalUsd: 1000 } } }),
    ]);
    const pol = await waitReady(fx.env, "governancepolicy", "payments", NS);
    expect(pol.status.observedGeneration).toBe(2);
    const after = await pay(apiKey, 3000);
    expect(after.body.policy_decision).toBe("require_approval");
    expect(after.body.policy_name).toBe("financial_approval_threshold");
  });

  it("an active kill switch makes the Organization not Ready and the service deny", async () => {
    const { apiKey } = (await namespaceKey(NS))!;
    await fx.env.k([
      "patch",
      "organization",
      "acme",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { killSwitch: { active: true, reason: "incident 7" } } }),
    ]);
    const org = await waitFor("kill switch reported", async () => {
      const o = await fx.env.get("organization", "acme");
      return conditionOf(o, "Ready")?.reason === "KillSwitchActive" && o.status.observedGeneration === 2
        ? o
        : undefined;
    });
    expect(conditionOf(org, "Ready")).toMatchObject({
      status: "False",
      message: "Kill switch active: incident 7",
    });
    expect(conditionOf(org, "Synced")?.status).toBe("True");
    const denied = await pay(apiKey, 1);
    expect(denied.body).toMatchObject({ policy_decision: "deny", kill_switch_active: true });

    await fx.env.k([
      "patch",
      "organization",
      "acme",
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { killSwitch: { active: false, reason: null } } }),
    ]);
    await waitReady(fx.env, "organization", "acme");
    expect((await pay(apiKey, 1)).body.policy_decision).toBe("allow");
  });

  it("reports a spec the API server cannot check as InvalidSpec, with a Warning event naming the field", async () => {
    await fx.env.apply({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "GovernancePolicy",
      metadata: { name: "odd-payload", namespace: NS },
      spec: {
        organizationRef: { name: "acme" },
        customRules: [{ name: "r", match: { payload: { rows: { between: [1, 2] } } }, outcome: "allow" }],
      },
    });
    const pol = await waitFor("InvalidSpec", async () => {
      const p = await fx.env.get("governancepolicy", "odd-payload", NS);
      return conditionOf(p, "Synced")?.reason === "InvalidSpec" ? p : undefined;
    });
    expect(conditionOf(pol, "Synced")?.message).toContain("spec.customRules[0].match.payload.rows");
    const event = await waitForEvent(fx.env, {
      namespace: NS,
      name: "odd-payload",
      reason: "InvalidSpec",
      type: "Warning",
    });
    expect(event.message).toContain("spec.customRules[0].match.payload.rows");
    const o = (await adminOrg("acme")).json();
    expect(o.policies.map((p: { name: string }) => p.name)).not.toContain("acme-agents.odd-payload");
    await fx.env.k(["delete", "governancepolicy", "odd-payload", "-n", NS, "--wait=true", "--timeout=60s"]);
  });

  it("a resource waits for its Organization and syncs once it exists", async () => {
    await fx.env.apply({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "ApproverTeam",
      metadata: { name: "globex-approvers", namespace: NS },
      spec: { organizationRef: { name: "globex" }, approvers: [{ email: "boss@globex.example" }] },
    });
    await waitFor("OrganizationNotFound", async () => {
      const t = await fx.env.get("approverteam", "globex-approvers", NS);
      return conditionOf(t, "Synced")?.reason === "OrganizationNotFound";
    });
    await fx.env.apply({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "Organization",
      metadata: { name: "globex" },
      spec: { slug: "globex" },
    });
    await waitReady(fx.env, "organization", "globex");
    const team = await waitReady(fx.env, "approverteam", "globex-approvers", NS);
    expect(team.status.organization).toBe("globex");
    expect((await adminOrg("globex")).json().approver_teams[0].name).toBe("acme-agents.globex-approvers");
  });

  it("rotates the namespace API key when annotated, revoking the old one", async () => {
    const before = (await namespaceKey(NS))!;
    await fx.env.k(["annotate", "namespace", NS, "tollgate.dev/rotate-api-key=2024-06-01"]);
    const after = await waitFor("rotated key", async () => {
      const k = await namespaceKey(NS);
      return k && k.keyId !== before.keyId ? k : undefined;
    });
    expect((await activeKeys("acme", NS)).map((k) => k.key_id)).toEqual([after.keyId]);
    expect((await pay(before.apiKey, 1)).status).toBe(401);
    expect((await pay(after.apiKey, 1)).status).toBe(200);
    const secret = await fx.env.get("secret", "tollgate-api-key", NS);
    expect(secret.metadata.annotations["tollgate.dev/rotation"]).toBe("2024-06-01");
  });

  it("deleting resources removes their configuration from the service, then the finalizer", async () => {
    await fx.env.k(["delete", "governancepolicy", "payments", "-n", NS, "--wait=true", "--timeout=60s"]);
    expect(await fx.env.get("governancepolicy", "payments", NS)).toBeUndefined();
    await fx.env.k(["delete", "approverteam", "finance", "-n", NS, "--wait=true", "--timeout=60s"]);
    const o = (await adminOrg("acme")).json();
    expect(o.policies).toEqual([]);
    expect(o.approver_teams).toEqual([]);

    // A namespace that stops being governed loses its key, Secret and finalizer.
    const { apiKey } = (await namespaceKey(NS))!;
    await fx.env.k(["label", "namespace", NS, "tollgate.dev/organization-"]);
    await waitFor(
      "Secret deleted",
      async () => (await fx.env.get("secret", "tollgate-api-key", NS)) === undefined,
    );
    await waitFor("namespace finalizer removed", async () => {
      const ns = await fx.env.get("namespace", NS);
      return !(ns.metadata.finalizers ?? []).includes("tollgate.dev/finalizer");
    });
    expect(await activeKeys("acme", NS)).toEqual([]);
    expect((await pay(apiKey, 1)).status).toBe(401);

    await fx.env.k(["delete", "approverteam", "globex-approvers", "-n", NS, "--wait=true", "--timeout=60s"]);
    await fx.env.k(["delete", "organization", "acme", "globex", "--wait=true", "--timeout=60s"]);
    expect((await adminOrg("acme")).statusCode).toBe(404);
    expect((await adminOrg("globex")).statusCode).toBe(404);
  });

  it("converges after the operator is killed in the middle of minting a key", async () => {
    await fx.op!.stop();
    fx.op = undefined;
    // A proxy in front of the service that forwards the key-minting POST but never answers it:
    // the service mints the key, the operator never learns it and is killed while waiting.
    let minted = 0;
    const held: http.ServerResponse[] = [];
    const proxy = http.createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const upstream = await fetch(`${fx.svc.url}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => ["authorization", "content-type"].includes(k)),
        ) as Record<string, string>,
        body: chunks.length ? Buffer.concat(chunks) : undefined,
      });
      const body = Buffer.from(await upstream.arrayBuffer());
      if (req.method === "POST" && /\/api-keys$/.test(req.url ?? "")) {
        minted++;
        held.push(res);
        return;
      }
      res.writeHead(upstream.status, {
        "content-type": upstream.headers.get("content-type") ?? "application/json",
      });
      res.end(body);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    const child = await spawnOperator(fx.env, {
      serviceUrl: proxyUrl,
      adminTokenFile: fx.adminTokenFile,
      identity: "operator-doomed",
    });
    try {
      await fx.env.apply(
        {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: "initech-agents", labels: { "tollgate.dev/organization": "initech" } },
        },
        {
          apiVersion: "tollgate.dev/v1alpha1",
          kind: "Organization",
          metadata: { name: "initech" },
          spec: { slug: "initech" },
        },
        {
          apiVersion: "tollgate.dev/v1alpha1",
          kind: "GovernancePolicy",
          metadata: { name: "base", namespace: "initech-agents" },
          spec: { organizationRef: { name: "initech" }, highRiskAgents: ["printer-bot"] },
        },
      );
      await waitFor(
        "the key was minted in the service",
        async () => minted > 0 && (await activeKeys("initech", "initech-agents")).length > 0,
        90_000,
      );
      await child.kill();
    } finally {
      await child.kill();
      for (const r of held) r.destroy();
      proxy.closeAllConnections();
      proxy.close();
    }
    expect(await fx.env.get("secret", "tollgate-api-key", "initech-agents")).toBeUndefined();

    fx.op = await fx.startOperator("operator-b");
    await fx.op.whenReconciling();
    await waitReady(fx.env, "organization", "initech");
    await waitReady(fx.env, "governancepolicy", "base", "initech-agents");
    const key = await waitFor("API key Secret after restart", () => namespaceKey("initech-agents"));
    const active = await waitFor("exactly one active key", async () => {
      const a = await activeKeys("initech", "initech-agents");
      return a.length === 1 ? a : undefined;
    });
    expect(active[0]!.key_id).toBe(key.keyId);
    expect((await pay(key.apiKey, 1)).status).toBe(200);
    const effective = (await adminOrg("initech")).json().effective_config;
    expect(effective.high_risk_agents).toEqual(["printer-bot"]);
  });
});
