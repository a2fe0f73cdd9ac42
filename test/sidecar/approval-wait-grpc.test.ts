/**
 * Approval waits through the gRPC face with a real @grpc/grpc-js client (issue 21): a client
 * with a 2 s deadline re-attaches with its idempotency key and gets the approved result;
 * WatchInvoke streams pending → approved → result (and pending → denied → PERMISSION_DENIED);
 * errors carry the standard grpc-status-details-bin (google.rpc.Status with ErrorInfo and
 * BadRequest) next to tollgate-error-code. Real service on real PostgreSQL, real HTTP tool.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvokeUpdate__Output } from "../../sidecar/generated/tollgate/v1/InvokeUpdate.js";
import { decodeStatusDetails } from "../../sidecar/wire/status-details.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { expectFailure, type Stack, startStack } from "./harness.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const APPROVE_AFTER_MS = 8000;

describe("approval waits through the gRPC face", () => {
  let s: Stack;

  beforeAll(async () => {
    s = await startStack({
      slug: "grpc-wait-org",
      config: { servicePublicUrl: "https://tollgate.example.com" },
    });
    const p = await s.admin("PUT", "/v1/admin/organizations/grpc-wait-org/policies/rules", {
      config: {
        custom_rules: [
          {
            name: "review-deploys",
            match: { action_name: "deploy" },
            outcome: "require_approval",
            reason: "deploys are reviewed",
          },
        ],
      },
    });
    expect(p.statusCode, p.body).toBeLessThan(300);
  });
  afterAll(async () => s?.close());

  const toolCalls = (action: string) =>
    s.tools.calls.filter((c) => c.headers["x-tollgate-action-name"] === action);
  const reviewUrl = (id: string) => `https://tollgate.example.com/dashboard/approvals#approval-${id}`;
  const details = (err: unknown) => {
    const bin = (err as grpc.ServiceError).metadata.get("grpc-status-details-bin")[0];
    expect(Buffer.isBuffer(bin)).toBe(true);
    return decodeStatusDetails(bin as Buffer);
  };
  /** Invoke with the idempotency key in the metadata; resolves to the response or the error. */
  const invokeWithKey = (
    chainId: string,
    key: string,
    deadlineMs: number,
    payload: Record<string, unknown>,
  ) =>
    new Promise<{ ok: true; res: Record<string, unknown> } | { ok: false; err: grpc.ServiceError }>(
      (resolve) => {
        const md = new grpc.Metadata();
        md.set("tollgate-idempotency-key", key);
        s.client.Invoke(
          {
            chain_id: chainId,
            agent_name: "worker",
            action_name: "deploy",
            payload: jsonToStruct(payload),
            upstream: "tools",
          },
          md,
          { deadline: Date.now() + deadlineMs },
          (err, res) =>
            resolve(err ? { ok: false, err } : { ok: true, res: res as unknown as Record<string, unknown> }),
        );
      },
    );

  it("a client with a 2 s deadline re-attaches with its idempotency key and gets the approved result", async () => {
    const chainId = await s.openChain("deploy-retry");
    const started = Date.now();
    const first = await invokeWithKey(chainId, "deploy-42", 2000, { service: "api", version: "1.2.3" });
    expect(first.ok).toBe(false);
    const firstErr = (first as { err: grpc.ServiceError }).err;
    expect(firstErr.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const approvalId = await s.awaitPendingApproval(chainId);

    // Another call of the chain meanwhile: APPROVAL_PENDING naming the approval, with ErrorInfo.
    const other = await expectFailure(
      s.invoke({ chain_id: chainId, action_name: "read_file", upstream: "tools" }),
    );
    expect(other.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(other.errorCode).toBe("APPROVAL_PENDING");
    expect(other.details).toContain(approvalId);
    expect(other.details).toContain(reviewUrl(approvalId));
    const otherErr = await s
      .invoke({ chain_id: chainId, action_name: "read_file", upstream: "tools" })
      .catch((e: unknown) => e);
    expect(details(otherErr)).toMatchObject({
      code: grpc.status.FAILED_PRECONDITION,
      errorInfo: {
        reason: "APPROVAL_PENDING",
        domain: "tollgate.dev",
        metadata: {
          approval_id: approvalId,
          policy_name: "review-deploys",
          review_url: reviewUrl(approvalId),
          chain_id: chainId,
        },
      },
    });

    let approved = false;
    const approving = (async () => {
      await sleep(Math.max(0, started + APPROVE_AFTER_MS - Date.now()));
      approved = true;
      await s.decide(approvalId, "approve");
    })();
    const attempts: number[] = [];
    let final: Record<string, unknown> | null = null;
    while (!final) {
      const r = await invokeWithKey(chainId, "deploy-42", 2000, { service: "api", version: "1.2.3" });
      if (r.ok) {
        // The result came only once the approver had acted.
        expect(approved).toBe(true);
        final = r.res;
      } else {
        expect(r.err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
        attempts.push(r.err.code);
        // Nothing forwarded before the approval (a forward started for a retry whose deadline
        // then passed finishes for the next retry).
        if (!approved) expect(toolCalls("deploy")).toHaveLength(0);
      }
      expect(attempts.length).toBeLessThan(10);
    }
    await approving;
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(final).toMatchObject({
      forwarded: true,
      decision: { policy_decision: "allow", decision_source: "human_approval", approval_id: approvalId },
    });
    expect(toolCalls("deploy").map((c) => c.body)).toEqual([{ service: "api", version: "1.2.3" }]);

    // The same key for a different call is refused, naming the field.
    const chain2 = await s.openChain("deploy-key-reuse");
    const a = await invokeWithKey(chain2, "k-1", 800, { service: "a" });
    expect(a.ok).toBe(false);
    const b = await invokeWithKey(chain2, "k-1", 800, { service: "b" });
    expect(b.ok).toBe(false);
    const bErr = (b as { err: grpc.ServiceError }).err;
    expect(bErr.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(details(bErr).fieldViolations).toEqual([
      expect.objectContaining({ field: "idempotency_key", reason: "INVALID_ARGUMENT" }),
    ]);
  }, 60_000);

  it("bad input carries a BadRequest field violation next to tollgate-error-code", async () => {
    const err = await s
      .invoke({ chain_id: "not-a-uuid", action_name: "deploy", upstream: "tools" })
      .catch((e: unknown) => e as grpc.ServiceError);
    expect((err as grpc.ServiceError).metadata.get("tollgate-error-code")).toEqual(["INVALID_ARGUMENT"]);
    expect(details(err)).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      errorInfo: { reason: "INVALID_ARGUMENT", domain: "tollgate.dev" },
      fieldViolations: [expect.objectContaining({ field: "chain_id" })],
    });
  });

  /** Runs WatchInvoke to its end: the messages and the final status. */
  const watch = (request: Record<string, unknown>, onUpdate?: (u: InvokeUpdate__Output) => void) =>
    new Promise<{ updates: InvokeUpdate__Output[]; error: grpc.ServiceError | null }>((resolve) => {
      const updates: InvokeUpdate__Output[] = [];
      const call = s.client.WatchInvoke({
        agent_name: "worker",
        upstream: "tools",
        ...request,
        payload: jsonToStruct((request.payload as Record<string, unknown>) ?? {}),
      });
      call.on("data", (u: InvokeUpdate__Output) => {
        updates.push(u);
        onUpdate?.(u);
      });
      call.on("error", (error: grpc.ServiceError) => resolve({ updates, error }));
      call.on("end", () => resolve({ updates, error: null }));
    });

  it("WatchInvoke reports pending (with the review URL) → approved → result, without a deadline", async () => {
    const chainId = await s.openChain("deploy-watch");
    let approving = false;
    // What the stream delivered relative to the approver's decision being sent.
    const order: string[] = [];
    const result = await watch(
      { chain_id: chainId, action_name: "deploy", payload: { service: "web" } },
      (u) => {
        order.push(u.approval ? `approval:${u.approval.status}` : "result");
        if (u.approval?.status !== "pending" || approving) return;
        approving = true;
        void sleep(APPROVE_AFTER_MS).then(() => {
          order.push("decide sent");
          return s.decide(u.approval!.approval_id, "approve");
        });
      },
    );
    expect(result.error).toBeNull();
    expect(order).toEqual(["approval:pending", "decide sent", "approval:approved", "result"]);
    const kinds = result.updates.map((u) => (u.approval ? `approval:${u.approval.status}` : "result"));
    expect(kinds).toEqual(["approval:pending", "approval:approved", "result"]);
    const pending = result.updates[0]!.approval!;
    expect(pending).toMatchObject({
      review_url: reviewUrl(pending.approval_id),
      policy_name: "review-deploys",
      reason: expect.stringContaining("deploys are reviewed"),
    });
    expect(result.updates[2]!.result).toMatchObject({
      forwarded: true,
      decision: { decision_source: "human_approval", approval_id: pending.approval_id },
    });
    expect(
      toolCalls("deploy").filter((c) => (c.body as { service?: string }).service === "web"),
    ).toHaveLength(1);
  }, 30_000);

  it("WatchInvoke: a denial is reported, then the stream ends PERMISSION_DENIED; nothing forwarded", async () => {
    const chainId = await s.openChain("deploy-watch-deny");
    const result = await watch(
      { chain_id: chainId, action_name: "deploy", payload: { service: "db" } },
      (u) => {
        if (u.approval?.status === "pending")
          void s.decide(u.approval.approval_id, "deny", "not on a Friday");
      },
    );
    expect(result.updates.map((u) => u.approval?.status)).toEqual(["pending", "denied"]);
    expect(result.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(result.error?.metadata.get("tollgate-error-code")).toEqual(["ACTION_DENIED"]);
    expect(details(result.error)).toMatchObject({
      errorInfo: {
        reason: "ACTION_DENIED",
        metadata: { approval_id: result.updates[0]!.approval!.approval_id },
      },
    });
    expect(toolCalls("deploy").filter((c) => (c.body as { service?: string }).service === "db")).toHaveLength(
      0,
    );
  });

  it("WatchInvoke of an allowed call sends only the result", async () => {
    const chainId = await s.openChain("watch-allow");
    const result = await watch({ chain_id: chainId, action_name: "read_file", payload: { path: "/x" } });
    expect(result.error).toBeNull();
    expect(result.updates).toHaveLength(1);
    expect(result.updates[0]!.result).toMatchObject({
      forwarded: true,
      decision: { policy_decision: "allow" },
    });
  });
});
