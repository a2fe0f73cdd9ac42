/**
 * The chain store's SQL advances a chain exactly as the pure rule does (chains/counters.ts):
 * random advances written through `writeEvents` (recording) and `addApprovedMetrics`
 * (approval) leave the row `advanceChain` computes — the hot path relies on it (ADR 0006).
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  advanceChain,
  advanceOf,
  type ChainAdvance,
  type ChainCounters,
} from "../../src/service/chains/counters.js";
import {
  addApprovedMetrics,
  type ChainSnapshot,
  type ChainStateRow,
  type GuardedWrite,
  readChainSnapshot,
  writeEvents,
} from "../../src/service/chains/store.js";
import { startTestService, type TestService } from "../support/service.js";

const counters = (c: ChainCounters) => ({
  event_count: c.event_count,
  status: c.status,
  total_tokens: Number(c.total_tokens),
  estimated_cost_usd: c.estimated_cost_usd,
  financial_exposure_usd: c.financial_exposure_usd,
  external_communications_count: c.external_communications_count,
  records_modified_count: c.records_modified_count,
  domains_contacted: [...c.domains_contacted].sort(),
  external_comm_agents: [...c.external_comm_agents].sort(),
});

/** A guarded write of a plain event that advances the chain by `advance`, decided on `snap`. */
const guardedWrite = (
  chainId: string,
  orgId: string,
  snap: ChainSnapshot,
  advance: ChainAdvance,
): GuardedWrite => ({
  chainId,
  xmin: snap.xmin,
  orgId,
  configVersion: snap.org.config_version,
  killSwitchActive: snap.org.kill_switch_active,
  paused: snap.org.paused,
  keyId: null,
  advance,
  event: {
    id: randomUUID(),
    org_id: orgId,
    parent_agent_name: null,
    action_type: "tool_call",
    action_name: "t",
    payload: {},
    category: "default",
    facts: {},
    decision: {},
    triggers: [],
    exception_id: null,
    approval_id: null,
    recorded_at: new Date().toISOString(),
    principal: null,
    org_environment: "production",
  },
});

const deltaArb = fc.record({
  tokens: fc.nat(10_000),
  estimated_cost_usd: fc.nat(10_000).map((n) => n / 1000),
  financial_exposure_usd: fc.nat(100_000).map((n) => n / 4),
  external_communications: fc.nat(2),
  records_modified: fc.nat(20),
  domains: fc.uniqueArray(fc.constantFrom("a.example", "b.example", "c.example"), { maxLength: 2 }),
});
const stepArb = fc.record({
  delta: deltaArb,
  allowed: fc.boolean(),
  agent: fc.constantFrom("planner", "mailer"),
  /** Approve afterwards: the metrics an approval adds to the chain (approvals/decide.ts). */
  approved: fc.boolean(),
});

describe("chain store", () => {
  let t: TestService;
  let clientKey: string;
  beforeAll(async () => {
    t = await startTestService();
    clientKey = (await t.bootstrapOrg("store")).clientKey;
  });
  afterAll(async () => t?.close());

  it("writes what advanceChain computes, for any sequence of advances (property)", async () => {
    const db = t.service.ctx.db;
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (steps) => {
        const r = await t.call("POST", "/v1/chains", { token: clientKey, body: { name: "s" } });
        const chainId = r.json().chain_id as string;
        const owner = (await db.query("SELECT org_id FROM chains WHERE id = $1", [chainId])).rows[0]!.org_id;
        let expected: ChainStateRow | null = null;
        for (const step of steps) {
          const snap = await readChainSnapshot(db, { orgId: owner, chainId, keyId: null });
          expected ??= snap.row;
          const advance = advanceOf(step.delta, {
            sequence: snap.row.event_count + 1,
            status: "open",
            allowed: step.allowed,
            agentName: step.agent,
          });
          const write = guardedWrite(chainId, owner, snap, advance);
          const [xmin] = await writeEvents(db, [write]);
          expect(xmin).not.toBeNull();
          expected = advanceChain(expected, advance);
          if (!step.allowed && step.approved) {
            await addApprovedMetrics(db, chainId, step.delta, step.agent);
            expected = advanceChain(expected, {
              ...advanceOf(step.delta, {
                sequence: expected.event_count,
                status: "open",
                allowed: true,
                agentName: step.agent,
              }),
              tokens: 0,
              costUsd: 0,
            });
          }
        }
        const stored = (await readChainSnapshot(db, { orgId: owner, chainId, keyId: null })).row;
        expect(counters(stored)).toEqual(counters(expected!));
      }),
      { numRuns: 25 },
    );
  });

  it("writes nothing when the chain row changed since it was read (the xmin guard)", async () => {
    const db = t.service.ctx.db;
    const key = (await t.bootstrapOrg("store-guard")).clientKey;
    const chainId = (await t.call("POST", "/v1/chains", { token: key, body: { name: "g" } })).json().chain_id;
    const owner = (await db.query("SELECT org_id FROM chains WHERE id = $1", [chainId])).rows[0]!.org_id;
    const snap = await readChainSnapshot(db, { orgId: owner, chainId, keyId: null });
    await db.query("UPDATE chains SET name = 'touched' WHERE id = $1", [chainId]);
    const advance = advanceOf(
      {
        tokens: 1,
        estimated_cost_usd: 0,
        financial_exposure_usd: 0,
        external_communications: 0,
        records_modified: 0,
        domains: [],
      },
      { sequence: 1, status: "open", allowed: true, agentName: "a" },
    );
    const [xmin] = await writeEvents(db, [guardedWrite(chainId, owner, snap, advance)]);
    expect(xmin).toBeNull();
    const { rows } = await db.query("SELECT count(*)::int AS n FROM chain_events WHERE chain_id = $1", [
      chainId,
    ]);
    expect(rows[0]!.n).toBe(0);
  });
});
