/**
 * Every row of the spec's "States and transitions" table, plus exceptions expiring, backend
 * timeouts and fallback escalation driven by a manual clock, org controls and shadow mode.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

const HOUR = 3600_000;

describe("states and transitions", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let chainId: string;

  const record = (payload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: { agent_name: "payer", action_type: "tool_call", action_name: "pay", payload, ...extra },
    });
  const status = () => t.call("GET", `/v1/chains/${chainId}/approval-status`, { token: org.clientKey });
  const decide = (approvalId: string, body: Record<string, unknown>, token = org.adminKey) =>
    t.call("POST", `/v1/approvals/${approvalId}/decision`, { token, body });

  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("transitions");
    await t.call("PUT", "/v1/admin/organizations/transitions/approver-teams/finance", {
      token: t.adminToken,
      body: { approvers: [{ email: "Alice@Example.com" }], fallback_approvers: ["boss@example.com"] },
    });
  });
  afterAll(async () => t?.close());
  beforeEach(async () => {
    chainId = (
      await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "transitions" } })
    ).json().chain_id;
  });

  it("enter chain context: the chain exists with its id, environment defaults to production", async () => {
    const c = await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey });
    expect(c.statusCode).toBe(200);
    expect(c.json()).toMatchObject({
      chain_id: chainId,
      status: "open",
      environment: "production",
      events: [],
    });
  });

  it("policy allows → the decision is returned and recorded", async () => {
    const r = await record({ amount_usd: 10 });
    expect(r.json().policy_decision).toBe("allow");
    const c = (await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey })).json();
    expect(c.events).toHaveLength(1);
    expect(c.events[0].decision.policy_decision).toBe("allow");
  });

  it("require_approval → pending_approval; approvers are notified; the chain refuses new actions meanwhile", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    expect(r.policy_decision).toBe("require_approval");
    expect(r.chain_status).toBe("pending_approval");
    expect((await status()).json()).toMatchObject({
      chain_status: "pending_approval",
      approval: { status: "pending" },
    });
    const mails = await t.service.ctx.db.query(
      "SELECT recipient, kind FROM outbox WHERE payload->>'approval_id' = $1",
      [r.approval_id],
    );
    expect(mails.rows).toEqual([{ recipient: "alice@example.com", kind: "approval_requested" }]);
    const blocked = await record({ amount_usd: 1 });
    expect(blocked.statusCode).toBe(409);
    expect(blocked.json().code).toBe("TG_ERR_APPROVAL_PENDING");
  });

  it("reviewer approves → allow with decision_source human_approval; the chain continues", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    const d = await decide(r.approval_id, { decision: "approve", notes: "ok" });
    expect(d.statusCode, d.body).toBe(200);
    const s = (await status()).json();
    expect(s.chain_status).toBe("open");
    expect(s.approval).toMatchObject({ status: "approved", decided_by: "api-key:admin-key", notes: "ok" });
    expect(s.approval.decision).toMatchObject({
      policy_decision: "allow",
      decision_source: "human_approval",
    });
    expect((await record({ amount_usd: 1 })).json().policy_decision).toBe("allow");
  });

  it("reviewer denies → deny with the notes as condition; the chain is not terminated", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    await decide(r.approval_id, { decision: "deny", notes: "too much" });
    const s = (await status()).json();
    expect(s.approval).toMatchObject({ status: "denied", condition: "too much" });
    expect(s.approval.decision).toMatchObject({ policy_decision: "deny", decision_source: "human_approval" });
    expect((await record({ amount_usd: 1 })).json().policy_decision).toBe("allow");
  });

  it("a decided approval cannot be decided again", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    await decide(r.approval_id, { decision: "deny" });
    const again = await decide(r.approval_id, { decision: "approve" });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe("TG_ERR_APPROVAL_RESOLVED");
  });

  it("no primary response at half the timeout → fallback approvers mailed once; approval still possible", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    t.clock.advance(11 * HOUR);
    await t.runJobs();
    const q = "SELECT recipient, kind FROM outbox WHERE payload->>'approval_id' = $1 ORDER BY id";
    expect((await t.service.ctx.db.query(q, [r.approval_id])).rows).toHaveLength(1);
    t.clock.advance(1 * HOUR);
    await t.runJobs();
    await t.runJobs();
    expect((await t.service.ctx.db.query(q, [r.approval_id])).rows).toEqual([
      { recipient: "alice@example.com", kind: "approval_requested" },
      { recipient: "boss@example.com", kind: "approval_escalated" },
    ]);
    expect((await decide(r.approval_id, { decision: "approve" })).statusCode).toBe(200);
  });

  it("backend marks the approval timed out → deny with a condition containing 'not resolved within'", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    t.clock.advance(24 * HOUR);
    await t.runJobs();
    const s = (await status()).json();
    expect(s.chain_status).toBe("open");
    expect(s.approval.status).toBe("timed_out");
    expect(s.approval.condition).toContain("not resolved within");
    expect(s.approval.decision.policy_decision).toBe("deny");
    expect((await decide(r.approval_id, { decision: "approve" })).statusCode).toBe(409);
  });

  it("a missed timer still times out on read", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    t.clock.advance(25 * HOUR);
    const s = (
      await t.call("GET", `/v1/chains/${chainId}/approval-status?approval_id=${r.approval_id}`, {
        token: org.clientKey,
      })
    ).json();
    expect(s.approval.status).toBe("timed_out");
  });

  it("approval with a 1-day exception: matching actions are allow_with_flag until it expires", async () => {
    const mail = { to: "ceo@partner.example", subject: "hi" };
    const first = (await record(mail, { agent_name: "mailer", action_name: "send_email" })).json();
    expect(first.policy_name).toBe("first_external_communication");
    await decide(first.approval_id, { decision: "approve", exception_duration: "1d" });
    const s = (await status()).json();
    expect(s.approval.exception).toMatchObject({ duration: "1d" });
    // a new chain: same agent, type and domain → covered by the exception
    chainId = (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "later" } })).json()
      .chain_id;
    const covered = (await record(mail, { agent_name: "mailer", action_name: "send_email" })).json();
    expect(covered.policy_decision).toBe("allow_with_flag");
    expect(covered.exception_id).toBe(s.approval.exception.exception_id);
    const ev = (await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey })).json().events[0];
    expect(ev.exception_id).toBe(s.approval.exception.exception_id);
    // another domain is not covered
    chainId = (
      await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "other-domain" } })
    ).json().chain_id;
    const other = (
      await record({ to: "x@else.example" }, { agent_name: "mailer", action_name: "send_email" })
    ).json();
    expect(other.policy_decision).toBe("require_approval");
    // after expiry the original scope requires approval again
    t.clock.advance(24 * HOUR + 1);
    chainId = (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "expired" } })).json()
      .chain_id;
    const expired = (await record(mail, { agent_name: "mailer", action_name: "send_email" })).json();
    expect(expired.policy_decision).toBe("require_approval");
    expect(expired.exception_id).toBeNull();
  });

  it("an exception cannot be granted with a denial (400 naming the field)", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    const bad = await decide(r.approval_id, { decision: "deny", exception_duration: "1h" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("exception_duration");
  });

  it("exit normally → sealed, receipt generated; later actions get 409", async () => {
    await record({ amount_usd: 10 });
    const done = await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey });
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json().status).toBe("completed");
    const late = await record({ amount_usd: 1 });
    expect(late.statusCode).toBe(409);
    expect(late.json().code).toBe("TG_ERR_CHAIN_COMPLETED");
    const again = await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey });
    expect(again.statusCode).toBe(409);
    expect(again.json().details.receipt_id).toBe(done.json().receipt_id);
  });

  it("exit through an exception → sealed and marked with the failure; the receipt reflects it", async () => {
    const r = (await record({ amount_usd: 7500 })).json();
    const done = await t.call("POST", `/v1/chains/${chainId}/complete`, {
      token: org.clientKey,
      body: { failure: { mode: "ChainTimeoutError", message: "gave up waiting" } },
    });
    expect(done.json().status).toBe("failed");
    const receipt = (await t.call("GET", `/v1/chains/${chainId}/receipt`, { token: org.clientKey })).json();
    expect(receipt.status).toBe("failed");
    expect(receipt.failure).toEqual({ mode: "ChainTimeoutError", message: "gave up waiting" });
    expect(receipt.summary).toContain("failed (ChainTimeoutError)");
    // the pending approval was cancelled, not left dangling
    const s = (await t.call("GET", `/v1/approvals/${r.approval_id}`, { token: org.adminKey })).json();
    expect(s.status).toBe("cancelled");
  });

  it("the receipt exists only after completion", async () => {
    const r = await t.call("GET", `/v1/chains/${chainId}/receipt`, { token: org.clientKey });
    expect(r.statusCode).toBe(404);
  });
});

describe("organization controls and runaway limits", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("controls", { runaway_limits: { max_events: 3 } });
  });
  afterAll(async () => t?.close());

  const newChain = async () =>
    (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "controls" } })).json()
      .chain_id as string;
  const act = (chainId: string) =>
    t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: { agent_name: "a", action_type: "tool_call", action_name: "read" },
    });

  it("kill switch → deny with kill_switch_active", async () => {
    await t.call("POST", "/v1/admin/organizations/controls/kill-switch", {
      token: org.adminKey,
      body: { active: true, reason: "incident 42" },
    });
    const d = (await act(await newChain())).json();
    expect(d).toMatchObject({
      policy_decision: "deny",
      kill_switch_active: true,
      decision_reason: "incident 42",
    });
    await t.call("POST", "/v1/admin/organizations/controls/kill-switch", {
      token: org.adminKey,
      body: { active: false },
    });
    expect((await act(await newChain())).json().policy_decision).toBe("allow");
  });

  it("pause → deny with pause_reason", async () => {
    await t.call("POST", "/v1/admin/organizations/controls/pause", {
      token: org.adminKey,
      body: { active: true, reason: "audit" },
    });
    const d = (await act(await newChain())).json();
    expect(d).toMatchObject({ policy_decision: "deny", pause_reason: "audit" });
    await t.call("POST", "/v1/admin/organizations/controls/pause", {
      token: org.adminKey,
      body: { active: false },
    });
  });

  it("event-count limit → auto-pause: auto_paused on the decision, the chain halts", async () => {
    const c = await newChain();
    for (let i = 0; i < 3; i++) expect((await act(c)).json().policy_decision).toBe("allow");
    const d = (await act(c)).json();
    expect(d).toMatchObject({
      policy_decision: "deny",
      auto_paused: true,
      policy_name: "runaway_limits",
      chain_status: "paused",
    });
    const after = await act(c);
    expect(after.statusCode).toBe(409);
    expect(after.json().code).toBe("TG_ERR_CHAIN_PAUSED");
  });

  it("duration limit → auto-pause", async () => {
    await t.call("PUT", "/v1/admin/organizations/controls", {
      token: t.adminToken,
      body: { runaway_limits: { max_duration_seconds: 60 } },
    });
    const c = await newChain();
    t.clock.advance(61_000);
    expect((await act(c)).json()).toMatchObject({ auto_paused: true });
  });

  it("shadow mode reports what enforce would have done", async () => {
    await t.call("PUT", "/v1/admin/organizations/controls", {
      token: t.adminToken,
      body: { evaluation_mode: "shadow" },
    });
    const c = await newChain();
    const d = (
      await t.call("POST", `/v1/chains/${c}/actions`, {
        token: org.clientKey,
        body: {
          agent_name: "a",
          action_type: "tool_call",
          action_name: "pay",
          payload: { amount_usd: 9000 },
        },
      })
    ).json();
    expect(d).toMatchObject({
      policy_decision: "allow_with_flag",
      shadow_decision: "require_approval",
      evaluation_mode: "shadow",
      approval_id: null,
    });
  });
});

describe("late decisions", () => {
  it("a decision after the deadline commits the timeout and answers 409", async () => {
    const t = await startTestService();
    try {
      const org = await t.bootstrapOrg("late");
      const c = (await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "late" } })).json()
        .chain_id;
      const r = (
        await t.call("POST", `/v1/chains/${c}/actions`, {
          token: org.clientKey,
          body: {
            agent_name: "p",
            action_type: "tool_call",
            action_name: "pay",
            payload: { amount_usd: 6000 },
          },
        })
      ).json();
      t.clock.advance(25 * HOUR);
      const late = await t.call("POST", `/v1/approvals/${r.approval_id}/decision`, {
        token: org.adminKey,
        body: { decision: "approve" },
      });
      expect(late.statusCode).toBe(409);
      expect(late.json().details.status).toBe("timed_out");
      const { rows } = await t.service.ctx.db.query("SELECT status FROM approvals WHERE id = $1", [
        r.approval_id,
      ]);
      expect(rows[0]!.status).toBe("timed_out");
    } finally {
      await t.close();
    }
  });
});
