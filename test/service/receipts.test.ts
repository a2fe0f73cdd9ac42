/**
 * Receipts: every field of the spec's table, signature and hash chaining, numbering, and the
 * per-organization lock under 50 concurrent completions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/receipts/canonical.js";
import type { SignedReceipt } from "../../src/receipts/schema.js";
import { receiptHash, verifyHmac } from "../../src/receipts/sign.js";
import { verifyReceiptChain } from "../../src/receipts/verify.js";
import { deriveKey } from "../../src/service/secrets.js";
import { startTestService, type TestService } from "../support/service.js";

describe("receipts", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService({ poolMax: 12 });
    org = await t.bootstrapOrg("receipts");
  });
  afterAll(async () => t?.close());

  const runChain = async (name: string) => {
    const c = (
      await t.call("POST", "/v1/chains", {
        token: org.clientKey,
        body: { name, metadata: { ticket: "T-1" } },
      })
    ).json();
    await t.call("POST", `/v1/chains/${c.chain_id}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "planner",
        action_type: "llm_call",
        action_name: "plan",
        payload: { model: "m", input_tokens: 10 },
      },
    });
    await t.call("POST", `/v1/chains/${c.chain_id}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "worker",
        parent_agent_name: "planner",
        action_type: "tool_call",
        action_name: "update",
        payload: { record_count: 5, amount_usd: 120 },
      },
    });
    return c.chain_id as string;
  };
  const receiptOf = async (chainId: string): Promise<SignedReceipt> =>
    (await t.call("GET", `/v1/chains/${chainId}/receipt`, { token: org.clientKey })).json();

  it("carries every field of the spec, signed and chained", async () => {
    const a = await runChain("first");
    await t.call("POST", `/v1/chains/${a}/complete`, { token: org.clientKey });
    const r1 = await receiptOf(a);
    expect(r1).toMatchObject({
      chain_id: a,
      organization: "receipts",
      agents_involved: ["planner", "worker"],
      total_actions: 2,
      metadata: { ticket: "T-1" },
      previous_receipt_hash: null,
      cumulative_metrics: {
        financial_exposure_usd: 120,
        records_modified_count: 5,
        external_communications_count: 0,
        external_domains_contacted: [],
      },
    });
    expect(r1.receipt_number).toMatch(/^PR-\d{4}-00001$/);
    expect(r1.signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(r1.policy_version).toMatch(/^defaults#[0-9a-f]{12}$/);
    expect(r1.cumulative_metrics.estimated_cost_usd).toBeGreaterThan(0);
    expect(r1.events_summary.map((e) => e.action_name)).toEqual(["plan", "update"]);
    expect(Date.parse(r1.completed_at)).toBeGreaterThanOrEqual(Date.parse(r1.started_at));
    expect(verifyHmac(r1, r1.signature, deriveKey(t.service.ctx.masterKey, "receipt-hmac"))).toBe(true);

    const b = await runChain("second");
    await t.call("POST", `/v1/chains/${b}/complete`, { token: org.clientKey });
    const r2 = await receiptOf(b);
    expect(r2.receipt_number).toMatch(/-00002$/);
    expect(r2.previous_receipt_hash).toBe(receiptHash(r1));
    // the stored row is the canonical JSON of exactly what the API returned
    const row = await t.service.ctx.db.query("SELECT body FROM receipts WHERE chain_id = $1", [b]);
    expect(row.rows[0]!.body).toBe(canonicalJson(r2));
  });

  it("50 concurrent completions in one organization leave one unbroken chain with contiguous numbers", async () => {
    const chains = await Promise.all(Array.from({ length: 50 }, (_, i) => runChain(`concurrent-${i}`)));
    const results = await Promise.all(
      chains.map((c) => t.call("POST", `/v1/chains/${c}/complete`, { token: org.clientKey })),
    );
    for (const r of results) expect(r.statusCode, r.body).toBe(200);
    const { rows } = await t.service.ctx.db.query(
      "SELECT body, sequence FROM receipts WHERE org_id = $1 ORDER BY sequence",
      [org.orgId],
    );
    const all = rows.map((r) => JSON.parse(r.body) as SignedReceipt);
    expect(rows.map((r) => Number(r.sequence))).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect(all.length).toBeGreaterThanOrEqual(50);
    const v = verifyReceiptChain(all, { hmacKey: deriveKey(t.service.ctx.masterKey, "receipt-hmac") });
    expect(v.problems).toEqual([]);
    expect(v.overall_status).toBe("valid");
  });

  it("receipts of different organizations are chained separately", async () => {
    const other = await t.bootstrapOrg("receipts-other");
    const c = (await t.call("POST", "/v1/chains", { token: other.clientKey, body: { name: "x" } })).json();
    await t.call("POST", `/v1/chains/${c.chain_id}/complete`, { token: other.clientKey });
    const r = (await t.call("GET", `/v1/chains/${c.chain_id}/receipt`, { token: other.clientKey })).json();
    expect(r.receipt_number).toMatch(/-00001$/);
    expect(r.previous_receipt_hash).toBeNull();
    // and one organization cannot read the other's receipt
    const probe = await t.call("GET", `/v1/receipts/${r.receipt_id}`, { token: org.clientKey });
    expect(probe.statusCode).toBe(404);
  });
});
