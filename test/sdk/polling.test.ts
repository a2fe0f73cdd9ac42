/**
 * The 5-second approval-status poll with the SDK's own timer-based sleep: vitest fake timers
 * drive setTimeout, the HTTP to the real service stays real (counted by a TCP proxy).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Chain, createConfig, DEFAULT_POLL_INTERVAL_MS, realSleep } from "../../src/sdk/index.js";
import { type SdkEnv, startSdkEnv } from "./support/env.js";
import { startProxy, type TcpProxy } from "./support/proxy.js";

let env: SdkEnv;
let proxy: TcpProxy;
beforeAll(async () => {
  env = await startSdkEnv("sdk-polling");
  proxy = await startProxy(env.t.url);
});
afterAll(async () => {
  await proxy?.close();
  await env?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Yields to the event loop (setImmediate is not faked) until `cond` holds; 10 s real-time cap. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const start = performance.now();
  while (!cond()) {
    if (performance.now() - start > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

describe("approval polling", () => {
  it("the default interval is 5000 ms", () => {
    expect(DEFAULT_POLL_INTERVAL_MS).toBe(5000);
    expect(createConfig("tg_x").internals.pollIntervalMs).toBe(5000);
  });

  it("polls exactly every 5 seconds, with no backoff, until the approval is decided", async () => {
    const sleeps: number[] = [];
    const config = createConfig(
      env.org.clientKey,
      { backendUrl: proxy.url },
      {
        // The real timer-based sleep, observed.
        sleep: (ms, signal) => {
          sleeps.push(ms);
          return realSleep(ms, signal);
        },
      },
    );
    const chain = await new Chain("polling", { config }).enter();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const polls = () => proxy.count(/^GET \/v1\/chains\/[^/]+\/approval-status/);
    const pending = chain.recordAgentAction({
      agentName: "payer",
      actionType: "tool_call",
      actionName: "pay",
      payload: { amount_usd: 7500 },
    });
    let settled = false;
    void pending.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );

    await until(() => sleeps.length === 1, "the first sleep");
    for (let tick = 1; tick <= 4; tick++) {
      await vi.advanceTimersByTimeAsync(4999);
      await new Promise((r) => setImmediate(r));
      expect(polls(), `no poll before 5 s (tick ${tick})`).toBe(tick - 1);
      await vi.advanceTimersByTimeAsync(1);
      await until(() => sleeps.length === tick + 1, `sleep ${tick + 1}`);
      expect(polls()).toBe(tick);
    }
    expect(settled).toBe(false);

    const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
      token: env.org.clientKey,
    });
    await env.decide(st.json().approval.approval_id, { decision: "approve" });
    await vi.advanceTimersByTimeAsync(5000);
    const decision = await pending;
    expect(decision).toMatchObject({ policy_decision: "allow", decision_source: "human_approval" });
    expect(polls()).toBe(5);
    expect(sleeps).toEqual([5000, 5000, 5000, 5000, 5000]);
    vi.useRealTimers();
    await chain.exit();
  });
});
