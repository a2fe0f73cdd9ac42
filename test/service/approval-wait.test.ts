/**
 * Long-poll on GET /v1/chains/{chain_id}/approval-status?wait= (issue 9, beyond the spec): a held
 * request answers as soon as its approval is approved, denied, timed out or cancelled, answers
 * `pending` when the wait elapses, ends at once on graceful shutdown, and keeps the body of the
 * plain poll (the two-replica wake-up over LISTEN/NOTIFY: approval-wait-replicas.test.ts).
 * The service here has the approval LISTEN connection on PostgreSQL, as a deployed one does, so
 * every wake-up is asserted on both backends. No time is asserted: each answer is checked with
 * how its hold ended (`tollgate_approval_status_holds_total{ended}`: woken by the resolution, wait
 * elapsed, first read, shutdown), so a missed wake-up — which still answers the resolution once the
 * wait elapses — fails as `elapsed`. How fast a wake-up answers is measured in
 * bench/approval-resume.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { holdsEndedDuring, poll } from "../support/approval-poll.js";
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

/** Resolves once `n` requests are held by the service, waiting after a read that showed pending. */
async function held(svc: TestService, n = 1): Promise<void> {
  const deadline = performance.now() + 5000;
  while (svc.service.ctx.approvalWaiters.waiting < n) {
    if (performance.now() > deadline) throw new Error("the request was not held");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** How the holds ended while `fn` ran, read from the service's own registry (no database read). */
const during = <T>(fn: () => Promise<T>, svc: TestService = t) =>
  holdsEndedDuring(
    () => svc.service.ctx.metrics.registry.getSingleMetricAsString("tollgate_approval_status_holds_total"),
    fn,
  );

describe("approval-status ?wait=", () => {
  it("a held request returns approved as soon as the approval is approved", async () => {
    const { chainId, approvalId } = await gatedChain();
    const { value: r, ended } = await during(async () => {
      const waiting = poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}&wait=5`);
      await held(t);
      const approve = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
        token: org.adminKey,
        body: { decision: "approve" },
      });
      expect(approve.statusCode).toBe(200);
      return waiting;
    });
    expect(r.status).toBe(200);
    expect(r.body.approval.status).toBe("approved");
    // Woken by the approval, not answered when the wait elapsed.
    expect(ended).toEqual({ woken: 1 });
    // The same body as the plain poll.
    const plain = await poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}`);
    expect(r.body).toEqual(plain.body);
    expect(t.service.ctx.approvalWaiters.size).toBe(0);
  });

  it("returns pending when the wait elapses", async () => {
    const { chainId, approvalId } = await gatedChain();
    const { value: r, ended } = await during(async () => {
      const waiting = poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}&wait=1`);
      await held(t);
      return waiting;
    });
    expect(ended).toEqual({ elapsed: 1 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ chain_id: chainId, chain_status: "pending_approval" });
    expect(r.body.approval.status).toBe("pending");
    const plain = await poll(t.url, org.clientKey, chainId, `?approval_id=${approvalId}`);
    expect(r.body).toEqual(plain.body);
    await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
  });

  it("wakes on a denial, a backend timeout and a cancellation (chain completed)", async () => {
    const denied = await gatedChain();
    let { value: r, ended } = await during(async () => {
      const waiting = poll(t.url, org.clientKey, denied.chainId, "?wait=5");
      await held(t);
      await t.call("POST", `/v1/approvals/${denied.approvalId}/decision`, {
        token: org.adminKey,
        body: { decision: "deny", notes: "no" },
      });
      return waiting;
    });
    expect(r.body.approval).toMatchObject({ status: "denied", condition: "no" });
    expect(ended).toEqual({ woken: 1 });

    const timedOut = await gatedChain();
    ({ value: r, ended } = await during(async () => {
      const waiting = poll(t.url, org.clientKey, timedOut.chainId, "?wait=5");
      await held(t);
      t.clock.advance(24 * 3600_000 + 1000);
      expect(await t.runJobs()).toBeGreaterThan(0);
      return waiting;
    }));
    expect(r.body.approval.status).toBe("timed_out");
    expect(ended).toEqual({ woken: 1 });

    const cancelled = await gatedChain();
    ({ value: r, ended } = await during(async () => {
      const waiting = poll(t.url, org.clientKey, cancelled.chainId, "?wait=5");
      await held(t);
      const done = await t.call("POST", `/v1/chains/${cancelled.chainId}/complete`, {
        token: org.clientKey,
        body: {},
      });
      expect(done.statusCode).toBe(200);
      return waiting;
    }));
    expect(r.body).toMatchObject({ chain_status: "completed", approval: { status: "cancelled" } });
    // The in-process wake-up comes before the completion's COMMIT: on PGlite the re-read queues
    // behind the transaction; on PostgreSQL it may still read pending, and then only the NOTIFY
    // delivered at COMMIT (the listener) wakes it — without it this hold would end `elapsed`.
    expect(ended).toEqual({ woken: 1 });
  });

  it("answers at once without wait, with wait=0, and when the approval is already decided", async () => {
    const { chainId, approvalId } = await gatedChain();
    const plain = await during(async () => {
      for (const q of ["", "?wait=0"]) {
        const r = await poll(t.url, org.clientKey, chainId, q);
        expect(r.body.approval.status).toBe("pending");
      }
    });
    // Neither request was held.
    expect(plain.ended).toEqual({});
    await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "approve" },
    });
    const { value: r, ended } = await during(() => poll(t.url, org.clientKey, chainId, "?wait=5"));
    expect(r.body.approval.status).toBe("approved");
    // Entered the hold, and left it on its first read without waiting.
    expect(ended).toEqual({ first_read: 1 });
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
      const { value: r, ended } = await during(async () => {
        const waiting = poll(own.url, o.clientKey, chainId, "?wait=5");
        await held(own);
        await own.service.close();
        return waiting;
      }, own);
      expect(r.status).toBe(200);
      expect(r.body.approval.status).toBe("pending");
      // Ended by the shutdown, not by its wait elapsing.
      expect(ended).toEqual({ shutdown: 1 });
    } finally {
      await own.close().catch(() => {});
    }
  });
});
