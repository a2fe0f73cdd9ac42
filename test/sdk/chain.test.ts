/**
 * Chain against the real service over real HTTP: lifecycle, decisions, every error path of
 * recordAgentAction, and the approval wait (virtual sleep and clock; the HTTP stays real).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ActionDeniedError,
  Chain,
  ChainAutoPausedError,
  ChainTimeoutError,
  createConfig,
  InvalidArgumentError,
  PolicyViolationError,
  ServiceApiError,
  ServiceKillSwitchError,
  ServicePolicyError,
  withChain,
} from "../../src/sdk/index.js";
import { makeTicker, type SdkEnv, startSdkEnv } from "./support/env.js";
import { startProxy, type TcpProxy } from "./support/proxy.js";

let env: SdkEnv;
beforeAll(async () => {
  env = await startSdkEnv("sdk-chain");
});
afterAll(async () => env?.close());

/** A payment by an agent named after the chain (an exception granted in one test stays out of the others). */
const pay = (chain: Chain, amount: number, opts: { signal?: AbortSignal } = {}) =>
  chain.recordAgentAction(
    {
      agentName: `payer-${chain.name}`,
      actionType: "tool_call",
      actionName: "pay_invoice",
      payload: { amount_usd: amount },
    },
    opts,
  );

describe("Chain lifecycle", () => {
  it("enter creates the chain, exit completes it and receipt() returns the signed receipt", async () => {
    const config = env.config({ environment: "staging" });
    const chain = new Chain("lifecycle-normal", { metadata: { ticket: "T-1" }, config });
    expect(chain.chainId).toBeNull();
    expect(await chain.receipt()).toBeNull();
    await chain.enter();
    expect(chain.chainId).toMatch(/^[0-9a-f-]{36}$/);
    const d = await chain.recordAgentAction({
      agentName: "reader",
      actionType: "tool_call",
      actionName: "read_file",
      payload: { path: "/etc/hosts" },
    });
    expect(d).toMatchObject({
      policy_decision: "allow",
      decision_source: "backend_evaluation",
      sequence: 1,
      category: "default",
      evaluation_mode: "enforce",
    });
    expect(d.event_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await chain.receipt()).toBeNull();
    const done = await chain.exit();
    expect(done).toMatchObject({ chain_id: chain.chainId, status: "completed" });
    expect(done?.receipt_number).toMatch(/^PR-\d{4}-\d{5}$/);
    expect(await chain.exit()).toEqual(done);
    const receipt = await chain.receipt();
    expect(receipt?.receipt_number).toBe(done?.receipt_number);
    expect(receipt?.signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(receipt?.metadata).toEqual({ ticket: "T-1" });
    expect(receipt?.total_actions).toBe(1);
    const stored = await env.stored(chain.chainId!);
    expect(stored.environment).toBe("staging");
    await expect(
      chain.recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "x" }),
    ).rejects.toThrow(/completed/);
  });

  it("await using completes the chain at the end of the scope", async () => {
    const config = env.config();
    let id: string | null = null;
    {
      await using chain = await new Chain("lifecycle-using", { config }).enter();
      id = chain.chainId;
      await chain.recordAgentAction({
        agentName: "reader",
        actionType: "tool_call",
        actionName: "read_file",
      });
    }
    expect((await env.stored(id!)).status).toBe("completed");
  });

  it("withChain completes normally, and marks the chain failed when the callback throws", async () => {
    const config = env.config();
    let okId = "";
    const value = await withChain("lifecycle-with", { config }, async (chain) => {
      okId = chain.chainId!;
      return 42;
    });
    expect(value).toBe(42);
    expect((await env.stored(okId)).status).toBe("completed");

    let failedChain: Chain | null = null;
    const boom = new RangeError("quota exceeded for sk_live_abcdef");
    await expect(
      withChain("lifecycle-fail", { config }, async (chain) => {
        failedChain = chain;
        await chain.recordAgentAction({
          agentName: "reader",
          actionType: "tool_call",
          actionName: "read_file",
        });
        throw boom;
      }),
    ).rejects.toBe(boom);
    const stored = await env.stored(failedChain!.chainId!);
    expect(stored.status).toBe("failed");
    // A secret inside the message is redacted word by word (README "Secrets outside the payload").
    expect(stored.failure).toEqual({ mode: "RangeError", message: "quota exceeded for [REDACTED]" });
    const receipt = await failedChain!.receipt();
    expect(receipt?.status).toBe("failed");
    expect(receipt?.failure).toEqual({ mode: "RangeError", message: "quota exceeded for [REDACTED]" });
  });

  it("exit(error) marks the chain failed; a secret-looking message is redacted", async () => {
    const chain = await new Chain("lifecycle-exit-error", { config: env.config() }).enter();
    const res = await chain.exit(new Error("ghp_0123456789abcdef token leaked"));
    expect(res?.status).toBe("failed");
    expect((await env.stored(chain.chainId!)).failure).toEqual({
      mode: "Error",
      message: "[REDACTED] token leaked",
    });
  });

  it("sends init's explicit policy settings, the chain's policy_config and addFinancialThreshold", async () => {
    const config = env.config({ highRiskAgents: ["rogue"], externalDomainsAllowlist: ["partner.example"] });
    const chain = new Chain("lifecycle-policy", { config, policyConfig: { bulk_operation_threshold: 50 } });
    chain.addFinancialThreshold(250, ["cfo@example.com"]);
    await chain.enter();
    expect(() => chain.addFinancialThreshold(1)).toThrow(/before the chain starts/);
    const stored = await env.stored(chain.chainId!);
    expect(stored.policy_config).toEqual({
      high_risk_agents: ["rogue"],
      external_domains_allowlist: ["partner.example"],
      bulk_operation_threshold: 50,
      financial_approval_threshold_usd: 250,
      financial_notify: ["cfo@example.com"],
    });
    // The chain threshold is enforced by the backend: 300 > 250 requires approval.
    const ticker = makeTicker();
    const gated = new Chain("lifecycle-policy-2", {
      config: env.config({}, ticker),
    }).addFinancialThreshold(250);
    await gated.enter();
    ticker.onTick = async () => {
      const st = await env.t.call("GET", `/v1/chains/${gated.chainId}/approval-status`, {
        token: env.org.clientKey,
      });
      await env.decide(st.json().approval.approval_id, { decision: "approve" });
    };
    const d = await pay(gated, 300);
    expect(d).toMatchObject({ policy_decision: "allow", decision_source: "human_approval" });
    await chain.exit();
    await gated.exit();
  });

  it("rejects invalid arguments with errors naming the field, before any request", async () => {
    const config = env.config();
    expect(() => new Chain("", { config })).toThrow(/name/);
    expect(() => new Chain("x", { config, policyConfig: { financial_approval_threshold_usd: -1 } })).toThrow(
      /policyConfig\.financial_approval_threshold_usd/,
    );
    expect(() => new Chain("x", { config, policyConfig: { no_such_key: 1 } as never })).toThrow(
      /policyConfig/,
    );
    const chain = new Chain("x", { config });
    expect(() => chain.addFinancialThreshold(-5)).toThrow(/usd/);
    expect(() => chain.addFinancialThreshold(5, ["not-an-email"])).toThrow(/notify/);
    await expect(
      chain.recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "x" }),
    ).rejects.toThrow(/not entered/);
    await chain.enter();
    await expect(
      chain.recordAgentAction({ agentName: "", actionType: "tool_call", actionName: "x" }),
    ).rejects.toThrow(/agentName/);
    await expect(
      chain.recordAgentAction({
        agentName: "a",
        actionType: "tool_call",
        actionName: "x",
        payload: [] as never,
      }),
    ).rejects.toThrow(/action\.payload/);
    // One shape: an action object (unknown keys refused, named as written) and an options object.
    const snake = await chain
      .recordAgentAction({ agent_name: "a", actionType: "tool_call", actionName: "x" } as never)
      .catch((e) => e);
    expect(snake).toBeInstanceOf(InvalidArgumentError);
    expect(snake).toBeInstanceOf(TypeError);
    expect(snake.operation).toBe("recordAgentAction");
    expect(snake.message).toMatch(/^recordAgentAction: /);
    expect(snake.message).toContain("action.agent_name: unknown field (did you mean agentName?");
    expect(snake.issues.map((i: { field: string }) => i.field)).toEqual(
      expect.arrayContaining(["action.agentName", "action.agent_name"]),
    );
    const positional = chain.recordAgentAction("a" as never, "tool_call" as never);
    await expect(positional).rejects.toThrow(/^recordAgentAction: action: /);
    await expect(
      chain.recordAgentAction({ agentName: "a", actionType: "tool_call", actionName: "x" }, {
        sigal: AbortSignal.abort(),
      } as never),
    ).rejects.toThrow(/options\.sigal: unknown field/);
    expect((await env.stored(chain.chainId!)).events).toHaveLength(0);
    await chain.exit();
  });
});

describe("decisions and errors of recordAgentAction", () => {
  it("returns a flagged allow in shadow mode with the decision enforce mode would have made", async () => {
    await withChain(
      "shadow",
      { config: env.config(), policyConfig: { evaluation_mode: "shadow" } },
      async (c) => {
        const d = await pay(c, 9000);
        expect(d).toMatchObject({
          policy_decision: "allow_with_flag",
          evaluation_mode: "shadow",
          shadow_decision: "require_approval",
          category: "financial",
          approval_id: null,
        });
      },
    );
  });

  it("policy deny raises ActionDeniedError; the chain stays open", async () => {
    const chain = await new Chain("deny", { config: env.config() })
      .addFinancialThreshold(1000, null, true)
      .enter();
    const err = await pay(chain, 1500).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err).toBeInstanceOf(ServicePolicyError);
    expect(err.decisionSource).toBe("backend_evaluation");
    expect(err.policyName).toBe("financial_deny_threshold");
    expect(err.condition).toMatch(/1500|1,500/);
    expect(err.decision.policy_decision).toBe("deny");
    expect(err.decision.event_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await pay(chain, 10)).policy_decision).toBe("allow");
    const stored = await env.stored(chain.chainId!);
    expect(stored.events.map((e) => e.decision.policy_decision)).toEqual(["deny", "allow"]);
    await chain.exit();
  });

  it("kill switch raises ServiceKillSwitchError", async () => {
    const chain = await new Chain("kill", { config: env.config() }).enter();
    const toggle = (active: boolean) =>
      env.t.call("POST", `/v1/admin/organizations/${env.org.slug}/kill-switch`, {
        token: env.t.adminToken,
        body: { active, reason: active ? "incident 42" : null },
      });
    expect((await toggle(true)).statusCode).toBe(200);
    try {
      const err = await chain
        .recordAgentAction({ agentName: "reader", actionType: "tool_call", actionName: "read_file" })
        .catch((e) => e);
      expect(err).toBeInstanceOf(ServiceKillSwitchError);
      expect(err).toBeInstanceOf(ServicePolicyError);
      expect(err.message).toContain("incident 42");
      expect(err.decision).toMatchObject({
        kill_switch_active: true,
        policy_decision: "deny",
        policy_name: "kill_switch",
      });
    } finally {
      expect((await toggle(false)).statusCode).toBe(200);
    }
    expect(
      (
        await chain.recordAgentAction({
          agentName: "reader",
          actionType: "tool_call",
          actionName: "read_file",
        })
      ).policy_decision,
    ).toBe("allow");
    await chain.exit();
  });

  it("auto-pause raises ChainAutoPausedError, at the limit and for every later action", async () => {
    const chain = await new Chain("runaway", {
      config: env.config(),
      policyConfig: { runaway_limits: { max_events: 2 } },
    }).enter();
    await chain.recordAgentAction({ agentName: "looper", actionType: "tool_call", actionName: "step" });
    await chain.recordAgentAction({ agentName: "looper", actionType: "tool_call", actionName: "step" });
    const err = await chain
      .recordAgentAction({ agentName: "looper", actionType: "tool_call", actionName: "step" })
      .catch((e) => e);
    expect(err).toBeInstanceOf(ChainAutoPausedError);
    expect(err).not.toBeInstanceOf(ServicePolicyError);
    expect(err.decision).toMatchObject({ auto_paused: true, policy_name: "runaway_limits" });
    expect(err.message).toMatch(/max_events/);
    const later = await chain
      .recordAgentAction({ agentName: "looper", actionType: "tool_call", actionName: "step" })
      .catch((e) => e);
    expect(later).toBeInstanceOf(ChainAutoPausedError);
    expect(later.decision).toBeNull();
    expect((await env.stored(chain.chainId!)).status).toBe("paused");
    expect((await chain.exit())?.status).toBe("completed");
  });
});

describe("approval gates", () => {
  const gatedChain = async (name: string, options = {}) => {
    const ticker = makeTicker();
    const chain = await new Chain(name, { config: env.config(options, ticker) }).enter();
    const approvalId = async () => {
      const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
        token: env.org.clientKey,
      });
      return st.json().approval.approval_id as string;
    };
    return { ticker, chain, approvalId };
  };

  it("blocks on require_approval and resumes when a reviewer approves (with an exception)", async () => {
    const { ticker, chain, approvalId } = await gatedChain("approve");
    let statusWhileWaiting = "";
    ticker.onTick = async (n) => {
      const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
        token: env.org.clientKey,
      });
      statusWhileWaiting = st.json().chain_status;
      if (n === 3)
        await env.decide(await approvalId(), { decision: "approve", notes: "ok", exception_duration: "1h" });
    };
    const d = await pay(chain, 7500);
    expect(statusWhileWaiting).toBe("pending_approval");
    expect(ticker.sleeps).toEqual([5000, 5000, 5000]);
    expect(d).toMatchObject({
      policy_decision: "allow",
      decision_source: "human_approval",
      policy_name: "financial_approval_threshold",
      category: "financial",
    });
    expect(d.approval_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.exception_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(d.decision_reason).toContain("ok");
    // The exception covers the same agent and action type: no new gate.
    const again = await pay(chain, 8000);
    expect(again).toMatchObject({
      policy_decision: "allow_with_flag",
      exception_id: d.exception_id,
    });
    expect(ticker.sleeps).toHaveLength(3);
    await chain.exit();
  });

  it("a reviewer's denial raises ActionDeniedError with the notes as condition; the chain continues", async () => {
    const { ticker, chain, approvalId } = await gatedChain("human-deny");
    ticker.onTick = async (n) => {
      if (n === 1)
        await env.decide(await approvalId(), { decision: "deny", notes: "Vendor not on the approved list" });
    };
    const err = await pay(chain, 7500).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.decisionSource).toBe("human_approval");
    expect(err.condition).toBe("Vendor not on the approved list");
    expect(err.policyName).toBe("financial_approval_threshold");
    expect(err.decision.approval_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      (
        await chain.recordAgentAction({
          agentName: "reader",
          actionType: "tool_call",
          actionName: "read_file",
        })
      ).policy_decision,
    ).toBe("allow");
    await chain.exit();
  });

  it("a backend approval timeout raises ActionDeniedError whose condition contains 'not resolved within'", async () => {
    const { ticker, chain } = await gatedChain("backend-timeout");
    ticker.onTick = (n) => {
      if (n === 2) env.t.clock.advance(24 * 3600_000 + 1000);
    };
    const err = await pay(chain, 7500).catch((e) => e);
    expect(err).toBeInstanceOf(ActionDeniedError);
    expect(err.condition).toContain("not resolved within");
    expect(err.decisionSource).toBe("backend_evaluation");
    expect(ticker.sleeps).toEqual([5000, 5000]);
    await chain.exit();
  });

  it("the local wait window raises ChainTimeoutError; the gate stays closed on the backend", async () => {
    // 0.01 h = 36 s: the 8th poll (at 40 s of virtual time) is the first past the window.
    const { ticker, chain } = await gatedChain("local-timeout", { defaultApprovalTimeoutHours: 0.01 });
    const err = await pay(chain, 7500).catch((e) => e);
    expect(err).toBeInstanceOf(ChainTimeoutError);
    expect(err.timeoutHours).toBe(0.01);
    expect(ticker.sleeps).toEqual(Array(8).fill(5000));
    const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
      token: env.org.clientKey,
    });
    expect(st.json().approval.status).toBe("pending");
    const next = await chain
      .recordAgentAction({ agentName: "reader", actionType: "tool_call", actionName: "read_file" })
      .catch((e) => e);
    expect(next).toBeInstanceOf(PolicyViolationError);
    expect(next.code).toBe("TG_ERR_APPROVAL_PENDING");
    await chain.exit();
    const after = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
      token: env.org.clientKey,
    });
    expect(after.json().approval.status).toBe("cancelled");
  });

  it("an AbortSignal stops the wait with the signal's reason", async () => {
    const { ticker, chain } = await gatedChain("abort");
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    ticker.onTick = (n) => {
      if (n === 2) controller.abort(reason);
    };
    await expect(pay(chain, 7500, { signal: controller.signal })).rejects.toBe(reason);
    expect(ticker.sleeps).toEqual([5000, 5000]);
    const pre = AbortSignal.abort();
    const err = await chain
      .recordAgentAction(
        { agentName: "r", actionType: "tool_call", actionName: "x", payload: {} },
        { signal: pre },
      )
      .catch((e) => e);
    expect(err.name).toBe("AbortError");
    await chain.exit();
  });

  it("transient errors during polling are retried on the next tick", async () => {
    const proxy: TcpProxy = await startProxy(env.t.url);
    try {
      const ticker = makeTicker();
      const chain = await new Chain("transient", {
        config: env.config({ backendUrl: proxy.url }, ticker),
      }).enter();
      let approval = "";
      ticker.onTick = async (n) => {
        if (n === 1) {
          const st = await env.t.call("GET", `/v1/chains/${chain.chainId}/approval-status`, {
            token: env.org.clientKey,
          });
          approval = st.json().approval.approval_id;
          proxy.setDown(true);
        }
        if (n === 3) {
          await env.decide(approval, { decision: "approve" });
          proxy.setDown(false);
        }
      };
      const d = await pay(chain, 7500);
      expect(d.decision_source).toBe("human_approval");
      expect(ticker.sleeps).toEqual([5000, 5000, 5000]);
      // Polls 1 and 2 never reached the service; poll 3 did.
      expect(proxy.count(/approval-status/)).toBe(1);
      await chain.exit();
    } finally {
      await proxy.close();
    }
  });

  it("a permanent API error during polling is not retried", async () => {
    // Its own key, so that revoking it does not affect the other tests.
    const created = await env.t.call("POST", `/v1/admin/organizations/${env.org.slug}/api-keys`, {
      token: env.t.adminToken,
      body: { name: "sdk-permanent", role: "client" },
    });
    const { key_id: keyId, api_key: apiKey } = created.json();
    const ticker = makeTicker();
    const chain = await new Chain("permanent", {
      config: createConfig(apiKey, { backendUrl: env.t.url }, ticker),
    }).enter();
    ticker.onTick = async (n) => {
      if (n === 1) {
        await env.t.call("POST", `/v1/admin/organizations/${env.org.slug}/api-keys/${keyId}/revoke`, {
          token: env.t.adminToken,
        });
      }
    };
    const err = await pay(chain, 7500).catch((e) => e);
    expect(err).toBeInstanceOf(ServiceApiError);
    expect(err.statusCode).toBe(401);
    expect(ticker.sleeps).toEqual([5000]);
    const done = await env.t.call("POST", `/v1/chains/${chain.chainId}/complete`, {
      token: env.org.clientKey,
    });
    expect(done.statusCode).toBe(200);
  });
});
