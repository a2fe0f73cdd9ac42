/**
 * Long-poll on GET /v1/chains/{chain_id}/approval-status?wait= (issue 9, beyond the spec): a held
 * request answers as soon as its approval is approved, denied, timed out or cancelled, answers
 * `pending` when the wait elapses, ends at once on graceful shutdown, and keeps the body of the
 * plain poll (the two-replica wake-up over LISTEN/NOTIFY: approval-wait-replicas.test.ts).
 * The service here has the approval LISTEN connection on PostgreSQL, as a deployed one does, so
 * every wake-up is asserted on both backends. The only time bound is the wait itself (a wake-up
 * answers before the 5 s wait elapses); "at once" is asserted as "never held", not as a figure.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { poll } from "../support/approval-poll.js";
import { startTestService, type TestService } from "../support/service.js";

let t: TestService;
let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
beforeAll(async () => {
  t = await startTestService({ listen: true, notify: true });
  org = await t.bootstrapOrg("wait-org");
});
afterAll(async () => {
  await t?.close();
});

/** A chain whose last action (7,500 USD, above the default 5,000 threshold) awaits approval. */
async function gatedChain(svc: TestService = t, key = org.clientKey) {
  const chain = await svc.call("POST", "/v1/chains", { token: key, body: { name: "wait" } });
  const chainId = chain.json().chain_id as string;
  const r = await svc.call("POST", `/v1/chains/${chainId}/actions`, {
    token: key,
    body: {
      agent_name: "payer",
      action_type: "tool_call",
      action_name: "pay",
      payload: { amount_usd: 7500 },
    },
  });
  expect(r.json().policy_decision).toBe("require_approval");
  return { chainId, approvalId: r.json().approval_id as string };
}

/** Resolves once `n` requests are held by the service (the hold has started). */
async function held(svc: TestService, n = 1): Promise<void> {
  const deadline = performance.now() + 5000;
  while (svc.service.ctx.approvalWaiters.size < n) {
    if (performance.now() > deadline) throw new Error("the request was not held");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("approval-status ?wait=", () => {
  it("a held request returns approved as soon as the approval is approved", async () => {
    const { chainId, approvalId } = await gatedChain();
    const waiting = poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}&wait=5`);
    await held(t);
    const approve = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "approve" },
    });
    expect(approve.statusCode).toBe(200);
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.body.approval.status).toBe("approved");
    expect(r.ms).toBeLessThan(5000);
    // The same body as the plain poll.
    const plain = await poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}`);
    expect(r.body).toEqual(plain.body);
    expect(t.service.ctx.approvalWaiters.size).toBe(0);
  });

  it("returns pending when the wait elapses", async () => {
    const { chainId, approvalId } = await gatedChain();
    const waiting = poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}&wait=1`);
    await held(t);
    const r = await waiting;
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ chain_id: chainId, chain_status: "pending_approval" });
    expect(r.body.approval.status).toBe("pending");
    const plain = await poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}`);
    expect(r.body).toEqual(plain.body);
    await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
  });

  it("wakes on a denial, a backend timeout and a cancellation (chain completed)", async () => {
    const denied = await gatedChain();
    let waiting = poll(t.url, org.clientKey, denied.chainId, "?wait=5");
    await held(t);
    await t.call("POST", `/v1/approvals/${denied.approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "deny", notes: "no" },
    });
    let r = await waiting;
    expect(r.body.approval).toMatchObject({ status: "denied", condition: "no" });
    expect(r.ms).toBeLessThan(5000);

    const timedOut = await gatedChain();
    waiting = poll(t.url, org.clientKey, timedOut.chainId, "?wait=5");
    await held(t);
    t.clock.advance(24 * 3600_000 + 1000);
    expect(await t.runJobs()).toBeGreaterThan(0);
    r = await waiting;
    expect(r.body.approval.status).toBe("timed_out");
    expect(r.ms).toBeLessThan(5000);

    const cancelled = await gatedChain();
    waiting = poll(t.url, org.clientKey, cancelled.chainId, "?wait=5");
    await held(t);
    const done = await t.call("POST", `/v1/chains/${cancelled.chainId}/complete`, {
      token: org.clientKey,
      body: {},
    });
    expect(done.statusCode).toBe(200);
    r = await waiting;
    expect(r.body).toMatchObject({ chain_status: "completed", approval: { status: "cancelled" } });
    // The in-process wake-up comes before the completion's COMMIT: on PGlite the re-read queues
    // behind the transaction; on PostgreSQL the NOTIFY delivered at COMMIT wakes it again.
    expect(r.ms).toBeLessThan(5000);
  });

  it("answers at once without wait, with wait=0, and when the approval is already decided", async () => {
    const { chainId, approvalId } = await gatedChain();
    const hold = vi.spyOn(t.service.ctx.approvalWaiters, "hold");
    try {
      for (const q of ["", "?wait=0"]) {
        const r = await poll(t.url, org.clientKey, chainId, q);
        expect(r.body.approval.status).toBe("pending");
      }
      // Neither request was held.
      expect(hold).not.toHaveBeenCalled();
      await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
        token: org.adminKey,
        body: { decision: "approve" },
      });
      const r = await poll(t.url, org.clientKey, chainId, "?wait=5");
      expect(r.body.approval.status).toBe("approved");
      // Entered the hold, and left it on its first read without waiting.
      expect(hold).toHaveBeenCalledTimes(1);
      expect(r.ms).toBeLessThan(5000);
    } finally {
      hold.mockRestore();
    }
  });

  it("rejects a bad wait with 400 naming the field", async () => {
    const { chainId } = await gatedChain();
    for (const wait of ["6", "-1", "abc", "Infinity"]) {
      const r = await t.call("GET", `/v1/chains/${chainId}/approval-status?wait=${wait}`, {
        token: org.clientKey,
      });
      expect(r.statusCode, wait).toBe(400);
      expect(r.json()).toMatchObject({ code: "TG_ERR_VALIDATION" });
      expect(r.json().message).toMatch(/^querystring\.wait: /);
    }
    await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
  });

  it("another organization's chain is 404 from the first read, never waiting", async () => {
    const { chainId } = await gatedChain();
    const other = await t.bootstrapOrg("wait-other");
    const hold = vi.spyOn(t.service.ctx.approvalWaiters, "hold");
    try {
      const r = await poll(t.url, other.clientKey, chainId, "?wait=5");
      expect(r.status).toBe(404);
      // The hold's first read threw: a hold only waits after a read that shows pending.
      expect(hold).toHaveBeenCalledTimes(1);
      expect(hold.mock.settledResults[0]?.type).toBe("rejected");
    } finally {
      hold.mockRestore();
    }
  });
});

describe("graceful shutdown", () => {
  it("answers held requests at once with the current status", async () => {
    const own = await startTestService({ listen: true });
    try {
      const o = await own.bootstrapOrg("wait-shutdown");
      const { chainId } = await gatedChain(own, o.clientKey);
      const waiting = poll(own.url, o.clientKey, chainId, "?wait=5");
      await held(own);
      const t0 = performance.now();
      await own.service.close();
      const r = await waiting;
      expect(r.status).toBe(200);
      expect(r.body.approval.status).toBe("pending");
      expect(performance.now() - t0).toBeLessThan(4000);
    } finally {
      await own.close().catch(() => {});
    }
  });
});
