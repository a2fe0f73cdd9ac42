/**
 * Verification v2 against the real service and database (both projects): receipt and approval
 * verification, every status value, roles, cross-organization probes, legacy receipt route and
 * tamper cases done with direct SQL.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";
import {
  assertNoProofMaterial,
  completedReceipt,
  counterValue,
  decide,
  type Org,
  pendingApproval,
  session,
  sql,
} from "./verification-helpers.js";

const receiptPath = (id: string) => `/v1/verification/v2/receipts/${id}`;
const approvalPath = (id: string) => `/v1/verification/v2/approvals/${id}`;

describe("receipt verification v2", () => {
  let t: TestService;
  let org: Org;
  let other: Org;
  let receipts: Awaited<ReturnType<typeof completedReceipt>>[];
  let member: string;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("verify-r");
    other = await t.bootstrapOrg("verify-other");
    receipts = [];
    for (let i = 0; i < 3; i++) receipts.push(await completedReceipt(t, org, `chain-${i}`));
    member = await session(t, org, "mia@example.com", ["member"]);
  });
  afterAll(async () => t?.close());

  it("reports the genesis receipt valid with chain status genesis", async () => {
    const r = await t.call("GET", receiptPath(receipts[0]!.receiptId), { token: member });
    expect(r.statusCode, r.body).toBe(200);
    const v = r.json();
    expect(v).toMatchObject({
      artifact_type: "receipt",
      receipt_id: receipts[0]!.receiptId,
      receipt_number: receipts[0]!.receiptNumber,
      sequence: 1,
      overall_status: "valid",
      integrity: { status: "valid" },
      chain: { status: "genesis", predecessor_receipt_number: null },
      signature: { status: "valid", algorithm: "Ed25519", key_status: "trusted" },
      timestamp_authority_anchor: { status: "not_configured" },
      blockchain_anchor: { status: "not_configured" },
      problems: [],
    });
    expect(v.signature.kid).toMatch(/^[0-9a-f]{16}$/);
    expect(Date.parse(v.verified_at)).toBe(t.clock.nowMs());
    assertNoProofMaterial(r.body);
  });

  it("reports a later receipt linked to its predecessor (chain valid)", async () => {
    const r = await t.call("GET", receiptPath(receipts[2]!.receiptId), { token: org.adminKey });
    expect(r.json()).toMatchObject({
      overall_status: "valid",
      integrity: { status: "valid" },
      chain: { status: "valid", predecessor_receipt_number: receipts[1]!.receiptNumber },
      sequence: 3,
    });
    assertNoProofMaterial(r.body);
  });

  it("is for members and admins: client keys get 403, no credentials 401, the service admin 403", async () => {
    const id = receipts[0]!.receiptId;
    expect((await t.call("GET", receiptPath(id), { token: org.clientKey })).statusCode).toBe(403);
    expect((await t.call("GET", receiptPath(id))).statusCode).toBe(401);
    expect((await t.call("GET", receiptPath(id), { token: t.adminToken })).statusCode).toBe(403);
    const approver = await session(t, org, "ann@example.com", ["approver"]);
    expect((await t.call("GET", receiptPath(id), { token: approver })).statusCode).toBe(200);
  });

  it("answers 404 (not 403) for another organization's receipt, and 404 for unknown ids", async () => {
    const id = receipts[0]!.receiptId;
    const foreignMember = await session(t, other, "olga@example.com", ["member", "admin"]);
    for (const token of [other.adminKey, foreignMember]) {
      const r = await t.call("GET", receiptPath(id), { token });
      expect(r.statusCode).toBe(404);
      expect(r.json().code).toBe("TG_ERR_NOT_FOUND");
    }
    expect((await t.call("GET", receiptPath(randomUUID()), { token: member })).statusCode).toBe(404);
    const bad = await t.call("GET", receiptPath("not-a-uuid"), { token: member });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("receipt_id");
  });

  it("counts verifications by surface, artifact type and status", async () => {
    const labels = { surface: "authenticated", artifact_type: "receipt", status: "valid" };
    const before = await counterValue(t, "tollgate_verification_results_total", labels);
    await t.call("GET", receiptPath(receipts[1]!.receiptId), { token: member });
    expect(await counterValue(t, "tollgate_verification_results_total", labels)).toBe(before + 1);
  });

  it("serves the legacy route with Deprecation, a successor Link and a use counter", async () => {
    const id = receipts[1]!.receiptId;
    const labels = { route: "/v1/receipts/{receipt_id}/verify" };
    const before = await counterValue(t, "tollgate_legacy_route_requests_total", labels);
    for (const token of [org.clientKey, member]) {
      const r = await t.call("GET", `/v1/receipts/${id}/verify`, { token });
      expect(r.statusCode, r.body).toBe(200);
      expect(r.headers.deprecation).toBe("true");
      expect(r.headers.link).toBe(`</v1/verification/v2/receipts/${id}>; rel="successor-version"`);
      expect(r.json()).toEqual({
        receipt_id: id,
        receipt_number: receipts[1]!.receiptNumber,
        valid: true,
        signature_valid: true,
        chain_valid: true,
        verified_at: new Date(t.clock.nowMs()).toISOString(),
      });
    }
    const denied = await t.call("GET", `/v1/receipts/${id}/verify`);
    expect(denied.statusCode).toBe(401);
    expect(denied.headers.deprecation).toBe("true");
    const foreign = await t.call("GET", `/v1/receipts/${id}/verify`, { token: other.clientKey });
    expect(foreign.statusCode).toBe(404);
    expect(await counterValue(t, "tollgate_legacy_route_requests_total", labels)).toBe(before + 4);
  });
});

describe("approval verification v2", () => {
  let t: TestService;
  let org: Org;
  let other: Org;
  let approver: string;
  let member: string;
  let adminUser: string;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("verify-a");
    other = await t.bootstrapOrg("verify-a-other");
    await signIn();
  });
  afterAll(async () => t?.close());

  /** (Re)creates the sessions; needed after the clock jumps past their 8-hour lifetime. */
  async function signIn() {
    approver = await session(t, org, "ada@example.com", ["approver"]);
    member = await session(t, org, "max@example.com", ["member"]);
    adminUser = await session(t, org, "ari@example.com", ["admin"]);
  }

  it("reports a pending approval as pending with nothing to verify", async () => {
    const { approvalId } = await pendingApproval(t, org);
    const r = await t.call("GET", approvalPath(approvalId), { token: member });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({
      artifact_type: "approval",
      approval_id: approvalId,
      status: "pending",
      decided_at: null,
      overall_status: "pending",
      integrity: { status: "not_evaluated" },
      signature: { status: "not_applicable", kid: null, key_status: "not_applicable" },
      timestamp_authority_anchor: { status: "not_configured" },
      blockchain_anchor: { status: "not_configured" },
    });
    await decide(t, approver, approvalId, { decision: "deny" });
  });

  it("signs an approval at decision time; members get safe metadata, admins audit context", async () => {
    const { approvalId, chainId } = await pendingApproval(t, org);
    await decide(t, approver, approvalId, {
      decision: "approve",
      exception_duration: "1d",
      notes: "ok for vendor, key sk_live_abcdef mailed to bob@corp.example\u0007",
    });
    const stored = await sql(
      t,
      "SELECT signed_payload, signature, signing_kid FROM approvals WHERE id = $1",
      [approvalId],
    );
    expect(stored.rows[0]!.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(stored.rows[0]!.signing_kid).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.parse(stored.rows[0]!.signed_payload)).toMatchObject({
      approval_id: approvalId,
      status: "approved",
    });

    const m = await t.call("GET", approvalPath(approvalId), { token: member });
    expect(m.statusCode, m.body).toBe(200);
    const mv = m.json();
    expect(mv).toMatchObject({
      approval_id: approvalId,
      chain_id: chainId,
      status: "approved",
      overall_status: "valid",
      integrity: { status: "valid" },
      signature: {
        status: "valid",
        algorithm: "Ed25519",
        key_status: "trusted",
        kid: stored.rows[0]!.signing_kid,
      },
      problems: [],
    });
    expect(mv.audit_context).toBeUndefined();
    expect(m.body).not.toContain("ada@example.com");
    expect(m.body).not.toContain("vendor");
    assertNoProofMaterial(m.body);

    for (const token of [adminUser, org.adminKey]) {
      const a = await t.call("GET", approvalPath(approvalId), { token });
      expect(a.statusCode).toBe(200);
      const ctx = a.json().audit_context;
      expect(ctx).toMatchObject({
        decided_by: "ada@example.com",
        decision: "approved",
        exception: { duration: "1d" },
      });
      expect(ctx.review_summary).toBe(
        "Approved with a 1d time-boxed exception. Notes: ok for vendor, key [REDACTED] mailed to [email]",
      );
      assertNoProofMaterial(a.body);
    }
  });

  it("signs denials and timeouts (the durable timeout job)", async () => {
    const denied = await pendingApproval(t, org);
    await decide(t, org.adminKey, denied.approvalId, { decision: "deny", notes: "no" });
    const d = (await t.call("GET", approvalPath(denied.approvalId), { token: member })).json();
    expect(d).toMatchObject({ status: "denied", overall_status: "valid", signature: { status: "valid" } });

    const late = await pendingApproval(t, org);
    t.clock.advance(25 * 3600_000);
    expect(await t.runJobs()).toBeGreaterThan(0);
    await signIn();
    const v = (await t.call("GET", approvalPath(late.approvalId), { token: adminUser })).json();
    expect(v).toMatchObject({
      status: "timed_out",
      overall_status: "valid",
      integrity: { status: "valid" },
      signature: { status: "valid", key_status: "trusted" },
      audit_context: {
        decided_by: null,
        decision: "timed_out",
        review_summary: "Not resolved within the approval timeout.",
      },
    });
  });

  it("signs a timeout first seen on read once its job runs", async () => {
    const { approvalId, chainId } = await pendingApproval(t, org);
    t.clock.advance(25 * 3600_000);
    await signIn();
    const st = await t.call("GET", `/v1/chains/${chainId}/approval-status`, { token: org.clientKey });
    expect(st.json().approval.status).toBe("timed_out");
    await t.runJobs();
    const v = (await t.call("GET", approvalPath(approvalId), { token: member })).json();
    expect(v).toMatchObject({ status: "timed_out", overall_status: "valid", signature: { status: "valid" } });
  });

  it("after a key rotation, historical keys report key_status not_evaluated and the new key trusted", async () => {
    const first = await pendingApproval(t, org);
    await decide(t, approver, first.approvalId, { decision: "approve" });
    const oldKid = (await t.call("GET", approvalPath(first.approvalId), { token: member })).json().signature
      .kid;
    const newKid = (await t.service.ctx.signingKeys.rotate("approval")).key.kid;
    expect(newKid).not.toBe(oldKid);
    const second = await pendingApproval(t, org);
    await decide(t, approver, second.approvalId, { decision: "approve" });

    const a = (await t.call("GET", approvalPath(first.approvalId), { token: member })).json();
    expect(a).toMatchObject({
      overall_status: "valid",
      signature: { status: "valid", kid: oldKid, key_status: "not_evaluated" },
    });
    const b = (await t.call("GET", approvalPath(second.approvalId), { token: member })).json();
    expect(b).toMatchObject({
      overall_status: "valid",
      signature: { status: "valid", kid: newKid, key_status: "trusted" },
    });

    const jwks = await t.call("GET", "/.well-known/tollgate/approval-keys.json");
    expect(jwks.statusCode).toBe(200);
    const keys = jwks.json().keys as Array<Record<string, unknown>>;
    expect(keys.map((k) => [k.kid, k.status])).toEqual(
      expect.arrayContaining([
        [oldKid, "retired"],
        [newKid, "active"],
      ]),
    );
    for (const k of keys) {
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", use: "sig", alg: "EdDSA" });
      expect(k).not.toHaveProperty("d");
    }
  });

  it("reports unsigned resolutions as unsigned, never valid", async () => {
    const { approvalId } = await pendingApproval(t, org);
    await decide(t, approver, approvalId, { decision: "approve" });
    await sql(
      t,
      "UPDATE approvals SET signature = NULL, signed_payload = NULL, signing_kid = NULL WHERE id = $1",
      [approvalId],
    );
    const v = (await t.call("GET", approvalPath(approvalId), { token: member })).json();
    expect(v).toMatchObject({
      overall_status: "unsigned",
      integrity: { status: "not_evaluated" },
      signature: { status: "missing", key_status: "not_applicable" },
    });
  });

  it("guards roles and organizations: client keys 403, foreign ids 404, no credentials 401", async () => {
    const { approvalId } = await pendingApproval(t, org);
    expect((await t.call("GET", approvalPath(approvalId), { token: org.clientKey })).statusCode).toBe(403);
    expect((await t.call("GET", approvalPath(approvalId))).statusCode).toBe(401);
    const foreignAdmin = await session(t, other, "fay@example.com", ["admin"]);
    for (const token of [other.adminKey, foreignAdmin]) {
      expect((await t.call("GET", approvalPath(approvalId), { token })).statusCode).toBe(404);
    }
    expect((await t.call("GET", approvalPath(randomUUID()), { token: member })).statusCode).toBe(404);
    await decide(t, approver, approvalId, { decision: "deny" });
  });
});

describe("tamper detection (direct SQL against the real database)", () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService();
  });
  afterAll(async () => t?.close());

  async function threeReceipts(slug: string) {
    const org = await t.bootstrapOrg(slug);
    const list = [];
    for (let i = 0; i < 3; i++) list.push(await completedReceipt(t, org, `c${i}`));
    return { org, list };
  }
  const verify = async (org: Org, id: string) => {
    const r = await t.call("GET", receiptPath(id), { token: org.adminKey });
    expect(r.statusCode, r.body).toBe(200);
    assertNoProofMaterial(r.body);
    return r.json();
  };

  it("altering a receipt row fails its integrity and breaks the next receipt's link", async () => {
    const { org, list } = await threeReceipts("tamper-alter");
    const res = await sql(
      t,
      `UPDATE receipts SET body = replace(body, '"total_actions":1', '"total_actions":0') WHERE id = $1`,
      [list[1]!.receiptId],
    );
    expect(res.rowCount).toBe(1);
    const altered = await verify(org, list[1]!.receiptId);
    expect(altered).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "invalid" },
      signature: { status: "invalid" },
      chain: { status: "valid" },
    });
    expect(altered.problems.join(" ")).toContain(list[1]!.receiptNumber);
    const next = await verify(org, list[2]!.receiptId);
    expect(next).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "valid" },
      chain: { status: "broken" },
    });
    expect((await verify(org, list[0]!.receiptId)).overall_status).toBe("valid");
    const legacy = await t.call("GET", `/v1/receipts/${list[1]!.receiptId}/verify`, { token: org.clientKey });
    expect(legacy.json()).toMatchObject({ valid: false, signature_valid: false });
  });

  it("altering the stored hash column alone fails integrity", async () => {
    const { org, list } = await threeReceipts("tamper-hash");
    await sql(t, `UPDATE receipts SET receipt_hash = 'sha256:' || repeat('0', 64) WHERE id = $1`, [
      list[0]!.receiptId,
    ]);
    expect(await verify(org, list[0]!.receiptId)).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "invalid" },
    });
  });

  it("deleting a receipt fails the next one's chain status (gap)", async () => {
    const { org, list } = await threeReceipts("tamper-delete");
    await sql(t, "DELETE FROM receipts WHERE id = $1", [list[1]!.receiptId]);
    const next = await verify(org, list[2]!.receiptId);
    expect(next).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "valid" },
      chain: { status: "gap", predecessor_receipt_number: list[0]!.receiptNumber },
    });
    expect(next.problems.join(" ")).toContain("missing");
    const gone = await t.call("GET", receiptPath(list[1]!.receiptId), { token: org.adminKey });
    expect(gone.statusCode).toBe(404);
  });

  it("deleting the genesis receipt fails the second one's chain status", async () => {
    const { org, list } = await threeReceipts("tamper-genesis");
    await sql(t, "DELETE FROM receipts WHERE id = $1", [list[0]!.receiptId]);
    expect(await verify(org, list[1]!.receiptId)).toMatchObject({
      overall_status: "invalid",
      chain: { status: "gap" },
    });
  });

  it("swapping two receipts' bodies is detected on both rows", async () => {
    const { org, list } = await threeReceipts("tamper-swap");
    const [a, b] = [list[1]!.receiptId, list[2]!.receiptId];
    const res = await sql(
      t,
      `UPDATE receipts r SET body = o.body FROM receipts o
       WHERE (r.id = $1 AND o.id = $2) OR (r.id = $2 AND o.id = $1)`,
      [a, b],
    );
    expect(res.rowCount).toBe(2);
    for (const id of [a, b]) {
      const v = await verify(org, id);
      expect(v.overall_status).toBe("invalid");
      expect(v.integrity.status).toBe("invalid");
      expect(v.chain.status).not.toBe("valid");
      expect(v.problems.join(" ")).toContain("does not match its body");
    }
  });

  it("altering an approval row (notes, decided_by, status, signature, key id) fails its signature", async () => {
    const org = await t.bootstrapOrg("tamper-approval");
    const cases: Array<[string, string]> = [
      ["notes", "UPDATE approvals SET notes = 'rubber-stamped' WHERE id = $1"],
      ["decided_by", "UPDATE approvals SET decided_by = 'mallory@example.com' WHERE id = $1"],
      ["status", "UPDATE approvals SET status = 'denied' WHERE id = $1"],
    ];
    for (const [what, statement] of cases) {
      const { approvalId } = await pendingApproval(t, org);
      await decide(t, org.adminKey, approvalId, { decision: "approve", notes: "fine" });
      expect(
        (await t.call("GET", approvalPath(approvalId), { token: org.adminKey })).json().overall_status,
      ).toBe("valid");
      await sql(t, statement, [approvalId]);
      const v = (await t.call("GET", approvalPath(approvalId), { token: org.adminKey })).json();
      expect(v, what).toMatchObject({
        overall_status: "invalid",
        integrity: { status: "invalid" },
        signature: { status: "invalid", key_status: "trusted" },
        timestamp_authority_anchor: { status: "not_configured" },
      });
    }

    const sig = await pendingApproval(t, org);
    await decide(t, org.adminKey, sig.approvalId, { decision: "approve" });
    await sql(
      t,
      "UPDATE approvals SET signature = translate(signature, 'ABCDEFGHabcdefgh', 'BCDEFGHAbcdefgha') WHERE id = $1",
      [sig.approvalId],
    );
    expect((await t.call("GET", approvalPath(sig.approvalId), { token: org.adminKey })).json()).toMatchObject(
      {
        overall_status: "invalid",
        integrity: { status: "valid" },
        signature: { status: "invalid" },
      },
    );

    const kid = await pendingApproval(t, org);
    await decide(t, org.adminKey, kid.approvalId, { decision: "approve" });
    await sql(t, "UPDATE approvals SET signing_kid = 'ffffffffffffffff' WHERE id = $1", [kid.approvalId]);
    expect((await t.call("GET", approvalPath(kid.approvalId), { token: org.adminKey })).json()).toMatchObject(
      {
        overall_status: "invalid",
        integrity: { status: "invalid" },
        signature: { status: "unknown_key", key_status: "unknown" },
      },
    );
  });
});
