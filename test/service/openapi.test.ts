/**
 * GET /openapi.json: an OpenAPI 3.1 document generated from the zod route schemas, valid
 * against the OpenAPI 3.1 JSON Schema, covering every /v1 (admin included), /public and
 * .well-known route with its security, and no dashboard page; every operation with an
 * operationId, a summary and its success body; `redocly lint` (recommended rules) finds no
 * error and openapi-typescript types no field as `never`.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Validator } from "@seriousme/openapi-schema-validator";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

describe("the OpenAPI document", () => {
  let t: TestService;
  let doc: {
    openapi: string;
    paths: Record<
      string,
      Record<
        string,
        {
          security?: unknown[];
          operationId?: string;
          summary?: string;
          responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
        }
      >
    >;
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
      "GET /public/v2/verify/{opaque_token}",
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
        else expect(op.security, p).toEqual([]);
        expect(Object.keys(op.responses ?? {}), p).toEqual(expect.arrayContaining(["4XX", "5XX"]));
      }
    }
  });

  it("every operation has a unique operationId, a summary and a documented success body", () => {
    const ids: string[] = [];
    for (const [p, ops] of Object.entries(doc.paths)) {
      expect(p, "a valid path template").toMatch(/^(\/([\w.-]+|\{[a-z_]+\}))+$/);
      for (const [m, op] of Object.entries(ops)) {
        const where = `${m.toUpperCase()} ${p}`;
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.summary, where).toBeTruthy();
        ids.push(op.operationId!);
        const success = Object.entries(op.responses ?? {}).filter(([status]) => /^2\d\d$/.test(status));
        expect(success.length, where).toBeGreaterThan(0);
        for (const [, r] of success) {
          const media = Object.keys(r.content ?? {});
          expect(media, where).toEqual([p === "/metrics" ? "text/plain" : "application/json"]);
          expect(r.content![media[0]!]!.schema, where).toBeTruthy();
        }
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(51);
  });

  it("redocly lint (recommended rules) reports no error", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-openapi-"));
    try {
      const file = path.join(dir, "openapi.json");
      writeFileSync(file, JSON.stringify(doc));
      const r = await promisify(execFile)(
        "npx",
        ["redocly", "lint", file, "--format=json", "--extends=recommended"],
        {
          env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
          maxBuffer: 64 * 1024 * 1024,
        },
      ).catch((err: { stdout?: string; stderr?: string }) => ({
        stdout: err.stdout ?? "",
        stderr: err.stderr ?? "",
      }));
      const report = JSON.parse(r.stdout) as {
        totals: { errors: number };
        problems: { ruleId: string; severity: string; message: string }[];
      };
      expect(report.problems.filter((x) => x.severity === "error")).toEqual([]);
      expect(report.totals.errors).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("openapi-typescript types no field as never (only the slots an operation does not use)", async () => {
    const types = astToString(
      await openapiTS(structuredClone(doc) as unknown as Parameters<typeof openapiTS>[0]),
    );
    expect(types).toMatch(/policy_decision: "allow" \| "allow_with_flag" \| "require_approval" \| "deny";/);
    const unexpected = types
      .split("\n")
      .filter((line) => /\bnever\b/.test(line) && !/^\s*(\/\*\*|\*)/.test(line)) // not in comments
      .filter((line) => !/^\s*[\w$]+\?: never;$/.test(line)) // an absent parameter kind or method
      .filter(
        (line) => !/^\s*(schemas|responses|parameters|requestBodies|headers|pathItems): never;$/.test(line),
      )
      .filter((line) => !/^export type (webhooks|\$defs) = Record<string, never>;$/.test(line));
    expect(unexpected).toEqual([]);
  });
});
