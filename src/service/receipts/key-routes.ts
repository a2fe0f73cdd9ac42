/**
 * Key rotation and revocation by API (ADR 0010; docs/operations/keys.md): the service's Ed25519
 * receipt and approval keys (service admin token only: they sign for every organization) and an
 * organization's receipt HMAC keys (its admins, or the service admin).
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { SlugSchema } from "../../contract/v1/admin.js";
import {
  HmacKeyListSchema,
  HmacKidSchema,
  KeyRevokedSchema,
  KeyRotatedSchema,
  RevokeKeySchema,
  RotateSigningKeySchema,
  SigningKeyListSchema,
  SigningKidSchema,
} from "../../contract/v1/keys.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { badRequest } from "../errors.js";
import { authorizeOrgAdmin, requireServiceAdmin } from "../orgs/admin-routes.js";
import { orgBySlug } from "../orgs/orgs.js";
import type { ReceiptHmacKeys } from "./hmac-keys.js";
import type { SigningKeys } from "./signing-keys.js";

/** What the key routes use. */
export interface KeyRouteDeps {
  db: Database;
  clock: Clock;
  signingKeys: SigningKeys;
  receiptHmacKeys: ReceiptHmacKeys;
}

/**
 * The revocation time of a revoke body: `revoked_at`, or now when absent.
 * @throws ApiError 400 naming body.revoked_at when it is in the future
 */
function revocationTime(body: { revoked_at?: string | undefined }, nowMs: number): number {
  if (body.revoked_at === undefined) return nowMs;
  const t = Date.parse(body.revoked_at);
  if (t > nowMs) {
    const issue = {
      path: "body.revoked_at",
      pointer: "/revoked_at",
      location: "body",
      message: "must not be in the future",
    };
    throw badRequest(`${issue.path}: ${issue.message}`, { issues: [issue] });
  }
  return t;
}

/** Admin routes that rotate and revoke signing keys. */
export const keyRoutes: FastifyPluginAsyncZod<KeyRouteDeps> = async (app, deps) => {
  const now = () => deps.clock.nowMs();

  app.get("/v1/admin/signing-keys", { schema: { response: { 200: SigningKeyListSchema } } }, async (req) => {
    requireServiceAdmin(req.principal);
    return {
      receipt: await deps.signingKeys.list("receipt"),
      approval: await deps.signingKeys.list("approval"),
    };
  });

  app.post(
    "/v1/admin/signing-keys/rotate",
    { schema: { body: RotateSigningKeySchema, response: { 201: KeyRotatedSchema } } },
    async (req, reply) => {
      requireServiceAdmin(req.principal);
      const rotated = await deps.signingKeys.rotate(req.body.purpose);
      req.log.info({ purpose: req.body.purpose, kid: rotated.key.kid }, "signing key rotated");
      return reply.code(201).send({ purpose: req.body.purpose, organization: null, ...rotated });
    },
  );

  app.post(
    "/v1/admin/signing-keys/:kid/revoke",
    {
      schema: {
        params: z.object({ kid: SigningKidSchema }),
        body: RevokeKeySchema.default({}),
        response: { 200: KeyRevokedSchema },
      },
    },
    async (req) => {
      requireServiceAdmin(req.principal);
      const at = revocationTime(req.body, now());
      const revoked = await deps.signingKeys.revoke(req.params.kid, at, req.body.reason ?? null);
      req.log.warn({ kid: req.params.kid, purpose: revoked.purpose }, "signing key revoked");
      return { ...revoked, organization: null };
    },
  );

  const OrgParams = z.object({ slug: SlugSchema });

  app.get(
    "/v1/admin/organizations/:slug/receipt-hmac-keys",
    { schema: { params: OrgParams, response: { 200: HmacKeyListSchema } } },
    async (req) => {
      await authorizeOrgAdmin(deps.db, req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      return { organization: org.slug, keys: await deps.receiptHmacKeys.list(deps.db, org.id) };
    },
  );

  app.post(
    "/v1/admin/organizations/:slug/receipt-hmac-keys/rotate",
    { schema: { params: OrgParams, response: { 201: KeyRotatedSchema } } },
    async (req, reply) => {
      await authorizeOrgAdmin(deps.db, req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      const rotated = await deps.db.tx((q) => deps.receiptHmacKeys.rotate(q, org.id, now()));
      req.log.info({ organization: org.slug, kid: rotated.key.kid }, "receipt HMAC key rotated");
      return reply.code(201).send({ purpose: "receipt_hmac", organization: org.slug, ...rotated });
    },
  );

  app.post(
    "/v1/admin/organizations/:slug/receipt-hmac-keys/:kid/revoke",
    {
      schema: {
        params: z.object({ slug: SlugSchema, kid: HmacKidSchema }),
        body: RevokeKeySchema.default({}),
        response: { 200: KeyRevokedSchema },
      },
    },
    async (req) => {
      await authorizeOrgAdmin(deps.db, req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      const at = revocationTime(req.body, now());
      const revoked = await deps.db.tx((q) =>
        deps.receiptHmacKeys.revoke(q, org.id, req.params.kid, at, req.body.reason ?? null, now()),
      );
      req.log.warn({ organization: org.slug, kid: req.params.kid }, "receipt HMAC key revoked");
      return { purpose: "receipt_hmac" as const, organization: org.slug, ...revoked };
    },
  );
};
