import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signCheckpoint } from "../../src/receipts/checkpoint.js";
import { ConfigError, loadConfig } from "../../src/service/config.js";
import { createLogger } from "../../src/service/logger.js";
import { applyKeyConfig } from "../../src/service/receipts/key-config.js";
import { startTestService, type TestService } from "../support/service.js";
import {
  completedReceipt,
  decide,
  type Org,
  pendingApproval,
  session,
  sql,
  tollgate,
} from "./verification-helpers.js";

const MINUTE = 60_000;

describe("key rotation and revocation", () => {
  let t: TestService;
  let org: Org;
  let other: Org;
  let approver: string;
  let member: string;
  let dir: string;
  let receiptJwks: string;
  let approvalJwks: string;
  /** Artifacts signed before (1) and after (2) the rotations. */
  const before = { receiptId: "", approvalId: "", at: 0 };
  const after = { receiptId: "", approvalId: "", at: 0 };
  const kids = { receipt1: "", receipt2: "", approval1: "", approval2: "", hmac2: "" };

  const admin = (method: string, url: string, body?: unknown) =>
    t.call(method, url, { token: t.adminToken, ...(body !== undefined && { body }) });
  const verifyReceipt = async (id: string) => {
    const r = await t.call("GET", `/v1/verification/v2/receipts/${id}`, { token: member });
    expect(r.statusCode, r.body).toBe(200);
    return r.json();
  };
  const verifyApproval = async (id: string) => {
    const r = await t.call("GET", `/v1/verification/v2/approvals/${id}`, { token: member });
    expect(r.statusCode, r.body).toBe(200);
    return r.json();
  };
  const exportFile = async (name: string) => {
    const r = await t.call("GET", "/v1/receipts/export", { token: member });
    expect(r.statusCode, r.body).toBe(200);
    const file = path.join(dir, name);
    writeFileSync(file, r.body);
    return file;
  };
  const receiptKid = async (id: string) => {
    const r = await t.call("GET", `/v1/receipts/${id}`, { token: org.clientKey });
    expect(r.statusCode, r.body).toBe(200);
    return r.json().ed25519.kid as string;
  };
  /** `tollgate verify` of an export with the keys the service publishes. */
  const verifyOffline = (file: string, ...args: string[]) =>
    tollgate(["verify", file, "--jwks", receiptJwks, "--approval-jwks", approvalJwks, ...args]);
  const approved = async () => {
    const { approvalId } = await pendingApproval(t, org);
    await decide(t, approver, approvalId, { decision: "approve" });
    return approvalId;
  };

  beforeAll(async () => {
    t = await startTestService({ listen: true });
    org = await t.bootstrapOrg("rotate");
    other = await t.bootstrapOrg("rotate-other");
    approver = await session(t, org, "ada@example.com", ["approver"]);
    member = await session(t, org, "max@example.com", ["member"]);
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-keys-"));
    receiptJwks = `${t.url}/.well-known/tollgate/receipt-keys.json`;
    approvalJwks = `${t.url}/.well-known/tollgate/approval-keys.json`;

    before.at = t.clock.nowMs();
    before.receiptId = (await completedReceipt(t, org, "before")).receiptId;
    before.approvalId = await approved();
    kids.receipt1 = await receiptKid(before.receiptId);
    kids.approval1 = (await verifyApproval(before.approvalId)).signature.kid;
  });
  afterAll(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("rotates each key kind by API; new signatures use the new keys, old ones still verify", async () => {
    t.clock.advance(MINUTE);
    const r = await admin("POST", "/v1/admin/signing-keys/rotate", { purpose: "receipt" });
    expect(r.statusCode, r.body).toBe(201);
    expect(r.json()).toMatchObject({ purpose: "receipt", organization: null, retired_kid: kids.receipt1 });
    kids.receipt2 = r.json().key.kid;
    expect(kids.receipt2).not.toBe(kids.receipt1);
    const a = await admin("POST", "/v1/admin/signing-keys/rotate", { purpose: "approval" });
    expect(a.statusCode, a.body).toBe(201);
    expect(a.json().retired_kid).toBe(kids.approval1);
    kids.approval2 = a.json().key.kid;
    // an organization admin rotates its own HMAC key
    const h = await t.call("POST", "/v1/admin/organizations/rotate/receipt-hmac-keys/rotate", {
      token: org.adminKey,
    });
    expect(h.statusCode, h.body).toBe(201);
    expect(h.json()).toMatchObject({
      purpose: "receipt_hmac",
      organization: "rotate",
      retired_kid: "master",
    });
    kids.hmac2 = h.json().key.kid;
    expect(kids.hmac2).toMatch(/^[0-9a-f]{16}$/);

    t.clock.advance(MINUTE);
    after.at = t.clock.nowMs();
    after.receiptId = (await completedReceipt(t, org, "after")).receiptId;
    after.approvalId = await approved();
    expect(await receiptKid(after.receiptId)).toBe(kids.receipt2);
    const rows = await sql(t, "SELECT id, hmac_kid FROM receipts WHERE org_id = $1", [org.orgId]);
    const hmacOf = new Map(rows.rows.map((x) => [x.id, x.hmac_kid]));
    expect(hmacOf.get(before.receiptId)).toBe("master");
    expect(hmacOf.get(after.receiptId)).toBe(kids.hmac2);
    // the other organization keeps its key: HMAC keys are per organization
    const o = (await completedReceipt(t, other, "elsewhere")).receiptId;
    expect((await sql(t, "SELECT hmac_kid FROM receipts WHERE id = $1", [o])).rows[0]?.hmac_kid).toBe(
      "master",
    );

    const old = await verifyReceipt(before.receiptId);
    expect(old).toMatchObject({
      overall_status: "valid",
      integrity: { status: "valid" },
      signature: { status: "valid", kid: kids.receipt1, key_status: "not_evaluated" },
    });
    const fresh = await verifyReceipt(after.receiptId);
    expect(fresh).toMatchObject({
      overall_status: "valid",
      integrity: { status: "valid" },
      signature: { status: "valid", kid: kids.receipt2, key_status: "trusted" },
    });
    expect(await verifyApproval(before.approvalId)).toMatchObject({
      overall_status: "valid",
      signature: { kid: kids.approval1, key_status: "not_evaluated" },
    });
    expect(await verifyApproval(after.approvalId)).toMatchObject({
      overall_status: "valid",
      signature: { kid: kids.approval2, key_status: "trusted" },
    });

    const list = await admin("GET", "/v1/admin/signing-keys");
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().receipt.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      [kids.receipt1, "retired"],
      [kids.receipt2, "active"],
    ]);
    const hmac = await t.call("GET", "/v1/admin/organizations/rotate/receipt-hmac-keys", {
      token: org.adminKey,
    });
    expect(hmac.statusCode, hmac.body).toBe(200);
    expect(hmac.json().keys.map((k: { kid: string; status: string }) => [k.kid, k.status])).toEqual([
      ["master", "retired"],
      [kids.hmac2, "active"],
    ]);
    expect(hmac.body).not.toMatch(/key_sealed|v1\./);
  });

  it("publishes retired keys with their validity period; tollgate verify accepts old and new offline", async () => {
    const jwks = (await (await fetch(receiptJwks)).json()) as { keys: Array<Record<string, unknown>> };
    const retired = jwks.keys.find((k) => k.kid === kids.receipt1);
    expect(retired).toMatchObject({ status: "retired", revoked_at: null });
    expect(Date.parse(retired!.retired_at as string)).toBe(before.at + MINUTE);
    const file = await exportFile("rotated.json");
    const r = await verifyOffline(file, "--json");
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.receipts.map((x: { key_revocation: string }) => x.key_revocation)).toEqual([
      "not_revoked",
      "not_revoked",
    ]);
  });

  it("revocation refuses what a key signed at or after the revocation time, keeps what it signed before", async () => {
    t.clock.advance(MINUTE);
    // a checkpoint signed by the receipt key in use, kept before that key is revoked
    const kept = (await t.call("GET", "/v1/receipts/checkpoint", { token: member })).json();
    expect(kept.kid).toBe(kids.receipt2);
    t.clock.advance(MINUTE);
    const revokedAt = t.clock.nowMs();
    const r = await admin("POST", `/v1/admin/signing-keys/${kids.receipt2}/revoke`, {
      reason: "leaked in a support ticket",
    });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({
      purpose: "receipt",
      key: { kid: kids.receipt2, status: "revoked", revocation_reason: "leaked in a support ticket" },
    });
    expect(Date.parse(r.json().key.revoked_at)).toBe(revokedAt);
    const replacement = r.json().replaced_by as string;
    expect(replacement).toMatch(/^[0-9a-f]{16}$/);
    // the revoked key was active: new signatures use its replacement
    const next = (await completedReceipt(t, org, "next")).receiptId;
    expect(await receiptKid(next)).toBe(replacement);
    expect((await verifyReceipt(next)).overall_status).toBe("valid");

    // signed before the revocation: still valid, and it says so
    expect(await verifyReceipt(after.receiptId)).toMatchObject({
      overall_status: "valid",
      signature: { status: "valid", kid: kids.receipt2, key_status: "signed_before_revocation" },
    });
    const keptCheck = await t.call("POST", "/v1/verification/v2/checkpoints", { token: member, body: kept });
    expect(keptCheck.json()).toMatchObject({
      overall_status: "valid",
      signature: { status: "valid", key_status: "signed_before_revocation" },
    });
    // whoever holds the leaked key signs a checkpoint after the revocation: refused
    const leaked = await t.service.ctx.signingKeys.byId(kids.receipt2);
    const forged = signCheckpoint(
      {
        organization: kept.organization,
        sequence: kept.sequence,
        receipt_number: kept.receipt_number,
        receipt_hash: kept.receipt_hash,
        issued_at: new Date(revokedAt + 1000).toISOString(),
      },
      { kid: leaked!.kid, privateKey: leaked!.privateKey },
    );
    const forgedCheck = await t.call("POST", "/v1/verification/v2/checkpoints", {
      token: member,
      body: forged,
    });
    expect(forgedCheck.statusCode, forgedCheck.body).toBe(200);
    expect(forgedCheck.json()).toMatchObject({
      overall_status: "invalid",
      signature: { status: "valid", key_status: "revoked" },
    });
    expect(forgedCheck.json().problems.join(" ")).toContain(`key ${kids.receipt2} after its revocation`);

    // the first keys (receipt, approval, HMAC) are found compromised from before they signed
    const compromisedFrom = new Date(before.at - 1000).toISOString();
    for (const [url, body] of [
      [`/v1/admin/signing-keys/${kids.receipt1}/revoke`, { revoked_at: compromisedFrom }],
      [`/v1/admin/signing-keys/${kids.approval1}/revoke`, { revoked_at: compromisedFrom }],
      ["/v1/admin/organizations/rotate/receipt-hmac-keys/master/revoke", { revoked_at: compromisedFrom }],
    ] as const) {
      const res = await admin("POST", url, body);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().replaced_by).toBeNull(); // already retired: nothing to replace
    }
    const refused = await verifyReceipt(before.receiptId);
    expect(refused).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "invalid" },
      signature: { status: "valid", kid: kids.receipt1, key_status: "revoked" },
    });
    const problems = refused.problems.join(" ");
    expect(problems).toContain(`key ${kids.receipt1} after its revocation`);
    expect(problems).toContain("the HMAC of");
    expect(await verifyApproval(before.approvalId)).toMatchObject({
      overall_status: "invalid",
      signature: { status: "valid", key_status: "revoked" },
    });
    // the other organization's HMAC key was not touched
    const others = await t.call("GET", "/v1/admin/organizations/rotate-other/receipt-hmac-keys", {
      token: t.adminToken,
    });
    expect(others.json().keys).toMatchObject([{ kid: "master", status: "active", revoked_at: null }]);

    // a later revocation time never weakens an earlier one
    const later = await admin("POST", `/v1/admin/signing-keys/${kids.receipt1}/revoke`, {
      revoked_at: new Date(t.clock.nowMs()).toISOString(),
    });
    expect(Date.parse(later.json().key.revoked_at)).toBe(before.at - 1000);

    // offline, with the published key sets: the same verdicts
    const file = await exportFile("revoked.json");
    const out = await verifyOffline(file);
    expect(out.code, out.stdout + out.stderr).toBe(1);
    expect(out.stdout).toContain(`key ${kids.receipt1} after its revocation`);
    expect(out.stdout).toContain("signed before its key was revoked: the signature still counts");
    const forgedFile = path.join(dir, "forged-checkpoint.json");
    writeFileSync(forgedFile, JSON.stringify(forged));
    const json = await verifyOffline(file, "--checkpoint", forgedFile, "--json");
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.receipts.map((x: { key_revocation: string }) => x.key_revocation)).toEqual([
      "revoked",
      "signed_before_revocation",
      "not_revoked",
    ]);
    expect(report.receipts.map((x: { overall_status: string }) => x.overall_status)).toEqual([
      "invalid",
      "valid",
      "valid",
    ]);
    expect(report.checkpoint.problems.join(" ")).toContain("after its revocation");
  });

  it("rotation and revocation asked by the deployment configuration apply once", async () => {
    const log = createLogger({ level: "silent" });
    const ctx = t.service.ctx;
    const active = async () => (await ctx.signingKeys.active("approval")).kid;
    const first = await active();
    const config = { rotate: { approval: "2026-11-27", receipt_hmac: "2026-11-27" }, revoke: [] };
    await applyKeyConfig(ctx.db, ctx, config, t.clock.nowMs(), log);
    const second = await active();
    expect(second).not.toBe(first);
    const hmacCount = async (o: Org) =>
      (await sql(t, "SELECT count(*)::int AS n FROM receipt_hmac_keys WHERE org_id = $1", [o.orgId])).rows[0]
        ?.n;
    const hmacBefore = await hmacCount(other);
    // a second replica starting with the same tokens rotates nothing
    await applyKeyConfig(ctx.db, ctx, config, t.clock.nowMs(), log);
    expect(await active()).toBe(second);
    expect(await hmacCount(other)).toBe(hmacBefore);
    // a new token rotates again; a listed revocation applies (idempotently)
    await applyKeyConfig(
      ctx.db,
      ctx,
      {
        rotate: { approval: "2026-11-28" },
        revoke: [{ kind: "approval", kid: second, revoked_at: new Date(t.clock.nowMs()).toISOString() }],
      },
      t.clock.nowMs(),
      log,
    );
    const third = await active();
    expect(third).not.toBe(second);
    const listed = (await admin("GET", "/v1/admin/signing-keys")).json().approval;
    expect(listed.find((k: { kid: string }) => k.kid === second).status).toBe("revoked");

    const env = { TOLLGATE_MASTER_KEY: "a".repeat(64), TOLLGATE_ADMIN_TOKEN: `tga_${"b".repeat(40)}` };
    const parsed = await loadConfig([], {
      ...env,
      TOLLGATE_ROTATE_KEYS: '{"receipt":"r1"}',
      TOLLGATE_REVOKE_KEYS: `[{"kind":"receipt_hmac","organization":"rotate","kid":"master","revoked_at":"2026-01-01T00:00:00Z"}]`,
    });
    expect(parsed.keys).toMatchObject({ rotate: { receipt: "r1" }, revoke: [{ kid: "master" }] });
    const bad = await loadConfig([], {
      ...env,
      TOLLGATE_ROTATE_KEYS: '{"receipt":5}',
      TOLLGATE_REVOKE_KEYS: '[{"kind":"receipt","kid":"nope","revoked_at":"2026-01-01T00:00:00Z"}]',
    }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ConfigError);
    expect(String((bad as Error).message)).toContain("TOLLGATE_ROTATE_KEYS: receipt");
    expect(String((bad as Error).message)).toContain("TOLLGATE_REVOKE_KEYS: 0.kid");
  });

  it("hostile input on the key routes is a 4xx naming the field, never a 5xx", async () => {
    /** A revoke of the first receipt key with `body`, answered `status`, naming `names`. */
    const revokeFirst = (body: unknown, status: number, names?: string) => ({
      method: "POST",
      url: `/v1/admin/signing-keys/${kids.receipt1}/revoke`,
      body,
      status,
      ...(names && { names }),
    });
    const cases: Array<{
      method: string;
      url: string;
      token?: string;
      body?: unknown;
      status: number;
      names?: string;
    }> = [
      {
        method: "POST",
        url: "/v1/admin/signing-keys/rotate",
        body: { purpose: "hmac" },
        status: 400,
        names: "purpose",
      },
      {
        method: "POST",
        url: "/v1/admin/signing-keys/rotate",
        body: { purpose: "receipt", extra: 1 },
        status: 400,
      },
      {
        method: "POST",
        url: "/v1/admin/signing-keys/rotate",
        body: { purpose: "rec\u0000eipt" },
        status: 400,
        names: "purpose",
      },
      { method: "POST", url: "/v1/admin/signing-keys/rotate", status: 400, names: "body" },
      { method: "POST", url: "/v1/admin/signing-keys/ZZ/revoke", body: {}, status: 400, names: "kid" },
      {
        method: "POST",
        url: "/v1/admin/signing-keys/%00abcdef01234567/revoke",
        body: {},
        status: 400,
        names: "kid",
      },
      {
        method: "POST",
        url: `/v1/admin/signing-keys/${"a".repeat(64)}/revoke`,
        body: {},
        status: 400,
        names: "kid",
      },
      // a path parameter beyond the router's limit (100 characters): 414, still a 4xx
      { method: "POST", url: `/v1/admin/signing-keys/${"a".repeat(5000)}/revoke`, body: {}, status: 414 },
      { method: "POST", url: "/v1/admin/signing-keys/0123456789abcdef/revoke", body: {}, status: 404 },
      revokeFirst({ revoked_at: "2999-01-01T00:00:00Z" }, 400, "revoked_at"),
      revokeFirst({ revoked_at: "yesterday" }, 400, "revoked_at"),
      revokeFirst({ revoked_at: "0000-01-01T00:00:00Z" }, 400, "revoked_at"),
      revokeFirst({ revoked_at: "1969-12-31T23:59:59+14:00" }, 400, "revoked_at"),
      revokeFirst({ reason: "x".repeat(10_000) }, 400, "reason"),
      revokeFirst({ reason: "bad\u0000byte" }, 400, "reason"),
      revokeFirst({ reason: "y".repeat(3_000_000) }, 413),
      {
        method: "POST",
        url: "/v1/admin/organizations/rotate/receipt-hmac-keys/MASTER/revoke",
        body: {},
        status: 400,
        names: "kid",
      },
      {
        method: "POST",
        url: "/v1/admin/organizations/rotate/receipt-hmac-keys/0123456789abcdef/revoke",
        body: {},
        status: 404,
      },
      {
        method: "POST",
        url: "/v1/admin/organizations/Not_A_Slug/receipt-hmac-keys/rotate",
        status: 400,
        names: "slug",
      },
      { method: "POST", url: "/v1/admin/organizations/nobody/receipt-hmac-keys/rotate", status: 404 },
      // roles: the service's Ed25519 keys are the service admin's; an organization's HMAC keys its admins'
      { method: "GET", url: "/v1/admin/signing-keys", token: org.adminKey, status: 403 },
      {
        method: "POST",
        url: "/v1/admin/signing-keys/rotate",
        token: org.clientKey,
        body: { purpose: "receipt" },
        status: 403,
      },
      {
        method: "POST",
        url: "/v1/admin/organizations/rotate/receipt-hmac-keys/rotate",
        token: org.clientKey,
        status: 403,
      },
      {
        method: "POST",
        url: "/v1/admin/organizations/rotate/receipt-hmac-keys/rotate",
        token: other.adminKey,
        status: 404,
      },
      { method: "GET", url: "/v1/admin/organizations/rotate/receipt-hmac-keys", token: "", status: 401 },
    ];
    for (const c of cases) {
      const token = c.token === undefined ? t.adminToken : c.token;
      const r = await t.call(c.method, c.url, {
        ...(token && { token }),
        ...(c.body !== undefined && { body: c.body }),
      });
      expect(r.statusCode, `${c.method} ${c.url.slice(0, 80)}: ${r.body.slice(0, 300)}`).toBe(c.status);
      if (c.names) expect(r.json().message, c.url.slice(0, 80)).toContain(c.names);
    }
  });
});
