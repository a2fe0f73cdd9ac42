/**
 * GET /openapi.json: an OpenAPI 3.1 document generated from the zod route schemas, valid
 * against the OpenAPI 3.1 JSON Schema, covering every /v1 (admin included), /public and
 * .well-known route with its security, and no dashboard page.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

describe("the OpenAPI document", () => {
  let t: TestService;
  let doc: {
    openapi: string;
    paths: Record<string, Record<string, { security?: unknown[]; responses?: Record<string, unknown> }>>;
    components: { securitySchemes: Record<string, unknown> };
  };
  beforeAll(async () => {
    t = await startTestService();
    const r = await t.call("GET", "/openapi.json");
    expect(r.statusCode).toBe(200);
    doc = r.json();
  });
  afterAll(async () => t?.close());

  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(
      structuredClone(doc) as unknown as Parameters<Validator["validate"]>[0],
    );
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("covers every API route and no page", () => {
    const operations = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`),
    );
    for (const op of [
      "POST /v1/chains",
      "GET /v1/chains/{chain_id}",
      "POST /v1/chains/{chain_id}/actions",
      "GET /v1/chains/{chain_id}/approval-status",
      "POST /v1/chains/{chain_id}/complete",
      "GET /v1/verification/v2/receipts/{receipt_id}",
      "GET /v1/verification/v2/approvals/{approval_id}",
      "GET /v1/public-verification-tokens",
      "POST /v1/public-verification-tokens",
      "POST /v1/public-verification-tokens/{token_id}/revoke",
      "GET /v1/receipts/{receipt_id}/verify",
      "PUT /v1/admin/organizations/{slug}",
      "POST /v1/admin/organizations/{slug}/api-keys",
      "POST /v1/approvals/{approval_id}/decision",
      "POST /v1/outcomes",
      "GET /public/v2/verify/{*}",
      "GET /.well-known/tollgate/receipt-keys.json",
      "GET /healthz",
    ]) {
      expect(operations).toContain(op);
    }
    expect(operations.filter((o) => / \/(dashboard|auth)\b|openapi/.test(o))).toEqual([]);
  });

  it("every /v1 operation requires bearer or session credentials; public ones none", () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["bearerAuth", "sessionCookie"]);
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const op of Object.values(ops)) {
        if (p.startsWith("/v1/")) expect(op.security, p).toEqual([{ bearerAuth: [] }, { sessionCookie: [] }]);
        else expect(op.security, p).toBeUndefined();
        expect(Object.keys(op.responses ?? {}), p).toEqual(expect.arrayContaining(["4XX", "5XX"]));
      }
    }
  });
});
