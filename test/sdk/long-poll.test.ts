/**
 * The SDK's approval long-poll (issue 9, beyond the spec): recordAgentAction blocked on an
 * approval resumes soon after the approve instead of at the next 5 s tick, and still sends at
 * most one approval-status request per poll interval — also against a service that answers
 * at once (ignores `wait`). Real service, real HTTP, real timers. "Soon" is asserted as how the
 * service's hold ended (woken by the decision, not at its wait's end), never as a figure; the
 * resume time is measured in bench/approval-resume.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain, createConfig, realSleep } from "../../src/sdk/index.js";
import { holdsEndedDuring } from "../support/approval-poll.js";
import { type SdkEnv, startSdkEnv } from "./support/env.js";
import { startProxy, type TcpProxy } from "./support/proxy.js";

let env: SdkEnv;
let proxy: TcpProxy;
beforeAll(async () => {
  env = await startSdkEnv("sdk-long-poll");
  proxy = await startProxy(env.t.url);
});
afterAll(async () => {
  await proxy?.close();
  await env?.close();
});

const polls = (pattern = /^GET \/v1\/chains\/[^/]+\/approval-status/) => proxy.count(pattern);

/** How the service's holds ended while `fn` ran (`{ woken: 1 }`). */
const during = <T>(fn: () => Promise<T>) =>
  holdsEndedDuring(
    () => env.t.service.ctx.metrics.registry.getSingleMetricAsString("tollgate_approval_status_holds_total"),
    fn,
  );

/** Resolves once the service holds `n` approval-status requests, waiting after a pending read. */
async function held(n = 1): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (env.t.service.ctx.approvalWaiters.waiting < n) {
    if (performance.now() > deadline) throw new Error("no approval-status request was held");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Records a 7,500 USD payment (requires approval); resolves with the approval id once pending. */
async function gate(chain: Chain) {
  const decision = chain.recordAgentAction({
    agentName: "payer",
    actionType: "tool_call",
    actionName: "pay",
    payload: { amount_usd: 7500 },
  });
  decision.catch(() => undefined);
  const deadline = performance.now() + 10_000;
  for (;;) {
    const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
      token: env.org.clientKey,
    });
    const approval = st.json().approval;
    if (approval?.status === "pending") return { decision, approvalId: approval.approval_id as string };
    if (performance.now() > deadline) throw new Error("the action did not become pending");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("approval long-poll", () => {
  it("is on by default, off with an injected sleep unless asked for", () => {
    expect(createConfig("tg_x").internals.longPoll).toBe(true);
    expect(createConfig("tg_x", {}, { sleep: realSleep }).internals.longPoll).toBe(false);
    expect(createConfig("tg_x", {}, { sleep: realSleep, longPoll: true }).internals.longPoll).toBe(true);
  });

  it("recordAgentAction resumes soon after the approve, not at the next 5 s tick", async () => {
    const config = createConfig(env.org.clientKey, { backendUrl: proxy.url });
    const chain = await new Chain("long-poll-approve", { config }).enter();
    const { decision, approvalId } = await gate(chain);
    await held();
    const { value: d, ended } = await during(async () => {
      await env.decide(approvalId, { decision: "approve" });
      return decision;
    });
    // The held poll was woken by the approve: the SDK resumed on it, not at the next tick.
    expect(ended).toEqual({ woken: 1 });
    expect(d).toMatchObject({
      policy_decision: "allow",
      decision_source: "human_approval",
      approval_id: approvalId,
    });
    // Each poll asked the service to hold it for the 5 s interval.
    expect(polls(/approval-status\?approval_id=[0-9a-f-]{36}&wait=5 HTTP/)).toBeGreaterThanOrEqual(1);
    await chain.exit();
  });

  it("a denial reaches the caller as ActionDeniedError just as fast", async () => {
    const config = createConfig(env.org.clientKey, { backendUrl: env.t.url });
    const chain = await new Chain("long-poll-deny", { config }).enter();
    const { decision, approvalId } = await gate(chain);
    await held();
    const { value: err, ended } = await during(async () => {
      await env.decide(approvalId, { decision: "deny", notes: "not this vendor" });
      return decision.catch((e) => e);
    });
    expect(ended).toEqual({ woken: 1 });
    expect(err.name).toBe("ActionDeniedError");
    expect(err.condition).toBe("not this vendor");
    await chain.exit();
  });

  for (const service of ["honours wait", "ignores wait"] as const) {
    it(`sends at most one request per poll interval while pending (service ${service})`, async () => {
      const before = polls();
      // A service that ignores `wait` answers at once: simulated by dropping the parameter.
      const fetch: typeof globalThis.fetch = (input, init) =>
        globalThis.fetch(
          service === "ignores wait" ? String(input).replace(/&wait=[\d.]+/, "") : input,
          init,
        );
      const config = createConfig(
        env.org.clientKey,
        { backendUrl: proxy.url },
        { pollIntervalMs: 1000, fetch },
      );
      const chain = await new Chain(`long-poll-cadence-${service}`, { config }).enter();
      const { decision, approvalId } = await gate(chain);
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 3200));
      await env.decide(approvalId, { decision: "approve" });
      expect((await decision).decision_source).toBe("human_approval");
      const elapsed = performance.now() - t0;
      const sent = polls() - before;
      expect(sent).toBeGreaterThanOrEqual(1);
      // One per started interval, plus the one in flight when the approve landed.
      expect(sent).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
      await chain.exit();
    });
  }
});
