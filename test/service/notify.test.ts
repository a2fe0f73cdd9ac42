/**
 * Approval e-mail through the durable outbox (spec: "Events" 3; "States and transitions" no
 * primary response at half the timeout; "Authentication" 6): a real SMTP server receives the
 * approver mails and, at half the timeout, the fallback mails; SMTP failures are retried with
 * backoff and delivered once; two workers never send a row twice; signed links are refused
 * when tampered, expired, reused or used by someone else, and never decide by themselves.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutboxWorker, type SmtpConfig } from "../../src/service/notify/index.js";
import { ApprovalLinkQuerySchema, checkApprovalLink, linkFromQuery } from "../../src/service/notify/links.js";
import { DEFAULT_LEASE_MS, OutboxWorker, retryDelayMs } from "../../src/service/notify/outbox.js";
import { csrfOf, get, pendingApproval, postForm, sessionFor } from "../browser/support/dashboard.js";
import { type SmtpSink, startSmtpSink } from "../browser/support/smtp-sink.js";
import { startTestService, type TestService } from "../support/service.js";

const HOUR = 3600_000;

let t: TestService;
let sink: SmtpSink;
let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
const workers: OutboxWorker[] = [];

const smtpConfig = (port: number): SmtpConfig => ({
  host: "127.0.0.1",
  port,
  tls: "none",
  from: "Tollgate <tollgate@test.invalid>",
  timeoutMs: 5000,
});
const newWorker = (opts: { limit?: number } = {}) => {
  const w = createOutboxWorker(t.service.ctx, smtpConfig(sink.port), { intervalMs: 60_000, ...opts });
  workers.push(w);
  return w;
};
const outboxRows = async (approvalId: string) =>
  (
    await t.service.ctx.db.query(
      "SELECT kind, recipient, attempts, sent_at, dropped_at, last_error, next_attempt_at FROM outbox WHERE payload->>'approval_id' = $1 ORDER BY id",
      [approvalId],
    )
  ).rows;

beforeAll(async () => {
  t = await startTestService();
  sink = await startSmtpSink();
  org = await t.bootstrapOrg("acme", { approval_timeout_hours: 24 });
  const team = await t.call("PUT", "/v1/admin/organizations/acme/approver-teams/finance", {
    token: t.adminToken,
    body: {
      approvers: [{ email: "alice@acme.test" }, { email: "bob@acme.test", role: "admin" }],
      fallback_approvers: ["carol@acme.test"],
    },
  });
  expect(team.statusCode, team.body).toBeLessThan(300);
  const member = await t.call("PUT", "/v1/admin/organizations/acme/members/dave@acme.test", {
    token: t.adminToken,
    body: { roles: ["member", "approver"] },
  });
  expect(member.statusCode, member.body).toBe(200);
  await t.call("PUT", "/v1/admin/organizations/acme/members/erin@acme.test", {
    token: t.adminToken,
    body: { roles: ["member"] },
  });
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  await sink?.close();
  await t?.close();
});

describe("approval mails through the outbox", () => {
  it("mails every approver with chain, action, metrics and signed links; the fallback approvers at half the timeout", async () => {
    const { chainId, approvalId } = await pendingApproval(t.service.app, org.clientKey, {
      chain: "quarterly-payouts",
    });
    const worker = newWorker();
    const run = await worker.runOnce();
    expect(run).toMatchObject({ claimed: 3, sent: 3, failed: 0 });
    const primary = ["alice@acme.test", "bob@acme.test", "dave@acme.test"];
    expect(sink.mails.map((m) => m.to).sort()).toEqual(primary);
    for (const mail of sink.mails) {
      expect(mail.subject).toBe(
        "Approval required: payments-agent → wire_transfer in chain quarterly-payouts",
      );
      expect(mail.headers["x-tollgate-approval-id"]).toBe(approvalId);
      expect(mail.text).toContain(`Chain: quarterly-payouts (${chainId})`);
      expect(mail.text).toContain("Agent: payments-agent");
      expect(mail.text).toContain("Attempted action: tool_call wire_transfer");
      expect(mail.text).toContain("Cumulative chain metrics so far:");
      expect(mail.text).toContain("Financial exposure: $0.00");
      expect(mail.html).toContain("Approve…");
      for (const [decision, href] of Object.entries(mail.links)) {
        expect(href, `${decision} link`).toMatch(
          new RegExp(`^http://localhost:8000/dashboard/approvals/${approvalId}/link\\?d=${decision}&r=`),
        );
        const u = new URL(href!);
        const q = ApprovalLinkQuerySchema.parse(Object.fromEntries(u.searchParams));
        expect(q.r).toBe(mail.to);
        // The link expires with the approval (24 h).
        expect(q.exp * 1000).toBe(t.clock.nowMs() + 24 * HOUR);
        expect(
          checkApprovalLink(t.service.ctx.linkKey, linkFromQuery(approvalId, q), q.sig, t.clock.nowMs()),
        ).toBeNull();
      }
    }
    // Nothing for the fallback approver before half the timeout, and no duplicate on rerun.
    t.clock.advance(12 * HOUR - 60_000);
    await t.runJobs();
    expect((await worker.runOnce()).claimed).toBe(0);
    expect(sink.to("carol@acme.test")).toHaveLength(0);
    t.clock.advance(60_000);
    expect(await t.runJobs()).toBeGreaterThanOrEqual(1);
    expect(await worker.runOnce()).toMatchObject({ claimed: 1, sent: 1 });
    const [fallback] = sink.to("carol@acme.test");
    expect(fallback?.subject).toBe(
      "[Escalated] Approval required: payments-agent → wire_transfer in chain quarterly-payouts",
    );
    expect(fallback?.text).toContain("You are a fallback approver.");
    expect(fallback?.links.approve).toContain("r=carol%40acme.test");
    expect(sink.mails).toHaveLength(4);
    expect((await outboxRows(approvalId)).every((r) => r.sent_at !== null && r.attempts === 1)).toBe(true);
    // The jobs ran once: running them again enqueues nothing new.
    await t.runJobs();
    expect((await worker.runOnce()).claimed).toBe(0);
  });

  it("retries after an SMTP failure with exponential backoff and delivers each mail once", async () => {
    sink.mails.length = 0;
    const { approvalId } = await pendingApproval(t.service.app, org.clientKey, { chain: "retry-run" });
    const worker = newWorker();
    sink.failNext(3);
    const first = await worker.runOnce();
    expect(first).toMatchObject({ claimed: 3, sent: 0, failed: 3 });
    expect(sink.mails).toHaveLength(0);
    let rows = await outboxRows(approvalId);
    for (const r of rows) {
      expect(r.attempts).toBe(1);
      expect(r.last_error).toContain("451");
      expect(new Date(r.next_attempt_at).getTime()).toBe(t.clock.nowMs() + retryDelayMs(1));
    }
    // Not due yet: nothing is claimed before the backoff elapses.
    t.clock.advance(retryDelayMs(1) - 1000);
    expect((await worker.runOnce()).claimed).toBe(0);
    // The second attempt fails too for one mail; its delay doubles.
    t.clock.advance(1000);
    sink.failNext(1);
    expect(await worker.runOnce()).toMatchObject({ claimed: 3, sent: 2, failed: 1 });
    rows = await outboxRows(approvalId);
    const stuck = rows.find((r) => r.sent_at === null)!;
    expect(stuck.attempts).toBe(2);
    expect(new Date(stuck.next_attempt_at).getTime()).toBe(t.clock.nowMs() + retryDelayMs(2));
    expect(retryDelayMs(2)).toBe(2 * retryDelayMs(1));
    t.clock.advance(retryDelayMs(2));
    expect(await worker.runOnce()).toMatchObject({ claimed: 1, sent: 1 });
    expect(sink.mails.map((m) => m.to).sort()).toEqual([
      "alice@acme.test",
      "bob@acme.test",
      "dave@acme.test",
    ]);
    expect(sink.refused()).toBe(4);
    t.clock.advance(HOUR);
    expect((await worker.runOnce()).claimed).toBe(0);
  });

  it("two workers deliver every mail exactly once", async () => {
    sink.mails.length = 0;
    const approvals: string[] = [];
    for (let i = 0; i < 6; i++) {
      approvals.push(
        (await pendingApproval(t.service.app, org.clientKey, { chain: `parallel-${i}` })).approvalId,
      );
    }
    const a = newWorker({ limit: 4 });
    const b = newWorker({ limit: 4 });
    const drain = async (w: OutboxWorker) => {
      let sent = 0;
      for (;;) {
        const r = await w.runOnce();
        sent += r.sent;
        if (r.claimed === 0) return sent;
      }
    };
    const [sentA, sentB] = await Promise.all([drain(a), drain(b)]);
    expect(sentA + sentB).toBe(18);
    expect(sink.mails).toHaveLength(18);
    const keys = sink.mails.map((m) => `${m.headers["x-tollgate-approval-id"]}|${m.to}`);
    expect(new Set(keys).size).toBe(18);
    for (const id of approvals)
      expect((await outboxRows(id)).every((r) => r.attempts === 1 && r.sent_at)).toBe(true);
  });

  it("a mail held by a worker that stopped answering is sent once by another after the lease", async () => {
    sink.mails.length = 0;
    const { approvalId } = await pendingApproval(t.service.app, org.clientKey, { chain: "stuck-worker" });
    let release: (err: Error) => void = () => {};
    const stuck = new OutboxWorker(
      {
        db: t.service.ctx.db,
        clock: t.clock,
        from: "Tollgate <tollgate@test.invalid>",
        publicUrl: t.service.ctx.publicUrl,
        linkKey: t.service.ctx.linkKey,
        transport: {
          send: () =>
            new Promise((_resolve, reject) => {
              release = reject;
            }),
          close: () => {},
        },
      },
      { intervalMs: 60_000, limit: 1 },
    );
    const hung = stuck.runOnce();
    await expect
      .poll(async () => (await outboxRows(approvalId)).filter((r) => r.attempts === 1).length)
      .toBe(1);
    const healthy = newWorker();
    // Within the lease the held row is not touched; the two others go out.
    expect(await healthy.runOnce()).toMatchObject({ claimed: 2, sent: 2 });
    t.clock.advance(DEFAULT_LEASE_MS);
    expect(await healthy.runOnce()).toMatchObject({ claimed: 1, sent: 1 });
    // The stuck worker's late failure cannot undo the delivery (attempts fences its update).
    release(new Error("connection reset"));
    expect(await hung).toMatchObject({ failed: 1 });
    const rows = await outboxRows(approvalId);
    expect(rows.every((r) => r.sent_at && r.last_error === null)).toBe(true);
    expect(sink.mails.map((m) => m.to).sort()).toEqual([
      "alice@acme.test",
      "bob@acme.test",
      "dave@acme.test",
    ]);
  });

  it("drops a mail whose approval was decided before delivery", async () => {
    sink.mails.length = 0;
    const { approvalId } = await pendingApproval(t.service.app, org.clientKey, { chain: "decided-first" });
    const d = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "approve" },
    });
    expect(d.statusCode, d.body).toBe(200);
    expect(await newWorker().runOnce()).toMatchObject({ claimed: 3, sent: 0, dropped: 3 });
    expect(sink.mails).toHaveLength(0);
    expect((await outboxRows(approvalId)).every((r) => r.dropped_at && r.sent_at === null)).toBe(true);
  });
});

describe("signed approval links", () => {
  let approvalId: string;
  let approve: string;
  let deny: string;
  let bobApprove: string;

  beforeAll(async () => {
    sink.mails.length = 0;
    approvalId = (await pendingApproval(t.service.app, org.clientKey, { chain: "link-run" })).approvalId;
    await newWorker().runOnce();
    const alice = sink.to("alice@acme.test")[0]!;
    approve = alice.links.approve!.replace("http://localhost:8000", "");
    deny = alice.links.deny!.replace("http://localhost:8000", "");
    bobApprove = sink.to("bob@acme.test")[0]!.links.approve!.replace("http://localhost:8000", "");
  });

  const tamper = (link: string, key: string, value: string) => {
    const u = new URL(link, "http://x");
    u.searchParams.set(key, value);
    return `${u.pathname}?${u.searchParams}`;
  };

  it("leads to sign-in first, without using the link", async () => {
    const r = await get(t.service.app, approve);
    expect(r.statusCode).toBe(303);
    expect(r.headers.location).toBe(`/auth/login?return_to=${encodeURIComponent(approve)}`);
    expect(r.headers["referrer-policy"]).toBe("no-referrer");
  });

  it("refuses tampered links", async () => {
    const alice = await sessionFor(t.service.ctx.db, t.clock, "alice@acme.test", "acme");
    const sig = new URL(approve, "http://x").searchParams.get("sig")!;
    const flipped = `${sig.slice(0, -1)}${sig.endsWith("A") ? "B" : "A"}`;
    const variants = [
      tamper(approve, "d", "deny"),
      tamper(approve, "r", "mallory@evil.test"),
      tamper(approve, "exp", String(Number(new URL(approve, "http://x").searchParams.get("exp")) + 3600)),
      tamper(approve, "sig", flipped),
      approve.replace(approvalId, "00000000-0000-4000-8000-000000000000"),
    ];
    for (const v of variants) {
      const r = await get(t.service.app, v, alice);
      expect(r.statusCode, v).toBe(403);
      expect(r.body).toContain("Invalid link");
    }
    const malformed = await get(t.service.app, tamper(approve, "sig", "not-a-signature"), alice);
    expect(malformed.statusCode).toBe(400);
  });

  it("is refused for another signed-in person", async () => {
    const alice = await sessionFor(t.service.ctx.db, t.clock, "alice@acme.test", "acme");
    const r = await get(t.service.app, bobApprove, alice);
    expect(r.statusCode).toBe(403);
    expect(r.body).toContain("sent to another person");
  });

  it("works once after sign-in, pre-selects the decision, and never decides by itself", async () => {
    const alice = await sessionFor(t.service.ctx.db, t.clock, "alice@acme.test", "acme");
    const r = await get(t.service.app, approve, alice);
    expect(r.statusCode, r.body).toBe(303);
    expect(r.headers.location).toBe(
      `/dashboard/approvals?approval=${approvalId}&decision=approve&from=link#approval-${approvalId}`,
    );
    const again = await get(t.service.app, approve, alice);
    expect(again.statusCode).toBe(409);
    expect(again.body).toContain("Link already used");
    const status = await t.call("GET", `/v1/approvals/${approvalId}`, { token: org.adminKey });
    expect(status.json().status).toBe("pending");
    const pageRes = await get(t.service.app, r.headers.location as string, alice);
    expect(pageRes.statusCode).toBe(200);
    expect(pageRes.body).toContain("You followed the <strong>approve</strong> link");
    expect(pageRes.body).toMatch(/name="decision" value="approve" required checked/);
    // The form needs the CSRF token of the session.
    const forged = await postForm(t.service.app, `/dashboard/approvals/${approvalId}/decision`, alice, {
      decision: "approve",
      _csrf: "x".repeat(43),
    });
    expect(forged.statusCode).toBe(403);
    const ok = await postForm(t.service.app, `/dashboard/approvals/${approvalId}/decision`, alice, {
      decision: "approve",
      notes: "Checked the invoice",
      _csrf: csrfOf(pageRes.body),
    });
    expect(ok.statusCode, ok.body).toBe(303);
    const after = await t.call("GET", `/v1/approvals/${approvalId}`, { token: org.adminKey });
    expect(after.json()).toMatchObject({
      status: "approved",
      decided_by: "alice@acme.test",
      notes: "Checked the invoice",
    });
    // The unused deny link of a decided approval is refused too.
    const late = await get(t.service.app, deny, alice);
    expect(late.statusCode).toBe(409);
    expect(late.body).toContain("Already decided");
  });

  it("is refused once expired", async () => {
    sink.mails.length = 0;
    const { approvalId: id } = await pendingApproval(t.service.app, org.clientKey, { chain: "expiring-run" });
    await newWorker().runOnce();
    const link = sink.to("alice@acme.test")[0]!.links.deny!.replace("http://localhost:8000", "");
    expect(link).toContain(id);
    t.clock.advance(24 * HOUR);
    const alice = await sessionFor(t.service.ctx.db, t.clock, "alice@acme.test", "acme");
    const r = await get(t.service.app, link, alice);
    expect(r.statusCode).toBe(410);
    expect(r.body).toContain("Link expired");
  });
});
