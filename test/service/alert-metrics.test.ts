/**
 * The metrics the alert rules (charts/tollgate/files/alerts.yaml) need beyond the counters of
 * the hot path: ages read at scrape time from the database (oldest pending approval, oldest
 * undelivered notification, most overdue durable job), failing jobs, and receipt failures. Each
 * is driven through the real code path and read from the service's registry.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildService } from "../../src/service/app.js";
import { enqueueJob } from "../../src/service/jobs.js";
import { sample } from "../support/promtool.js";
import { startTestService, type TestService } from "../support/service.js";

describe("metrics behind the alerts", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  const scrape = () => t.service.ctx.metrics.registry.metrics();
  const value = async (series: string) => sample(await scrape(), series);

  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("alerting");
    await t.call("PUT", "/v1/admin/organizations/alerting/approver-teams/ops", {
      token: t.adminToken,
      body: { approvers: [{ email: "a@alerting.example" }], fallback_approvers: ["f@alerting.example"] },
    });
  });
  afterAll(async () => t?.close());

  const openChain = async () =>
    (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "alerting" } })).json()
      .chain_id as string;

  it("all ages are 0 and nothing fails while nothing waits", async () => {
    expect(await value("tollgate_approvals_oldest_pending_age_seconds")).toBe(0);
    expect(await value("tollgate_outbox_oldest_pending_age_seconds")).toBe(0);
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(0);
    expect(await value("tollgate_jobs_failing")).toBe(0);
    expect(await value("tollgate_receipt_failures_total")).toBe(0);
  });

  it("a pending approval and its queued mail age with the clock; its timers become overdue, then run", async () => {
    const chain = await openChain();
    const r = await t.call("POST", `/v1/chains/${chain}/actions`, {
      token: org.clientKey,
      body: { agent_name: "p", action_type: "tool_call", action_name: "pay", payload: { amount_usd: 6000 } },
    });
    expect(r.json().policy_decision).toBe("require_approval");
    t.clock.advance(600_000);
    expect(await value("tollgate_approvals_oldest_pending_age_seconds")).toBe(600);
    // No SMTP configured: the approval mail stays queued and ages like the approval.
    expect(await value("tollgate_outbox_oldest_pending_age_seconds")).toBe(600);
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(0);

    // The escalation is due at half the 24 h approval timeout; nobody ran it for 5 minutes.
    t.clock.advance(12 * 3600_000 - 600_000 + 300_000);
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(300);
    expect(await t.runJobs()).toBeGreaterThanOrEqual(1);
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(0);
    expect(await value("tollgate_approvals_oldest_pending_age_seconds")).toBe(12 * 3600 + 300);

    // The timeout resolves the approval: nothing pending any more.
    t.clock.advance(12 * 3600_000);
    await t.runJobs();
    expect(await value("tollgate_approvals_oldest_pending_age_seconds")).toBe(0);
  });

  it("a job whose handler fails counts as failing until it succeeds", async () => {
    await enqueueJob(t.service.ctx.db, {
      kind: "no_such_kind",
      runAtMs: t.clock.nowMs(),
      payload: {},
      dedupeKey: "alert-metrics:failing",
    });
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(0);
    t.clock.advance(1000);
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(1);
    await t.runJobs();
    expect(await value("tollgate_jobs_failing")).toBe(1);
    // Retried with backoff: not overdue meanwhile, still failing.
    expect(await value("tollgate_jobs_overdue_seconds")).toBe(0);
    await t.service.ctx.db.query(
      "UPDATE jobs SET done_at = now() WHERE dedupe_key = 'alert-metrics:failing'",
    );
    expect(await value("tollgate_jobs_failing")).toBe(0);
  });

  it("a completion that cannot sign (wrong master key) counts a receipt failure; client errors do not", async () => {
    const ok = await openChain();
    expect((await t.call("POST", `/v1/chains/${ok}/complete`, { token: org.clientKey })).statusCode).toBe(
      200,
    );
    const unknown = await t.call("POST", "/v1/chains/00000000-0000-4000-8000-000000000000/complete", {
      token: org.clientKey,
    });
    expect(unknown.statusCode).toBe(404);
    expect(await value("tollgate_receipt_failures_total")).toBe(0);

    // A replica started with another master key cannot unseal the stored signing keys.
    const wrongKey = await buildService({
      db: t.service.ctx.db,
      masterKey: randomBytes(32),
      adminToken: t.adminToken,
      clock: t.clock,
      schedulerIntervalMs: 0,
      defaultMetrics: false,
    });
    try {
      await wrongKey.app.ready();
      const chain = await openChain();
      const r = await wrongKey.app.inject({
        method: "POST",
        url: `/v1/chains/${chain}/complete`,
        headers: { authorization: `Bearer ${org.clientKey}` },
      });
      expect(r.statusCode).toBe(500);
      expect(sample(await wrongKey.ctx.metrics.registry.metrics(), "tollgate_receipt_failures_total")).toBe(
        1,
      );
    } finally {
      await wrongKey.close();
    }
  });
});
