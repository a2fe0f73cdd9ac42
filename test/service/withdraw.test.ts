/**
 * POST /v1/approvals/{approval_id}/withdraw (beyond the spec): the caller gives up its own
 * pending approval — cancelled, its event denied, no longer decidable, the chain open again,
 * the resolution signed; another organization's approval is 404, a resolved one 409.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";
import { pendingApproval } from "./verification-helpers.js";

describe("withdrawing a pending approval", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let other: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("withdraw-org");
    other = await t.bootstrapOrg("withdraw-other");
  });
  afterAll(async () => t?.close());

  const pending = () => pendingApproval(t, org);

  it("cancels the approval, denies its event, reopens the chain and signs the resolution", async () => {
    const { chainId, approvalId } = await pending();
    const r = await t.call("POST", `/v1/approvals/${approvalId}/withdraw`, {
      token: org.clientKey,
      body: { reason: "the caller gave up, key sk_live_123" },
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ approval_id: approvalId, status: "cancelled" });
    const chain = (await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey })).json();
    expect(chain.status).toBe("open");
    expect(chain.events[0].decision).toMatchObject({
      policy_decision: "deny",
      decision_reason: "Withdrawn by the caller: the caller gave up, key [REDACTED]",
    });
    const decided = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "approve" },
    });
    expect(decided.statusCode).toBe(409);
    expect(decided.json().code).toBe("TG_ERR_APPROVAL_RESOLVED");
    const v = (
      await t.call("GET", `/v1/verification/v2/approvals/${approvalId}`, { token: org.adminKey })
    ).json();
    expect(v.overall_status).toBe("valid");
    // The chain takes further actions.
    const next = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: { agent_name: "reader", action_type: "tool_call", action_name: "read_file" },
    });
    expect(next.json().policy_decision).toBe("allow");
  });

  it("a resolved approval answers 409; another organization's 404; no credentials 401", async () => {
    const { approvalId } = await pending();
    expect(
      (await t.call("POST", `/v1/approvals/${approvalId}/withdraw`, { token: org.clientKey })).statusCode,
    ).toBe(200);
    const again = await t.call("POST", `/v1/approvals/${approvalId}/withdraw`, { token: org.clientKey });
    expect(again.statusCode).toBe(409);
    expect(again.json().details).toMatchObject({ status: "cancelled" });
    const { approvalId: second } = await pending();
    expect(
      (await t.call("POST", `/v1/approvals/${second}/withdraw`, { token: other.clientKey })).statusCode,
    ).toBe(404);
    expect((await t.call("POST", `/v1/approvals/${second}/withdraw`)).statusCode).toBe(401);
  });
});
