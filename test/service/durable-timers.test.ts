/**
 * Durable timers: approval timeouts and fallback escalation survive a service restart (they are
 * rows, not in-memory timers) and fire exactly once with two replicas polling together.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildService } from "../../src/service/app.js";
import { runDueJobs } from "../../src/service/jobs.js";
import { startTestService, type TestService } from "../support/service.js";

describe("durable timers", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("timers");
    await t.call("PUT", "/v1/admin/organizations/timers/approver-teams/ops", {
      token: t.adminToken,
      body: {
        approvers: [{ email: "a@timers.example" }],
        fallback_approvers: ["f1@timers.example", "f2@timers.example"],
      },
    });
  });
  afterAll(async () => t?.close());

  const pending = async () => {
    const c = (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "timer" } })).json()
      .chain_id;
    const r = await t.call("POST", `/v1/chains/${c}/actions`, {
      token: org.clientKey,
      body: { agent_name: "p", action_type: "tool_call", action_name: "pay", payload: { amount_usd: 6000 } },
    });
    return r.json().approval_id as string;
  };

  it("a new service instance on the same database runs the timers the old one scheduled", async () => {
    const approvalId = await pending();
    // a second instance shares nothing in memory with the first: only the database
    const second = await buildService({
      db: t.service.ctx.db,
      masterKey: t.service.ctx.masterKey,
      adminToken: t.adminToken,
      clock: t.clock,
      schedulerIntervalMs: 0,
      defaultMetrics: false,
    });
    t.clock.advance(24 * 3600_000);
    expect(
      await runDueJobs(t.service.ctx.db, { clock: t.clock, handlers: second.jobHandlers }),
    ).toBeGreaterThanOrEqual(2);
    const { rows } = await t.service.ctx.db.query("SELECT status FROM approvals WHERE id = $1", [approvalId]);
    expect(rows[0]!.status).toBe("timed_out");
    await second.close();
  });

  it("two replicas polling at once escalate and time out exactly once", async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, pending));
    const replica2 = await buildService({
      db: t.service.ctx.db,
      masterKey: t.service.ctx.masterKey,
      adminToken: t.adminToken,
      clock: t.clock,
      schedulerIntervalMs: 0,
      defaultMetrics: false,
    });
    t.clock.advance(12 * 3600_000);
    const poll = (handlers: typeof replica2.jobHandlers) =>
      runDueJobs(t.service.ctx.db, { clock: t.clock, handlers, limit: 2 });
    const runs = await Promise.all([
      poll(t.service.jobHandlers),
      poll(replica2.jobHandlers),
      poll(t.service.jobHandlers),
      poll(replica2.jobHandlers),
      poll(t.service.jobHandlers),
    ]);
    expect(runs.reduce((x, y) => x + y, 0)).toBe(5);
    const mails = await t.service.ctx.db.query(
      "SELECT payload->>'approval_id' AS id, recipient FROM outbox WHERE kind = 'approval_escalated' AND payload->>'approval_id' = ANY($1)",
      [ids],
    );
    expect(mails.rows).toHaveLength(10); // 5 approvals × 2 fallback approvers, once each
    t.clock.advance(12 * 3600_000);
    await Promise.all([poll(t.service.jobHandlers), poll(replica2.jobHandlers), poll(t.service.jobHandlers)]);
    await Promise.all([poll(t.service.jobHandlers), poll(replica2.jobHandlers)]);
    const { rows } = await t.service.ctx.db.query("SELECT status FROM approvals WHERE id = ANY($1)", [ids]);
    expect(rows.map((r) => r.status)).toEqual(Array(5).fill("timed_out"));
    const done = await t.service.ctx.db.query("SELECT count(*)::int AS n FROM jobs WHERE done_at IS NULL");
    expect(done.rows[0]!.n).toBe(0);
    await replica2.close();
  });
});
