/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the zod route schemas
 * (@fastify/swagger + fastify-type-provider-zod's jsonSchemaTransform) and served at
 * GET /openapi.json. Every /v1 (admin included), /public, /.well-known and health route is in
 * it; the dashboard's HTML pages and the sign-in flow are not (they are pages, not an API).
 * Security: /v1 routes take `Authorization: Bearer <API key | admin token | session token>`
 * (scheme `bearerAuth`) or the dashboard session cookie (`sessionCookie`); the rest are open.
 * Every operation documents the error body of README "Errors" for 4XX and 5XX.
 *
 * Register before any route: @fastify/swagger collects routes as they are added.
 */
import swagger from "@fastify/swagger";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { jsonSchemaTransform } from "fastify-type-provider-zod";
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

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/** jsonSchemaTransform plus security requirements, error responses and pages hidden. */
function transform(input: TransformInput) {
  if (isPage(input.url)) return { schema: { hide: true }, url: input.url };
  const { schema, url } = jsonSchemaTransform({ ...input, schema: input.schema ?? {} });
  const authenticated = url.startsWith("/v1/");
  const response = (schema.response ?? {}) as Record<string, unknown>;
  return {
    url,
    schema: {
      ...schema,
      ...(authenticated && { security: [{ bearerAuth: [] }, { sessionCookie: [] }] }),
      response: {
        ...response,
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
          description:
            "Governed chains of AI agent actions, human approvals, signed receipts and verification. " +
            "Input limits and error codes: see the README.",
        },
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
