/**
 * The recording hot path (docs/adr/0006): one database round trip per action in steady state,
 * and every remembered state re-checked by the write itself — another writer, a revoked API
 * key, a flipped kill switch or a new policy are honoured on the very next action.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

describe("recording hot path", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let queries = 0;

  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("hot");
    const db = t.service.ctx.db;
    const query = db.query.bind(db);
    db.query = ((text: string, values?: unknown[]) => {
      queries++;
      return query(text, values);
    }) as typeof db.query;
  });
  afterAll(async () => t?.close());
  beforeEach(() => {
    queries = 0;
  });

  const newChain = async (key = org.clientKey): Promise<string> => {
    const r = await t.call("POST", "/v1/chains", { token: key, body: { name: "hot" } });
    expect(r.statusCode, r.body).toBe(201);
    return r.json().chain_id;
  };
  const act = (chainId: string, key = org.clientKey, payload: Record<string, unknown> = { path: "/a" }) =>
    t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: key,
      body: { agent_name: "agent", action_type: "tool_call", action_name: "read_file", payload },
    });
  const events = async (chainId: string) =>
    (
      await t.service.ctx.db.query(
        "SELECT sequence FROM chain_events WHERE chain_id = $1 ORDER BY sequence",
        [chainId],
      )
    ).rows.map((r) => r.sequence);

  it("records each action of a warm chain with one statement", async () => {
    const chainId = await newChain();
    expect((await act(chainId)).statusCode).toBe(200); // cold: key lookup, read, write
    queries = 0;
    for (let i = 0; i < 5; i++) {
      const r = await act(chainId);
      expect(r.statusCode, r.body).toBe(200);
      expect(r.json().sequence).toBe(i + 2);
    }
    expect(queries).toBe(5);
    expect(await events(chainId)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("re-reads the chain when another writer changed it and keeps the sequence contiguous", async () => {
    const chainId = await newChain();
    await act(chainId);
    // Another replica's write: same counters, new row version.
    await t.service.ctx.db.query("UPDATE chains SET event_count = event_count + 1 WHERE id = $1", [chainId]);
    await t.service.ctx.db.query(
      "INSERT INTO chain_events (id, chain_id, org_id, sequence, agent_name, action_type, action_name, payload, category, facts, decision, triggers, recorded_at) SELECT gen_random_uuid(), id, org_id, 2, 'other', 'tool_call', 'x', '{}', 'other', '{}', '{}', '[]', now() FROM chains WHERE id = $1",
      [chainId],
    );
    const r = await act(chainId);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().sequence).toBe(3);
    expect(await events(chainId)).toEqual([1, 2, 3]);
  });

  it("refuses a revoked API key on its next action, although the key was remembered", async () => {
    const key = (
      await t.call("POST", "/v1/admin/organizations/hot/api-keys", {
        token: t.adminToken,
        body: { name: "short-lived", role: "client" },
      })
    ).json();
    const chainId = await newChain(key.api_key);
    expect((await act(chainId, key.api_key)).statusCode).toBe(200);
    // Revoked behind this process's back (another replica): only the guarded write can notice.
    await t.service.ctx.db.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [key.key_id]);
    const r = await act(chainId, key.api_key);
    expect(r.statusCode, r.body).toBe(401);
    expect(r.json().code).toBe("TG_ERR_UNAUTHENTICATED");
    expect(await events(chainId)).toEqual([1]);
    expect((await act(chainId, key.api_key)).statusCode).toBe(401);
  });

  it("honours a kill switch flipped after the chain state was remembered", async () => {
    const chainId = await newChain();
    await act(chainId);
    await t.service.ctx.db.query(
      "UPDATE organizations SET kill_switch_active = true, kill_switch_reason = 'flip' WHERE id = $1",
      [org.orgId],
    );
    try {
      const r = await act(chainId);
      expect(r.json()).toMatchObject({ policy_decision: "deny", kill_switch_active: true, sequence: 2 });
    } finally {
      await t.service.ctx.db.query("UPDATE organizations SET kill_switch_active = false WHERE id = $1", [
        org.orgId,
      ]);
    }
  });

  it("applies a new policy to a warm chain on its next action", async () => {
    const chainId = await newChain();
    expect((await act(chainId)).json().policy_decision).toBe("allow");
    const p = await t.call("PUT", "/v1/admin/organizations/hot/policies/no-reads", {
      token: t.adminToken,
      body: {
        config: {
          custom_rules: [
            { name: "no-reads", match: { action_name: "read_file" }, outcome: "deny", reason: "no" },
          ],
        },
      },
    });
    expect(p.statusCode, p.body).toBeLessThan(300);
    try {
      expect((await act(chainId)).json()).toMatchObject({ policy_decision: "deny", sequence: 2 });
    } finally {
      await t.call("DELETE", "/v1/admin/organizations/hot/policies/no-reads", { token: t.adminToken });
    }
  });

  it("records concurrent actions on one chain without gaps or duplicates", async () => {
    const chainId = await newChain();
    const results = await Promise.all(Array.from({ length: 20 }, () => act(chainId)));
    expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(200));
    expect(results.map((r) => r.json().sequence).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    expect(await events(chainId)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("remembers the chain row exactly as the batch statement wrote it", async () => {
    const r = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: { name: "counters", policy_config: { first_external_communication_requires_approval: false } },
    });
    const chainId = r.json().chain_id;
    const record = async (action_type: string, payload: Record<string, unknown>, agent_name = "agent") => {
      const res = await t.call("POST", `/v1/chains/${chainId}/actions`, {
        token: org.clientKey,
        body: { agent_name, action_type, action_name: "act", payload },
      });
      expect(res.json().policy_decision, res.body).toMatch(/^allow/);
    };
    await record("http_request", { url: "https://api.partner.example/x" });
    await record("payment", { amount_usd: 12.5 });
    await record("llm_call", { model: "m", input_tokens: 1000, output_tokens: 200 });
    await record("email", { to: ["a@b.example", "c@api.partner.example"] }, "mailer");
    await record("db_update", { record_count: 7 });
    const counters = (row: Record<string, unknown>) => ({
      event_count: row.event_count,
      status: row.status,
      total_tokens: row.total_tokens,
      estimated_cost_usd: row.estimated_cost_usd,
      financial_exposure_usd: row.financial_exposure_usd,
      external_communications_count: row.external_communications_count,
      records_modified_count: row.records_modified_count,
      domains_contacted: [...(row.domains_contacted as string[])].sort(),
      external_comm_agents: [...(row.external_comm_agents as string[])].sort(),
    });
    const remembered = t.service.ctx.chainSnapshots.get(chainId, org.orgId);
    const { rows } = await t.service.ctx.db.query(
      "SELECT *, xmin::text AS row_xmin FROM chains WHERE id = $1",
      [chainId],
    );
    const stored = rows[0] as Record<string, unknown>;
    expect(remembered?.xmin).toBe(stored.row_xmin);
    expect(counters(remembered!.row as never)).toEqual(counters(stored));
    expect(counters(stored)).toMatchObject({
      event_count: 5,
      external_communications_count: 2,
      financial_exposure_usd: 12.5,
      records_modified_count: 7,
      total_tokens: 1200,
      domains_contacted: ["api.partner.example", "b.example"],
      external_comm_agents: ["agent", "mailer"],
    });
  });

  it("stores only the facts that are set, and the metrics delta when it is not zero", async () => {
    const chainId = await newChain();
    await act(chainId);
    const paid = await act(chainId, org.clientKey, { amount_usd: 12.5, note: "lunch" });
    expect(paid.json().policy_decision).toBe("allow");
    const { rows } = await t.service.ctx.db.query(
      "SELECT sequence, category, facts FROM chain_events WHERE chain_id = $1 ORDER BY sequence",
      [chainId],
    );
    expect(rows.map((r) => [r.category, r.facts])).toEqual([
      ["default", {}],
      [
        "financial",
        {
          amount_usd: 12.5,
          is_financial: true,
          metrics_delta: {
            financial_exposure_usd: 12.5,
            external_communications: 0,
            records_modified: 0,
            domains: [],
            estimated_cost_usd: 0,
            tokens: 0,
          },
        },
      ],
    ]);
  });

  describe("POST /v1/chains/{chain_id}/actions/evaluate", () => {
    const evaluate = (chainId: string, body: Record<string, unknown>, key = org.clientKey) =>
      t.call("POST", `/v1/chains/${chainId}/actions/evaluate`, { token: key, body });
    const pay = {
      agent_name: "agent",
      action_type: "payment",
      action_name: "pay",
      payload: { amount_usd: 9000 },
    };

    it("answers the decision recording would get, and records nothing", async () => {
      const chainId = await newChain();
      await act(chainId);
      const r = await evaluate(chainId, pay);
      expect(r.statusCode, r.body).toBe(200);
      expect(r.json()).toMatchObject({
        policy_decision: "require_approval",
        chain_id: chainId,
        category: "financial",
        recorded: false,
      });
      expect(await events(chainId)).toEqual([1]);
      const chain = (await t.call("GET", `/v1/chains/${chainId}`, { token: org.adminKey })).json();
      expect(chain).toMatchObject({ status: "open", total_actions: 1 });
      expect((await act(chainId)).json().sequence).toBe(2);
    });

    it("validates like recording and refuses sealed chains", async () => {
      const chainId = await newChain();
      const bad = await evaluate(chainId, { action_type: "tool_call", action_name: "x" });
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toContain("agent_name");
      await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
      const sealed = await evaluate(chainId, pay);
      expect(sealed.statusCode).toBe(409);
      expect(sealed.json().code).toBe("TG_ERR_CHAIN_COMPLETED");
    });
  });
});
