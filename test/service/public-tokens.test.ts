/**
 * Public verification tokens against the real service and database (both projects): lifecycle
 * (issue → verify → revoke → sanitized error), the minimized result, byte-identical errors for
 * unknown, malformed and revoked tokens, roles, cross-organization probes, the legacy raw-UUID
 * public approval route, per-address rate limiting, and tokens kept out of the logs.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildService } from "../../src/service/app.js";
import { ManualClock } from "../../src/service/clock.js";
import { createLogger } from "../../src/service/logger.js";
import { freshDatabase } from "../support/db.js";
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

const TOKENS = "/v1/public-verification-tokens";
const SANITIZED = {
  statusCode: 404,
  code: "TG_ERR_VERIFICATION_UNAVAILABLE",
  error: "Not Found",
  message: "Verification is not available for this link",
};

let addressSeq = 0;
/** A fresh client address, so that each test has its own rate-limit budget. */
const newAddress = () => `10.20.${Math.floor(++addressSeq / 250)}.${addressSeq % 250}`;

describe("public verification tokens", () => {
  let t: TestService;
  let org: Org;
  let other: Org;
  let receipt: Awaited<ReturnType<typeof completedReceipt>>;
  let member: string;
  let adminUser: string;
  const publicGet = (path: string, address = newAddress()): Promise<LightMyRequestResponse> =>
    t.service.app.inject({ method: "GET", url: path, remoteAddress: address });
  const issue = (token: string, body: Record<string, unknown>) => t.call("POST", TOKENS, { token, body });

  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("tokens");
    other = await t.bootstrapOrg("tokens-other");
    receipt = await completedReceipt(t, org, "shared");
    member = await session(t, org, "meg@example.com", ["member", "approver"]);
    adminUser = await session(t, org, "abe@example.com", ["admin"]);
  });
  afterAll(async () => t?.close());

  it("issue → verify → list → revoke → sanitized error", async () => {
    const created = await issue(org.adminKey, { artifact_type: "receipt", artifact_id: receipt.receiptId });
    expect(created.statusCode, created.body).toBe(201);
    const c = created.json();
    expect(Object.keys(c).sort()).toEqual(
      [
        "artifact_id",
        "artifact_type",
        "created_at",
        "public_path",
        "public_url",
        "status",
        "token",
        "token_id",
      ].sort(),
    );
    expect(c.token).toMatch(/^tgp_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(c.token.slice(4), "base64url")).toHaveLength(32);
    expect(c.public_path).toBe(`/public/v2/verify/${c.token}`);
    expect(c.public_url).toBe(`http://localhost:8000/public/v2/verify/${c.token}`);
    expect(c).toMatchObject({ artifact_type: "receipt", artifact_id: receipt.receiptId, status: "active" });
    expect(created.headers["cache-control"]).toBe("no-store");

    // Only the SHA-256 hash is stored.
    const stored = await sql(t, "SELECT * FROM public_verification_tokens WHERE id = $1", [c.token_id]);
    expect(stored.rows[0]!.token_hash).toBe(createHash("sha256").update(c.token).digest("hex"));
    expect(JSON.stringify(stored.rows[0])).not.toContain(c.token);

    const v = await publicGet(c.public_path);
    expect(v.statusCode, v.body).toBe(200);
    expect(v.json()).toEqual({
      artifact_type: "receipt",
      verification_status: "valid",
      integrity_status: "valid",
      signature_status: "valid",
      key_status: "trusted",
      timestamp_anchor_status: "not_configured",
      verified_at: new Date(t.clock.nowMs()).toISOString(),
    });
    expect(v.headers["cache-control"]).toBe("no-store");
    for (const secretish of [
      org.orgId,
      org.slug,
      receipt.receiptId,
      receipt.chainId,
      receipt.receiptNumber,
    ]) {
      expect(v.body).not.toContain(secretish);
    }
    assertNoProofMaterial(v.body);

    const list = await t.call("GET", TOKENS, { token: adminUser });
    expect(list.statusCode, list.body).toBe(200);
    const entry = list.json().tokens.find((x: { token_id: string }) => x.token_id === c.token_id);
    expect(entry).toEqual({
      token_id: c.token_id,
      artifact_type: "receipt",
      artifact_id: receipt.receiptId,
      status: "active",
      created_by: "api-key:admin-key",
      created_at: c.created_at,
      revoked_at: null,
      last_used_at: new Date(t.clock.nowMs()).toISOString(),
    });
    expect(list.body).not.toContain(c.token);
    expect(list.body).not.toContain(stored.rows[0]!.token_hash);

    t.clock.advance(1000);
    const revoked = await t.call("POST", `${TOKENS}/${c.token_id}/revoke`, { token: org.adminKey });
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json()).toEqual({
      token_id: c.token_id,
      artifact_type: "receipt",
      artifact_id: receipt.receiptId,
      status: "revoked",
      revoked_at: new Date(t.clock.nowMs()).toISOString(),
    });
    expect(revoked.body).not.toContain(c.token);
    t.clock.advance(1000);
    const again = await t.call("POST", `${TOKENS}/${c.token_id}/revoke`, { token: adminUser });
    expect(again.json()).toEqual(revoked.json()); // idempotent: the first revocation time stays

    const after = await publicGet(c.public_path);
    expect(after.statusCode).toBe(404);
    expect(after.json()).toEqual(SANITIZED);

    const revokedList = await t.call("GET", `${TOKENS}?status=revoked`, { token: org.adminKey });
    expect(revokedList.json().tokens.map((x: { token_id: string }) => x.token_id)).toContain(c.token_id);
    const activeList = await t.call("GET", `${TOKENS}?status=active`, { token: org.adminKey });
    expect(activeList.json().tokens.map((x: { token_id: string }) => x.token_id)).not.toContain(c.token_id);
  });

  it("unknown, malformed and revoked tokens get the same error, byte for byte", async () => {
    const c = (
      await issue(org.adminKey, { artifact_type: "receipt", artifact_id: receipt.receiptId })
    ).json();
    await t.call("POST", `${TOKENS}/${c.token_id}/revoke`, { token: org.adminKey });
    const probes = [
      c.token, // revoked
      `tgp_${randomBytes(32).toString("base64url")}`, // unknown, well-formed
      "tgp_short", // malformed
      "not-a-token-at-all",
      `${c.token}x`, // one character too long
      "%F0%9F%94%91", // non-ASCII
      "a".repeat(600),
      `${c.token}/extra`,
      "",
    ];
    const responses = await Promise.all(probes.map((p) => publicGet(`/public/v2/verify/${p}`)));
    for (const r of responses) {
      expect(r.statusCode).toBe(404);
      expect(r.headers["content-type"]).toBe(responses[0]!.headers["content-type"]);
      expect(r.body).toBe(responses[0]!.body);
    }
    expect(responses[0]!.json()).toEqual(SANITIZED);
    const labels = { surface: "public", artifact_type: "unknown", status: "unavailable" };
    expect(await counterValue(t, "tollgate_verification_results_total", labels)).toBeGreaterThanOrEqual(
      probes.length,
    );
  });

  it("a token with NUL or that is not UTF-8 gets the same uniform 404, not a 400 (also the legacy route)", async () => {
    const reference = await publicGet(`/public/v2/verify/tgp_${randomBytes(32).toString("base64url")}`);
    const c = (
      await issue(org.adminKey, { artifact_type: "receipt", artifact_id: receipt.receiptId })
    ).json();
    const paths = [
      "/public/v2/verify/tgp_%00abc", // NUL
      `/public/v2/verify/${c.token.slice(0, -1)}%00`, // a valid token with its last character a NUL
      "/public/v2/verify/%FF%FE", // not UTF-8
      "/public/v2/verify/tgp_%C3%28",
      "/public/v2/verify/%ED%A0%80", // an encoded lone surrogate
      "/public/approvals/%FF/verify",
      "/public/approvals/%00/verify",
    ];
    for (const p of paths) {
      const r = await publicGet(p);
      expect({ p, status: r.statusCode, body: r.body }).toEqual({ p, status: 404, body: reference.body });
      expect(r.headers["content-type"]).toBe(reference.headers["content-type"]);
      expect(r.headers["cache-control"]).toBe("no-store");
      expect(r.headers["referrer-policy"]).toBe("no-referrer");
    }
  });

  it("a token whose artifact is gone gets the same sanitized error", async () => {
    const gone = await completedReceipt(t, org, "to-delete");
    const c = (await issue(org.adminKey, { artifact_type: "receipt", artifact_id: gone.receiptId })).json();
    expect((await publicGet(c.public_path)).statusCode).toBe(200);
    await sql(t, "DELETE FROM receipts WHERE id = $1", [gone.receiptId]);
    const r = await publicGet(c.public_path);
    expect(r.statusCode).toBe(404);
    expect(r.json()).toEqual(SANITIZED);
  });

  it("public results follow the artifact: a tampered receipt verifies invalid", async () => {
    const victim = await completedReceipt(t, org, "victim");
    const c = (await issue(adminUser, { artifact_type: "receipt", artifact_id: victim.receiptId })).json();
    await sql(
      t,
      `UPDATE receipts SET body = replace(body, '"chain_name":"victim"', '"chain_name":"edited"') WHERE id = $1`,
      [victim.receiptId],
    );
    expect((await publicGet(c.public_path)).json()).toMatchObject({
      verification_status: "invalid",
      integrity_status: "invalid",
      signature_status: "invalid",
    });
  });

  it("approval tokens: pending, then valid once decided; never actor details or notes", async () => {
    const { approvalId, chainId } = await pendingApproval(t, org);
    const c = (await issue(adminUser, { artifact_type: "approval", artifact_id: approvalId })).json();
    expect(c.artifact_type).toBe("approval");
    expect((await publicGet(c.public_path)).json()).toEqual({
      artifact_type: "approval",
      verification_status: "pending",
      integrity_status: "not_evaluated",
      signature_status: "not_applicable",
      key_status: "not_applicable",
      timestamp_anchor_status: "not_configured",
      verified_at: new Date(t.clock.nowMs()).toISOString(),
    });
    await decide(t, member, approvalId, { decision: "approve", notes: "looks right to me" });
    const r = await publicGet(c.public_path);
    expect(r.json()).toMatchObject({
      artifact_type: "approval",
      verification_status: "valid",
      integrity_status: "valid",
      signature_status: "valid",
      key_status: "trusted",
    });
    for (const s of ["meg@example.com", "looks right", approvalId, chainId, org.orgId, org.slug])
      expect(r.body).not.toContain(s);
    assertNoProofMaterial(r.body);
  });

  it("is admin only: members, approvers and client keys get 403, no credentials 401", async () => {
    const body = { artifact_type: "receipt", artifact_id: receipt.receiptId };
    for (const token of [member, org.clientKey]) {
      expect((await issue(token, body)).statusCode).toBe(403);
      expect((await t.call("GET", TOKENS, { token })).statusCode).toBe(403);
      expect((await t.call("POST", `${TOKENS}/${randomUUID()}/revoke`, { token })).statusCode).toBe(403);
    }
    expect((await t.call("POST", TOKENS, { body })).statusCode).toBe(401);
    expect((await t.call("GET", TOKENS)).statusCode).toBe(401);
    expect((await issue(t.adminToken, body)).statusCode).toBe(403);
  });

  it("validates the body and names the field", async () => {
    const bad = await issue(org.adminKey, { artifact_type: "chain", artifact_id: receipt.receiptId });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("artifact_type");
    const badId = await issue(org.adminKey, { artifact_type: "receipt", artifact_id: "42" });
    expect(badId.statusCode).toBe(400);
    expect(badId.json().message).toContain("artifact_id");
    const extra = await issue(org.adminKey, {
      artifact_type: "receipt",
      artifact_id: receipt.receiptId,
      ttl: 5,
    });
    expect(extra.statusCode).toBe(400);
    const unknown = await issue(org.adminKey, { artifact_type: "approval", artifact_id: randomUUID() });
    expect(unknown.statusCode).toBe(404);
  });

  it("another organization's artifacts and tokens are 404 on every route", async () => {
    const foreignAdmin = await session(t, other, "oz@example.com", ["admin"]);
    const { approvalId } = await pendingApproval(t, org);
    for (const token of [other.adminKey, foreignAdmin]) {
      expect(
        (await issue(token, { artifact_type: "receipt", artifact_id: receipt.receiptId })).statusCode,
      ).toBe(404);
      expect((await issue(token, { artifact_type: "approval", artifact_id: approvalId })).statusCode).toBe(
        404,
      );
    }
    const mine = (
      await issue(org.adminKey, { artifact_type: "receipt", artifact_id: receipt.receiptId })
    ).json();
    const probe = await t.call("POST", `${TOKENS}/${mine.token_id}/revoke`, { token: other.adminKey });
    expect(probe.statusCode).toBe(404);
    const theirs = await t.call("GET", TOKENS, { token: other.adminKey });
    expect(theirs.json().tokens.map((x: { token_id: string }) => x.token_id)).not.toContain(mine.token_id);
    // still active: the foreign revoke did nothing
    expect((await publicGet(mine.public_path)).statusCode).toBe(200);
  });

  it("keeps the raw-UUID public approval route for compatibility, marked deprecated and counted", async () => {
    const { approvalId } = await pendingApproval(t, org);
    await decide(t, org.adminKey, approvalId, { decision: "deny", notes: "no" });
    const labels = { route: "/public/approvals/{approval_id}/verify" };
    const before = await counterValue(t, "tollgate_legacy_route_requests_total", labels);
    const r = await publicGet(`/public/approvals/${approvalId}/verify`);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.headers.deprecation).toBe("true");
    expect(r.headers.link).toBe(`</v1/verification/v2/approvals/${approvalId}>; rel="successor-version"`);
    expect(r.json()).toMatchObject({
      artifact_type: "approval",
      verification_status: "valid",
      signature_status: "valid",
    });
    expect(Object.keys(r.json()).sort()).toEqual(
      [
        "artifact_type",
        "integrity_status",
        "key_status",
        "signature_status",
        "timestamp_anchor_status",
        "verification_status",
        "verified_at",
      ].sort(),
    );
    const unknown = await publicGet(`/public/approvals/${randomUUID()}/verify`);
    const malformed = await publicGet("/public/approvals/nope/verify");
    const tokenError = await publicGet(`/public/v2/verify/tgp_${"A".repeat(43)}`);
    for (const e of [unknown, malformed]) {
      expect(e.statusCode).toBe(404);
      expect(e.body).toBe(tokenError.body);
      expect(e.headers.deprecation).toBe("true");
    }
    expect(await counterValue(t, "tollgate_legacy_route_requests_total", labels)).toBe(before + 3);
  });

  it("rate-limits the public routes per client address (60 per minute) with 429", async () => {
    const a = newAddress();
    const path = `/public/v2/verify/tgp_${"B".repeat(43)}`;
    for (let i = 0; i < 60; i++) expect((await publicGet(path, a)).statusCode).toBe(404);
    const limited = await publicGet(path, a);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({
      statusCode: 429,
      code: "TG_ERR_RATE_LIMITED",
      error: "Too Many Requests",
    });
    expect(limited.headers["retry-after"]).toBeDefined();
    expect((await publicGet(`/public/approvals/${randomUUID()}/verify`, a)).statusCode).toBe(429);
    // another address is unaffected, and authenticated routes are not limited
    expect((await publicGet(path, newAddress())).statusCode).toBe(404);
    const authed = await t.service.app.inject({
      method: "GET",
      url: `/v1/verification/v2/receipts/${receipt.receiptId}`,
      remoteAddress: a,
      headers: { authorization: `Bearer ${org.adminKey}` },
    });
    expect(authed.statusCode).toBe(200);
  });
});

describe("public verification logging", () => {
  it("never writes a token into the request log", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const database = await freshDatabase();
    const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
    const service = await buildService({
      db: database.db,
      masterKey: randomBytes(32),
      adminToken,
      clock: new ManualClock(),
      schedulerIntervalMs: 0,
      defaultMetrics: false,
      log: createLogger({ level: "info", destination: sink }),
    });
    try {
      const token = `tgp_${randomBytes(32).toString("base64url")}`;
      const r = await service.app.inject({ method: "GET", url: `/public/v2/verify/${token}` });
      expect(r.statusCode).toBe(404);
      const log = lines.join("");
      expect(log).toContain("/public/v2/verify/[REDACTED]");
      expect(log).not.toContain(token);
      expect(log).not.toContain(token.slice(4, 20));
      // One line per request, at completion, with the fields of Fastify's former two lines.
      const entries = lines.map((l) => JSON.parse(l)).filter((e) => e.reqId !== undefined);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        msg: "request completed",
        req: { method: "GET", url: "/public/v2/verify/[REDACTED]" },
        res: { statusCode: 404 },
      });
      expect(entries[0].responseTime).toBeTypeOf("number");
    } finally {
      await service.close();
      await database.close();
    }
  });
});
