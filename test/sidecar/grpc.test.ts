/**
 * The sidecar's gRPC contract against the real service (PostgreSQL) and a real HTTP tool:
 * every decision branch, approvals, deadlines, cancellation, bad input, outcomes and receipts.
 */
import { createHash } from "node:crypto";
import type { ClientUnaryCall } from "@grpc/grpc-js";
import { status } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Decision__Output } from "../../sidecar/generated/tollgate/v1/Decision.js";
import { structToJson } from "../../sidecar/wire/struct.js";
import type { SignedReceipt } from "../../src/receipts/schema.js";
import { expectFailure, type Stack, startStack } from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

describe("sidecar gRPC ToolGateway", () => {
  let s: Stack;

  beforeAll(async () => {
    s = await startStack({ slug: "grpc-org" });
    const p = await s.admin("PUT", "/v1/admin/organizations/grpc-org/policies/rules", {
      config: {
        custom_rules: [
          {
            name: "no-drop",
            match: { action_name: "drop_table" },
            outcome: "deny",
            reason: "dropping tables is forbidden",
          },
          {
            name: "flag-export",
            match: { action_name: "export_data" },
            outcome: "allow_with_flag",
            reason: "exports are reviewed later",
          },
        ],
      },
    });
    expect(p.statusCode, p.body).toBeLessThan(300);
  });
  afterAll(async () => s?.close());

  const invoke: Stack["invoke"] = (req, opts) => s.invoke(req, opts);
  const toolCalls = (action: string) =>
    s.tools.calls.filter((c) => c.headers["x-tollgate-action-name"] === action);

  it("allow: forwards the payload unchanged, returns the result and reports the outcome into the receipt", async () => {
    const chainId = await s.openChain("allow-path", { ticket: "T-1", attempt: 2 });
    const payload = {
      path: "/etc/motd",
      api_key: "sk_live_abcdef",
      nested: { list: [1, "two", true, null] },
    };
    const r = await invoke({ chain_id: chainId, action_name: "read_file", payload, upstream: "tools" });
    expect(r.decision).toMatchObject({
      policy_decision: "allow",
      decision_source: "backend_evaluation",
      flagged: false,
      chain_id: chainId,
      category: "default",
      sequence: 1,
    });
    expect(r.decision?.event_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.forwarded).toBe(true);
    expect(r.upstream_status).toBe(200);
    expect(r.upstream_error).toBe(false);
    expect(JSON.parse(r.result_json)).toEqual({ echo: payload, tool: "read_file" });

    const [call] = toolCalls("read_file");
    expect(call?.body).toEqual(payload); // unchanged, secrets included: the tool needs them
    expect(call?.headers["x-tollgate-chain-id"]).toBe(chainId);
    expect(call?.headers["x-tollgate-event-id"]).toBe(r.decision?.event_id);
    expect(call?.headers["x-tollgate-agent-name"]).toBe("worker");

    const stored = await s.storedChain(chainId);
    expect((stored.events[0]!.payload as Record<string, unknown>).api_key).not.toBe("sk_live_abcdef"); // sanitized

    const done = await s.rpc<Record<string, string>>("CompleteChain", { chain_id: chainId });
    expect(done).toMatchObject({ chain_id: chainId, status: "completed" });
    expect(done.receipt_number).toMatch(/^PR-\d{4}-\d{5}$/);
    const { receipt } = await s.rpc<{ receipt: Parameters<typeof structToJson>[0] }>("GetReceipt", {
      chain_id: chainId,
    });
    const body = structToJson(receipt) as unknown as SignedReceipt;
    expect(body.receipt_id).toBe(done.receipt_id);
    expect(body.metadata).toEqual({ ticket: "T-1", attempt: 2 });
    expect(body.events_summary).toHaveLength(1);
    expect(body.events_summary[0]!.outcome).toMatchObject({
      status: "success",
      error_class: null,
      result_sha256: sha256(r.result_json),
    });
    expect(body.events_summary[0]!.outcome!.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("allow_with_flag: forwards and shows the flag to the caller", async () => {
    const chainId = await s.openChain();
    const r = await invoke({
      chain_id: chainId,
      action_name: "export_data",
      payload: { table: "users" },
      upstream: "tools",
    });
    expect(r.decision).toMatchObject({
      policy_decision: "allow_with_flag",
      flagged: true,
      policy_name: "flag-export",
      decision_reason: expect.stringContaining("exports are reviewed later"),
    });
    expect(r.forwarded).toBe(true);
    expect(toolCalls("export_data")).toHaveLength(1);
  });

  it("record only: without an upstream the action is decided and recorded, nothing forwarded", async () => {
    const chainId = await s.openChain();
    const r = await invoke({
      chain_id: chainId,
      action_type: "llm_call",
      action_name: "gpt",
      payload: { input_tokens: 10 },
    });
    expect(r.forwarded).toBe(false);
    expect(r.result_json).toBe("");
    expect(r.decision?.policy_decision).toBe("allow");
    const stored = await s.storedChain(chainId);
    expect(stored.events.map((e) => [e.action_type, e.action_name])).toEqual([["llm_call", "gpt"]]);
  });

  it("deny: PERMISSION_DENIED with the decision in tollgate-decision-bin; nothing forwarded", async () => {
    const chainId = await s.openChain();
    const err = await expectFailure(
      invoke({ chain_id: chainId, action_name: "drop_table", payload: { table: "x" }, upstream: "tools" }),
    );
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(err.errorCode).toBe("ACTION_DENIED");
    expect(err.details).toContain("dropping tables is forbidden");
    expect(err.decision).toMatchObject({
      policy_decision: "deny",
      policy_name: "no-drop",
      decision_source: "backend_evaluation",
      chain_id: chainId,
    });
    expect(err.decision?.event_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(toolCalls("drop_table")).toHaveLength(0);
    // the chain stays usable
    const ok = await invoke({ chain_id: chainId, action_name: "read_file", upstream: "tools" });
    expect(ok.decision?.policy_decision).toBe("allow");
  });

  it("require approval → approved: blocks until the approver decides, then forwards", async () => {
    const chainId = await s.openChain();
    const pending = invoke({
      chain_id: chainId,
      action_name: "pay",
      payload: { amount_usd: 9000 },
      upstream: "tools",
    });
    const approvalId = await s.awaitPendingApproval(chainId);
    await sleep(300); // several poll intervals: still waiting, nothing forwarded
    expect(toolCalls("pay")).toHaveLength(0);
    await s.decide(approvalId, "approve", "budget ok");
    const r = await pending;
    expect(r.decision).toMatchObject({
      policy_decision: "allow",
      decision_source: "human_approval",
      approval_id: approvalId,
      category: "financial",
    });
    expect(r.forwarded).toBe(true);
    expect(toolCalls("pay").map((c) => c.body)).toEqual([{ amount_usd: 9000 }]);

    const current = await s.rpc<Decision__Output>("GetDecision", {
      chain_id: chainId,
      event_id: r.decision?.event_id,
    });
    expect(current).toMatchObject({
      policy_decision: "allow",
      decision_source: "human_approval",
      approval_id: approvalId,
    });
  });

  it("require approval → human denial: PERMISSION_DENIED with the reviewer's notes; nothing forwarded", async () => {
    const chainId = await s.openChain();
    const pending = expectFailure(
      invoke({ chain_id: chainId, action_name: "refund", payload: { amount_usd: 8000 }, upstream: "tools" }),
    );
    const approvalId = await s.awaitPendingApproval(chainId);
    await s.decide(approvalId, "deny", "not this quarter");
    const err = await pending;
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(err.errorCode).toBe("ACTION_DENIED");
    expect(err.details).toContain("not this quarter");
    expect(err.decision).toMatchObject({
      policy_decision: "deny",
      decision_source: "human_approval",
      approval_id: approvalId,
    });
    expect(toolCalls("refund")).toHaveLength(0);
  });

  it("require approval → backend timeout: PERMISSION_DENIED saying it was not resolved within the timeout", async () => {
    const chainId = await s.openChain();
    const pending = expectFailure(
      invoke({ chain_id: chainId, action_name: "wire", payload: { amount_usd: 7000 }, upstream: "tools" }),
    );
    await s.awaitPendingApproval(chainId);
    s.t.clock.advance(25 * 3600_000); // past the 24 h approval timeout of the organization
    await s.t.runJobs();
    const err = await pending;
    expect(err.code).toBe(status.PERMISSION_DENIED);
    expect(err.details).toContain("not resolved within");
    expect(err.decision?.policy_decision).toBe("deny");
    expect(toolCalls("wire")).toHaveLength(0);
  });

  it("deadline: DEADLINE_EXCEEDED while waiting; a later approval forwards nothing", async () => {
    const chainId = await s.openChain();
    const err = await expectFailure(
      invoke(
        { chain_id: chainId, action_name: "payout", payload: { amount_usd: 6000 }, upstream: "tools" },
        { deadlineMs: 1500 },
      ),
    );
    expect(err.code).toBe(status.DEADLINE_EXCEEDED);
    const approvalId = await s.awaitPendingApproval(chainId);
    await s.decide(approvalId, "approve");
    await sleep(500); // five poll intervals
    expect(toolCalls("payout")).toHaveLength(0);
    await waitFor(() => s.sidecar.governor.inflight === 0);
    const metrics = await (await fetch(`${s.sidecar.httpUrl}/metrics`)).text();
    expect(metrics).toMatch(
      /tollgate_sidecar_invocations_total\{decision="deadline_exceeded",surface="grpc"\} 1/,
    );
  });

  it("cancellation: the sidecar stops waiting and forwards nothing", async () => {
    const chainId = await s.openChain();
    let call: ClientUnaryCall | undefined;
    const failed = expectFailure(
      invoke(
        { chain_id: chainId, action_name: "transfer", payload: { amount_usd: 6500 }, upstream: "tools" },
        { onCall: (c) => (call = c) },
      ),
    );
    const approvalId = await s.awaitPendingApproval(chainId);
    expect(s.sidecar.governor.inflight).toBe(1);
    call!.cancel();
    expect((await failed).code).toBe(status.CANCELLED);
    await waitFor(() => s.sidecar.governor.inflight === 0); // stopped waiting
    await s.decide(approvalId, "approve");
    await sleep(500);
    expect(toolCalls("transfer")).toHaveLength(0);
  });

  it("an earlier approval still pending: FAILED_PRECONDITION APPROVAL_PENDING", async () => {
    const chainId = await s.openChain();
    await expectFailure(
      invoke(
        { chain_id: chainId, action_name: "pay", payload: { amount_usd: 9999 }, upstream: "tools" },
        { deadlineMs: 800 },
      ),
    );
    const err = await expectFailure(
      invoke({ chain_id: chainId, action_name: "read_file", upstream: "tools" }),
    );
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.errorCode).toBe("APPROVAL_PENDING");
  });

  it("kill switch: FAILED_PRECONDITION with the decision; nothing forwarded", async () => {
    const chainId = await s.openChain();
    const toggle = (active: boolean) =>
      s.admin("POST", "/v1/admin/organizations/grpc-org/kill-switch", {
        active,
        reason: active ? "incident 7" : null,
      });
    expect((await toggle(true)).statusCode).toBe(200);
    try {
      const err = await expectFailure(
        invoke({ chain_id: chainId, action_name: "lookup", upstream: "tools" }),
      );
      expect(err.code).toBe(status.FAILED_PRECONDITION);
      expect(err.errorCode).toBe("KILL_SWITCH");
      expect(err.details).toContain("incident 7");
      expect(err.decision).toMatchObject({ kill_switch_active: true, policy_decision: "deny" });
      expect(toolCalls("lookup")).toHaveLength(0);
    } finally {
      expect((await toggle(false)).statusCode).toBe(200);
    }
    expect((await invoke({ chain_id: chainId, action_name: "lookup", upstream: "tools" })).forwarded).toBe(
      true,
    );
  });

  it("auto-pause: FAILED_PRECONDITION AUTO_PAUSED at the runaway limit", async () => {
    const put = await s.admin("PUT", "/v1/admin/organizations/grpc-org/policies/runaway", {
      config: { runaway_limits: { max_events: 2 } },
    });
    expect(put.statusCode, put.body).toBeLessThan(300);
    try {
      const chainId = await s.openChain();
      await invoke({ chain_id: chainId, action_name: "step", upstream: "tools" });
      await invoke({ chain_id: chainId, action_name: "step", upstream: "tools" });
      const err = await expectFailure(invoke({ chain_id: chainId, action_name: "step", upstream: "tools" }));
      expect(err.code).toBe(status.FAILED_PRECONDITION);
      expect(err.errorCode).toBe("AUTO_PAUSED");
      expect(err.decision).toMatchObject({ auto_paused: true });
      expect(toolCalls("step")).toHaveLength(2);
    } finally {
      await s.admin("DELETE", "/v1/admin/organizations/grpc-org/policies/runaway");
    }
  });

  it("bad input: INVALID_ARGUMENT naming the field, and no event recorded", async () => {
    const chainId = await s.openChain();
    const cases: [Record<string, unknown>, string][] = [
      [{ chain_id: chainId, agent_name: "", action_name: "read_file", upstream: "tools" }, "agent_name"],
      [{ chain_id: chainId, action_name: "", upstream: "tools" }, "action_name"],
      [{ chain_id: chainId, action_name: "read_file", upstream: "nope" }, "upstream"],
      [
        {
          chain_id: chainId,
          action_name: "read_file",
          upstream: "tools",
          payload: { blob: "x".repeat(300 * 1024) },
        },
        "payload",
      ],
      [{ chain_id: "", action_name: "read_file" }, "chain_id"],
      [{ chain_id: "not-a-uuid", action_name: "read_file" }, "chain_id"],
    ];
    for (const [req, field] of cases) {
      const err = await expectFailure(invoke(req));
      expect(err.code, field).toBe(status.INVALID_ARGUMENT);
      expect(err.errorCode).toBe("INVALID_ARGUMENT");
      expect(err.details.startsWith(`${field}:`), err.details).toBe(true);
    }
    expect((await s.storedChain(chainId)).events).toHaveLength(0);
    expect(s.tools.calls.filter((c) => c.headers["x-tollgate-chain-id"] === chainId)).toHaveLength(0);
    const open = await expectFailure(s.rpc("OpenChain", { name: "" }));
    expect(open.code).toBe(status.INVALID_ARGUMENT);
    expect(open.details).toMatch(/^name:/);
  });

  it("upstream errors: a tool error is returned and reported; a timeout is UNAVAILABLE with the decision", async () => {
    const chainId = await s.openChain();
    const broken = await invoke({ chain_id: chainId, action_name: "flaky", upstream: "fail" });
    expect(broken).toMatchObject({ forwarded: true, upstream_error: true, upstream_status: 502 });
    expect(JSON.parse(broken.result_json)).toEqual({ error: "tool broke" });

    const text = await invoke({ chain_id: chainId, action_name: "words", upstream: "text" });
    expect(JSON.parse(text.result_json)).toBe("plain words");

    const slow = await expectFailure(
      invoke({ chain_id: chainId, action_name: "sleepy", payload: { ms: 2000 }, upstream: "slow" }),
    );
    expect(slow.code).toBe(status.UNAVAILABLE);
    expect(slow.errorCode).toBe("UPSTREAM_TIMEOUT");
    expect(slow.decision?.policy_decision).toBe("allow");

    await s.rpc("CompleteChain", {
      chain_id: chainId,
      failure: { mode: "AgentCrashed", message: "gave up" },
    });
    const { receipt } = await s.rpc<{ receipt: Parameters<typeof structToJson>[0] }>("GetReceipt", {
      chain_id: chainId,
    });
    const body = structToJson(receipt) as unknown as SignedReceipt;
    expect(body.status).toBe("failed");
    expect(body.failure).toEqual({ mode: "AgentCrashed", message: "gave up" });
    expect(
      body.events_summary.map((e) => [e.action_name, e.outcome?.status, e.outcome?.error_class]),
    ).toEqual([
      ["flaky", "error", "HTTP 502"],
      ["words", "success", null],
      ["sleepy", "error", "Timeout"],
    ]);

    const late = await expectFailure(
      invoke({ chain_id: chainId, action_name: "read_file", upstream: "tools" }),
    );
    expect(late.code).toBe(status.FAILED_PRECONDITION);
    expect(late.errorCode).toBe("CHAIN_COMPLETED");
    const again = await expectFailure(s.rpc("CompleteChain", { chain_id: chainId }));
    expect(again.code).toBe(status.FAILED_PRECONDITION);
  });

  it("unknown chains and missing receipts are NOT_FOUND", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    const err = await expectFailure(invoke({ chain_id: unknown, action_name: "read_file" }));
    expect(err.code).toBe(status.NOT_FOUND);
    const chainId = await s.openChain();
    const noReceipt = await expectFailure(s.rpc("GetReceipt", { chain_id: chainId }));
    expect(noReceipt.code).toBe(status.NOT_FOUND);
    const noEvent = await expectFailure(s.rpc("GetDecision", { chain_id: chainId, event_id: unknown }));
    expect(noEvent.code).toBe(status.NOT_FOUND);
  });

  it("concurrent invokes on one chain are decided in order and all succeed", async () => {
    const chainId = await s.openChain();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        invoke({ chain_id: chainId, action_name: `parallel_${i}`, upstream: "tools" }),
      ),
    );
    expect(results.every((r) => r.forwarded && r.decision?.policy_decision === "allow")).toBe(true);
    // One connection delivers the calls in the order they were made; the chain's decision
    // queue records them in that order: the i-th call is the i-th event, with its own id.
    const { events } = await s.storedChain(chainId);
    expect(events.map((e) => [e.sequence, e.action_name])).toEqual(
      results.map((_, i) => [i + 1, `parallel_${i}`]),
    );
    expect(results.map((r) => r.decision?.event_id)).toEqual(events.map((e) => e.event_id));
  });
});

async function waitFor(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await sleep(20);
  }
}
