/**
 * ServiceClient against the real service: outcome reporting, v2 verification, public
 * verification tokens (issue, list, verify, revoke, sanitized error) and the legacy helper.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  Chain,
  type CompleteResult,
  ServiceApiError,
  ServiceClient,
  VerificationError,
} from "../../src/sdk/index.js";
import { makeTicker, type SdkEnv, startSdkEnv } from "./support/env.js";

let env: SdkEnv;
let admin: ServiceClient;
let client: ServiceClient;
let done: CompleteResult;
let approvalId: string;
let chainId: string;
let readEventId: string;

beforeAll(async () => {
  env = await startSdkEnv("sdk-client");
  admin = new ServiceClient({ apiKey: env.org.adminKey, backendUrl: env.t.url });
  client = new ServiceClient({ apiKey: env.org.clientKey, backendUrl: env.t.url });
  const ticker = makeTicker();
  const chain = await new Chain("verified", { config: env.config({}, ticker) }).enter();
  chainId = chain.chainId!;
  readEventId = (
    await chain.recordAgentAction({ agentName: "reader", actionType: "tool_call", actionName: "read_file" })
  ).event_id!;
  ticker.onTick = async () => {
    const st = await client.approvalStatus(chainId);
    await env.decide(st.approval!.approval_id, { decision: "approve", notes: "fine" });
  };
  const paid = await chain.recordAgentAction({
    agentName: "payer",
    actionType: "tool_call",
    actionName: "pay",
    payload: { amount_usd: 9000 },
  });
  approvalId = paid.approval_id!;
  const outcome = await client.reportOutcome(chainId, readEventId, {
    status: "success",
    error_class: null,
    duration_ms: 12,
    result_sha256: "a".repeat(64),
  });
  expect(outcome.outcome.duration_ms).toBe(12);
  done = (await chain.exit())!;
});
afterAll(async () => env?.close());

describe("ServiceClient", () => {
  it("reports outcomes into the receipt's events_summary, once, with validated input", async () => {
    const receipt = await client.getReceipt(chainId);
    expect(receipt?.events_summary[0]?.outcome).toEqual({
      status: "success",
      error_class: null,
      duration_ms: 12,
      result_sha256: "a".repeat(64),
    });
    await expect(
      client.reportOutcome(chainId, readEventId, {
        status: "ok",
        error_class: null,
        duration_ms: 1,
      } as never),
    ).rejects.toThrow(/outcome\.status/);
    const again = await client
      .reportOutcome(chainId, readEventId, {
        status: "success",
        error_class: null,
        duration_ms: 1,
        result_sha256: null,
      })
      .catch((e) => e);
    expect(again).toBeInstanceOf(ServiceApiError);
    expect(again.code).toBe("TG_ERR_CHAIN_COMPLETED");
  });

  it("getReceipt returns null for a chain that is not completed", async () => {
    const open = await client.createChain({ name: "open-one" });
    expect(await client.getReceipt(open.chain_id)).toBeNull();
    await client.completeChain(open.chain_id);
  });

  it("maps the error body: code, message and details", async () => {
    const err = await client.completeChain(chainId).catch((e) => e);
    expect(err).toBeInstanceOf(ServiceApiError);
    expect(err).toMatchObject({ statusCode: 409, code: "TG_ERR_CHAIN_COMPLETED" });
    expect(err.details).toMatchObject({ chain_id: chainId, receipt_id: done.receipt_id });
    expect(err.message).toMatch(/^POST \/v1\/chains\/\{chain_id\}\/complete: /);
  });

  it("verifyReceiptV2 reports overall_status and integrity.status (members and admins)", async () => {
    const v = await admin.verifyReceiptV2(done.receipt_id);
    expect(v.overall_status).toBe("valid");
    expect(v.integrity.status).toBe("valid");
    expect(JSON.stringify(v)).not.toMatch(/hmac-sha256:/);
    const denied = await client.verifyReceiptV2(done.receipt_id).catch((e) => e);
    expect(denied).toBeInstanceOf(ServiceApiError);
    expect(denied.statusCode).toBe(403);
  });

  it("verifyApprovalV2 is role-aware", async () => {
    const v = await admin.verifyApprovalV2(approvalId);
    expect(v.overall_status).toBe("valid");
    expect(v.integrity.status).toBe("valid");
    expect(v.audit_context).toMatchObject({ decision: "approved" });
  });

  it("issues, lists, verifies and revokes a public token; unavailable tokens get one sanitized error", async () => {
    const issued = await admin.issuePublicVerificationToken({
      artifactType: "receipt",
      artifactId: done.receipt_id,
    });
    expect(issued.token).toMatch(/^tgp_/);
    expect(issued.public_path).toBe(`/public/v2/verify/${issued.token}`);

    const listed = await admin.listPublicVerificationTokens({ artifactType: "receipt" });
    expect(listed.tokens.map((t) => t.token_id)).toContain(issued.token_id);
    expect(JSON.stringify(listed)).not.toContain(issued.token);

    const anonymous = new ServiceClient({ apiKey: "tg_unused", backendUrl: env.t.url });
    const pub = await anonymous.verifyPublicToken(issued.token);
    expect(pub).toMatchObject({
      artifact_type: "receipt",
      verification_status: "valid",
      integrity_status: "valid",
    });
    expect(JSON.stringify(pub)).not.toMatch(/hmac|signature"|org_id/);

    const revoked = await admin.revokePublicVerificationToken(issued.token_id);
    expect(revoked).toMatchObject({ token_id: issued.token_id, status: "revoked" });
    expect(JSON.stringify(revoked)).not.toContain(issued.token);

    const afterRevoke = await anonymous.verifyPublicToken(issued.token).catch((e) => e);
    const unknown = await anonymous.verifyPublicToken(`tgp_${"x".repeat(43)}`).catch((e) => e);
    for (const err of [afterRevoke, unknown]) {
      expect(err).toBeInstanceOf(VerificationError);
      expect(err.message).toBe("Verification is unavailable for this token");
      expect(err.cause).toBeUndefined();
      expect(String(err.stack)).not.toContain(issued.token);
    }
    await expect(anonymous.verifyPublicToken("")).rejects.toBeInstanceOf(VerificationError);
    await expect(
      client.issuePublicVerificationToken({ artifactType: "receipt", artifactId: done.receipt_id }),
    ).rejects.toMatchObject({ statusCode: 403 });
  });

  it("the legacy verifyReceipt still works and emits a DeprecationWarning", async () => {
    const spy = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    try {
      const legacy = (await client.verifyReceipt(done.receipt_id)) as { valid: boolean; receipt_id: string };
      expect(legacy).toMatchObject({ receipt_id: done.receipt_id, valid: true });
      expect(spy).toHaveBeenCalledTimes(1);
      expect(spy.mock.calls[0]?.[1]).toMatchObject({
        type: "DeprecationWarning",
        code: "TG_DEP_VERIFY_RECEIPT",
      });
    } finally {
      spy.mockRestore();
    }
  });

  it("validates identifiers before any request", async () => {
    await expect(client.getChain("")).rejects.toThrow(/chainId/);
    await expect(
      admin.issuePublicVerificationToken({ artifactType: "chain" as never, artifactId: done.receipt_id }),
    ).rejects.toThrow(/artifactType/);
    expect(() => new ServiceClient({ apiKey: "", backendUrl: env.t.url })).toThrow(/apiKey/);
    expect(() => new ServiceClient({ apiKey: "tg_x", backendUrl: "file:///etc" })).toThrow(/backendUrl/);
  });
});
