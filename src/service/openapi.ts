/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod route schemas
 * (@fastify/swagger + fastify-type-provider-zod's jsonSchemaTransform) and served at
 * GET /openapi.json. Every /v1 (admin included), /public, /.well-known and health route is in
 * it; the dashboard's HTML pages and the sign-in flow are not (they are pages, not an API).
 * Security: /v1 routes take `Authorization: Bearer <API key | admin token | session token>`
 * (scheme `bearerAuth`) or the dashboard session cookie (`sessionCookie`); the rest are open.
 * Every operation has an operationId (OPERATION_IDS), documents its success bodies from the
 * contract's zod schemas (src/contract/v1; the routes' `response` schemas, which also serialize
 * every answer: responseSerializerCompiler) and the error body of README "Errors" for 4XX and 5XX.
 * Public operations say `security: []`. The wildcard route /public/v2/verify/* is documented as
 * /public/v2/verify/{opaque_token}.
 *
 * Register before any route: @fastify/swagger collects routes as they are added.
 */
import swagger from "@fastify/swagger";
import type { FastifyInstance, FastifySchema } from "fastify";
import type { FastifySerializerCompiler } from "fastify/types/schema.js";
import fp from "fastify-plugin";
import { jsonSchemaTransform, ResponseSerializationError } from "fastify-type-provider-zod";
import { z } from "zod";
import { SESSION_COOKIE } from "./auth.js";

/** JSON Schema of the error body every API error carries (src/service/errors.ts ErrorBody). */
const errorBodySchema = {
  type: "object",
  required: ["statusCode", "code", "error", "message"],
  properties: {
    statusCode: { type: "integer" },
    code: { type: "string", description: "Stable error code, e.g. TG_ERR_VALIDATION" },
    error: { type: "string", description: "HTTP reason phrase" },
    message: { type: "string" },
    details: { type: "object", additionalProperties: true },
  },
} as const;

/** Paths that are pages or sign-in steps for people, not API operations. */
const isPage = (url: string) =>
  url === "/openapi.json" || url.startsWith("/dashboard") || url.startsWith("/auth/");

/** [operationId, summary] of every documented operation, by `METHOD url` (Fastify's url). */
export const OPERATION_IDS: Record<string, readonly [operationId: string, summary: string]> = {
  "GET /healthz": ["getLiveness", "Liveness"],
  "GET /readyz": ["getReadiness", "Readiness (the database answers)"],
  "GET /metrics": ["getMetrics", "Prometheus metrics"],
  "POST /v1/chains": ["createChain", "Open a chain"],
  "POST /v1/policies/replay": [
    "replayPolicy",
    "Replay a candidate policy over the organization's recorded events (read only)",
  ],
  "GET /v1/chains/:chain_id": ["getChain", "A chain, its events and their evidence"],
  "POST /v1/chains/:chain_id/actions": ["recordAction", "Record an agent action and get the policy decision"],
  "POST /v1/chains/:chain_id/actions/evaluate": ["evaluateAction", "Decide an action without recording it"],
  "GET /v1/chains/:chain_id/approval-status": [
    "getApprovalStatus",
    "The chain's status and its latest (or given) approval",
  ],
  "POST /v1/chains/:chain_id/complete": ["completeChain", "Complete a chain: its signed receipt"],
  "GET /v1/chains/:chain_id/receipt": ["getChainReceipt", "The signed receipt of a chain"],
  "GET /v1/receipts/:receipt_id": ["getReceipt", "A signed receipt"],
  "GET /v1/approvals": ["listApprovals", "Approvals, newest first"],
  "GET /v1/approvals/:approval_id": ["getApproval", "One approval"],
  "POST /v1/approvals/:approval_id/decision": ["decideApproval", "Approve or deny"],
  "POST /v1/approvals/:approval_id/withdraw": ["withdrawApproval", "Withdraw a pending approval"],
  "PUT /v1/admin/organizations/:slug": ["putOrganization", "Create or update an organization"],
  "GET /v1/admin/organizations/:slug": ["getOrganization", "An organization with its policies and teams"],
  "DELETE /v1/admin/organizations/:slug": ["deleteOrganization", "Delete an organization"],
  "POST /v1/admin/organizations/:slug/kill-switch": ["setKillSwitch", "Set the kill switch"],
  "POST /v1/admin/organizations/:slug/pause": ["setPause", "Pause or resume"],
  "PUT /v1/admin/organizations/:slug/policies/:name": ["putPolicy", "Create or update a named policy"],
  "DELETE /v1/admin/organizations/:slug/policies/:name": ["deletePolicy", "Delete a named policy"],
  "POST /v1/admin/organizations/:slug/policies/replay": [
    "replayOrganizationPolicy",
    "Replay a candidate policy over an organization's recorded events (read only; the operator)",
  ],
  "PUT /v1/admin/organizations/:slug/approver-teams/:name": [
    "putApproverTeam",
    "Create or update an approver team",
  ],
  "DELETE /v1/admin/organizations/:slug/approver-teams/:name": [
    "deleteApproverTeam",
    "Delete an approver team",
  ],
  "PUT /v1/admin/organizations/:slug/members/:email": ["putMember", "Set a member's roles"],
  "POST /v1/admin/organizations/:slug/api-keys": ["createApiKey", "Create an API key (shown once)"],
  "GET /v1/admin/organizations/:slug/api-keys": ["listApiKeys", "API keys of an organization"],
  "POST /v1/admin/organizations/:slug/api-keys/:key_id/revoke": ["revokeApiKey", "Revoke an API key"],
  "GET /v1/admin/signing-keys": ["listSigningKeys", "The service's Ed25519 receipt and approval keys"],
  "POST /v1/admin/signing-keys/rotate": ["rotateSigningKey", "Rotate the receipt or approval signing key"],
  "POST /v1/admin/signing-keys/:kid/revoke": [
    "revokeSigningKey",
    "Revoke a signing key: its signatures from a time on are refused",
  ],
  "GET /v1/admin/organizations/:slug/receipt-hmac-keys": [
    "listReceiptHmacKeys",
    "An organization's receipt HMAC keys (ids and validity, never material)",
  ],
  "POST /v1/admin/organizations/:slug/receipt-hmac-keys/rotate": [
    "rotateReceiptHmacKey",
    "Rotate an organization's receipt HMAC key",
  ],
  "POST /v1/admin/organizations/:slug/receipt-hmac-keys/:kid/revoke": [
    "revokeReceiptHmacKey",
    "Revoke an organization's receipt HMAC key from a time on",
  ],
  "POST /v1/chains/:chain_id/events/:event_id/outcome": [
    "recordOutcome",
    "Report what happened when an action was carried out",
  ],
  "POST /v1/outcomes": ["recordOutcomes", "Report outcomes in a batch"],
  "GET /v1/verification/v2/receipts/:receipt_id": ["verifyReceipt", "Verify a receipt"],
  "GET /v1/verification/v2/approvals/:approval_id": ["verifyApproval", "Verify an approval"],
  "POST /v1/public-verification-tokens": ["issuePublicVerificationToken", "Issue a public verification link"],
  "GET /v1/public-verification-tokens": [
    "listPublicVerificationTokens",
    "Public verification tokens, newest first",
  ],
  "POST /v1/public-verification-tokens/:token_id/revoke": [
    "revokePublicVerificationToken",
    "Revoke a public verification token",
  ],
  "GET /v1/receipts/export": ["exportReceipts", "Export receipts with their evidence"],
  "GET /v1/receipts/checkpoint": ["getReceiptCheckpoint", "The latest signed checkpoint of the receipt log"],
  "POST /v1/verification/v2/checkpoints": [
    "verifyCheckpoint",
    "Verify a kept checkpoint against the receipt log",
  ],
  "GET /.well-known/tollgate/receipt-keys.json": ["getReceiptKeys", "Public keys that sign receipts (JWKS)"],
  "GET /.well-known/tollgate/approval-keys.json": [
    "getApprovalKeys",
    "Public keys that sign approvals (JWKS)",
  ],
  "GET /v1/receipts/:receipt_id/verify": ["verifyReceiptLegacy", "Verify a receipt (legacy, deprecated)"],
  "GET /public/v2/verify/*": ["verifyPublicToken", "Public verification by opaque token"],
  "GET /public/approvals/:approval_id/verify": [
    "verifyPublicApprovalLegacy",
    "Public approval verification by id (legacy, deprecated)",
  ],
};

/** Wildcard routes and the path parameter the document names in place of `*`. */
const WILDCARDS: Record<string, string> = { "/public/v2/verify/*": "opaque_token" };

/**
 * Fastify serializer for the routes' zod response schemas: the answer is parsed through its
 * schema as a client parses it (`z.object` drops fields the contract does not name, `looseObject`
 * passes them through, defaults fill in) and sent as JSON.
 * @throws ResponseSerializationError (a 500) when a route answers outside its contract
 */
export const responseSerializerCompiler: FastifySerializerCompiler<z.ZodType> =
  ({ schema, method, url }) =>
  (data) => {
    const result = z.safeParse(schema, data);
    if (!result.success) throw new ResponseSerializationError(method, url, { cause: result.error });
    return JSON.stringify(result.data);
  };

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/**
 * The converter writes a recursive schema (only `z.json()`: the receipt's metadata and payload
 * values) as a `$ref` to a component it never defines; such a value is any JSON, which the empty
 * schema says. Returns `value` with those references replaced.
 */
function inlineCycles(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inlineCycles);
  if (value === null || typeof value !== "object") return value;
  const ref = (value as { $ref?: unknown }).$ref;
  if (typeof ref === "string" && /^#\/components\/schemas\/schema\d+$/.test(ref)) {
    return { description: "Any JSON value" };
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inlineCycles(v)]));
}

/**
 * jsonSchemaTransform plus operationId, security requirements (`security: []` on public
 * operations), error responses, wildcard parameters named, and pages hidden.
 * @throws Error for an API route without an operationId in OPERATION_IDS
 */
function transform(input: TransformInput): { schema: FastifySchema; url: string } {
  if (isPage(input.url)) return { schema: { hide: true }, url: input.url };
  const { schema, url } = jsonSchemaTransform({ ...input, schema: input.schema ?? {} });
  const method = String(input.route.method);
  const named = OPERATION_IDS[`${method} ${url}`];
  if (!named) throw new Error(`openapi: no operationId for ${method} ${url} (add it to OPERATION_IDS)`);
  const authenticated = url.startsWith("/v1/");
  const response = (schema.response ?? {}) as Record<string, unknown>;
  const wildcard = WILDCARDS[url];
  const params = schema.params as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  return {
    url: wildcard ? url.replace(/\*$/, `:${wildcard}`) : url,
    schema: <FastifySchema>{
      ...schema,
      operationId: named[0],
      summary: named[1],
      security: authenticated ? [{ bearerAuth: [] }, { sessionCookie: [] }] : [],
      ...(wildcard && params?.properties?.["*"]
        ? { params: { ...params, properties: { [wildcard]: params.properties["*"] }, required: [wildcard] } }
        : {}),
      response: {
        ...(inlineCycles(response) as Record<string, unknown>),
        "4XX": { description: "Client error", ...errorBodySchema },
        "5XX": { description: "Server error (never for any input: a bug)", ...errorBodySchema },
      },
    },
  };
}

/** Registers @fastify/swagger and GET /openapi.json. `version` is the package version. */
export const openApiPlugin = fp(
  async (app: FastifyInstance, opts: { version: string }) => {
    await app.register(swagger, {
      openapi: {
        openapi: "3.1.0",
        info: {
          title: "Tollgate governance service",
          version: opts.version,
          license: { name: "Apache-2.0", identifier: "Apache-2.0" },
          description:
            "Governed chains of AI agent actions, human approvals, signed receipts and verification. " +
            "Input limits and error codes: see the README.",
        },
        servers: [{ url: "/", description: "This service" }],
        components: {
          securitySchemes: {
            bearerAuth: {
              type: "http",
              scheme: "bearer",
              description:
                "An API key (tg_...), a session token (tgs_...) or the service admin token (tga_...)",
            },
            sessionCookie: { type: "apiKey", in: "cookie", name: SESSION_COOKIE },
          },
        },
      },
      transform,
    });
    app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  },
  { name: "tollgate-openapi" },
);
