/**
 * Principals and role checks (spec: "Authentication"). Who can call:
 * - the service admin token (`Authorization: Bearer tga_...`): every organization; used by the
 *   Kubernetes operator and for bootstrap;
 * - API keys (`Authorization: Bearer tg_...`, spec: prefixed, shown once, stored as a hash),
 *   scoped to one organization with role `client` (agents, sidecars) or `admin`;
 * - dashboard user sessions (cookie `tg_session` or `Authorization: Bearer tgs_...`) with roles
 *   member, admin, approver in one organization;
 * - verified workload tokens (`Authorization: Bearer eyJ...`, a pod's projected service account
 *   token, audience `tollgate`): role `client` in the organization of the pod's namespace
 *   (identity/token-review.ts; issue 27).
 */
import { randomUUID } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Clock } from "./clock.js";
import type { PreparedStatement, Queryable } from "./db/pool.js";
import { forbidden, unauthorized } from "./errors.js";
import { looksLikeJwt } from "./identity/principal.js";
import type { WorkloadAuthenticator, WorkloadPrincipal } from "./identity/token-review.js";
import { hashSecret, newSecret, safeEqual } from "./secrets.js";

/** The spec's service API key prefix. */
export const API_KEY_PREFIX = "tg_";
export const SESSION_PREFIX = "tgs_";
export const SESSION_COOKIE = "tg_session";

export const UserRole = { member: "member", admin: "admin", approver: "approver" } as const;
export type UserRole = (typeof UserRole)[keyof typeof UserRole];

/** An authenticated caller. */
export type Principal =
  | { kind: "service_admin" }
  | { kind: "api_key"; orgId: string; keyId: string; keyName: string; role: "client" | "admin" }
  | { kind: "user"; orgId: string; email: string; roles: UserRole[]; sessionId: string }
  | WorkloadPrincipal;

/** A label for audit records ("who decided"); never a secret. */
export function principalLabel(p: Principal): string {
  if (p.kind === "service_admin") return "service-admin";
  if (p.kind === "api_key") return `api-key:${p.keyName}`;
  if (p.kind === "workload") return p.identity.spiffe_id;
  return p.email;
}

/** Reads the bearer secret from the Authorization header or the session cookie. */
export function bearerOf(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (h?.startsWith("Bearer ")) return h.slice(7).trim();
  const cookie = (req as FastifyRequest & { cookies?: Record<string, string | undefined> }).cookies?.[
    SESSION_COOKIE
  ];
  return cookie ?? null;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Who is calling, resolved by the service's onRequest hook; null without credentials. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The route re-checks the API key inside its own write, so the key may come from ApiKeyCache. */
    cachedApiKey?: boolean;
    /**
     * What unsafe input (rejectUnsafeInput: NUL, unpaired surrogates, ...) and a path that is not
     * valid percent-encoded UTF-8 get on this route instead of the usual 400: the public
     * verification routes answer their one uniform 404.
     */
    unsafeInputError?: () => Error;
  }
}

/** The verified workload identity of a principal; null for every other kind. */
export const identityOf = (p: Principal | null) => (p?.kind === "workload" ? p.identity : null);

/**
 * Resolves a bearer secret to a principal; null when unknown, revoked or expired.
 * @param workloads verifies workload tokens; without it a JWT is refused like an unknown secret.
 * @throws ApiError 401/403/503 from {@link WorkloadAuthenticator.resolve} for a workload token;
 *   403 for a client API key of an organization that turned API keys off.
 */
export async function authenticate(
  q: Queryable,
  secret: string,
  adminToken: string,
  nowMs: number,
  workloads?: WorkloadAuthenticator | null,
): Promise<Principal | null> {
  if (looksLikeJwt(secret)) {
    if (!workloads)
      throw unauthorized(
        "Workload tokens are not accepted: this service has no workload identity configured",
      );
    return workloads.resolve(q, secret, nowMs);
  }
  if (secret.startsWith(SESSION_PREFIX)) {
    const { rows } = await q.query(
      "SELECT id, org_id, email, roles FROM user_sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2",
      [hashSecret(secret), new Date(nowMs)],
    );
    const s = rows[0];
    return s ? { kind: "user", orgId: s.org_id, email: s.email, roles: s.roles, sessionId: s.id } : null;
  }
  if (secret.startsWith(API_KEY_PREFIX)) return apiKeyPrincipal(q, hashSecret(secret));
  return safeEqual(secret, adminToken) ? { kind: "service_admin" } : null;
}

type ApiKeyPrincipal = Extract<Principal, { kind: "api_key" }>;

const API_KEY_BY_HASH: PreparedStatement = {
  name: "tg_api_key_by_hash",
  text: `SELECT k.id, k.org_id, k.name, k.role, o.api_keys_enabled FROM api_keys k
    JOIN organizations o ON o.id = k.org_id WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
};

/**
 * The unrevoked API key whose secret hashes to `hash`, as a principal; null when none.
 * @throws ApiError 403 for a client key of an organization whose API keys are turned off.
 */
async function apiKeyPrincipal(q: Queryable, hash: string): Promise<ApiKeyPrincipal | null> {
  const { rows } = await q.query(API_KEY_BY_HASH, [hash]);
  const k = rows[0];
  if (!k) return null;
  if (k.role === "client" && !k.api_keys_enabled) {
    throw forbidden(
      "This organization turned client API keys off: agents authenticate with their pod's service account token",
    );
  }
  return { kind: "api_key", orgId: k.org_id, keyId: k.id, keyName: k.name, role: k.role };
}

/** How long a remembered API key is used without a database lookup, in ms. */
const API_KEY_CACHE_TTL_MS = 60_000;

/**
 * API keys resolved recently, by the SHA-256 of the secret (never the secret itself). Only
 * routes that re-check the key inside their own guarded write use it — recording an action
 * checks `revoked_at IS NULL` in the statement that writes the event, so a revoked key is
 * refused on its next use, on every replica (docs/adr/0006).
 */
export class ApiKeyCache {
  readonly #entries = new Map<string, { principal: ApiKeyPrincipal; untilMs: number }>();
  constructor(private readonly capacity = 10_000) {}

  /** The principal of an API key secret: from memory when fresh, else from the database. */
  async resolve(q: Queryable, secret: string, nowMs: number): Promise<Principal | null> {
    const hash = hashSecret(secret);
    const hit = this.#entries.get(hash);
    if (hit && hit.untilMs > nowMs) return hit.principal;
    this.#entries.delete(hash);
    const principal = await apiKeyPrincipal(q, hash);
    if (!principal) return null;
    if (this.#entries.size >= this.capacity)
      this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(hash, { principal, untilMs: nowMs + API_KEY_CACHE_TTL_MS });
    return principal;
  }

  /** Forgets a key (revoked, or refused by a guarded write). */
  invalidate(keyId: string): void {
    for (const [hash, e] of this.#entries) if (e.principal.keyId === keyId) this.#entries.delete(hash);
  }
}

/**
 * Revokes an API key of an organization (idempotent) and forgets it in this process's cache;
 * other replicas refuse it on its next guarded write. Returns false when no such key exists.
 */
export async function revokeApiKey(
  q: Queryable,
  cache: ApiKeyCache,
  opts: { orgId: string; keyId: string; nowMs: number },
): Promise<boolean> {
  const { rowCount } = await q.query(
    "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND org_id = $2",
    [opts.keyId, opts.orgId, new Date(opts.nowMs)],
  );
  cache.invalidate(opts.keyId);
  return Boolean(rowCount);
}

/**
 * The API keys of an organization without secrets, by creation time: oldest first (the admin
 * API) or newest first (the dashboard).
 */
export async function listApiKeys(q: Queryable, orgId: string, order: "oldest" | "newest" = "oldest") {
  const { rows } = await q.query(
    `SELECT id, name, role, prefix, created_at, revoked_at FROM api_keys WHERE org_id = $1
     ORDER BY created_at ${order === "newest" ? "DESC" : "ASC"}`,
    [orgId],
  );
  return rows.map((r) => ({
    key_id: r.id as string,
    name: r.name as string,
    role: r.role as string,
    prefix: r.prefix as string,
    created_at: new Date(r.created_at).toISOString(),
    revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
  }));
}

/** Creates an API key; returns the plaintext once (spec: shown once, stored as a hash). */
export async function createApiKey(
  q: Queryable,
  opts: { orgId: string; name: string; role: "client" | "admin"; nowMs: number },
): Promise<{
  key_id: string;
  api_key: string;
  prefix: string;
  name: string;
  role: string;
  created_at: string;
}> {
  const apiKey = newSecret(API_KEY_PREFIX);
  const id = randomUUID();
  const prefix = apiKey.slice(0, 10);
  const created = new Date(opts.nowMs);
  await q.query(
    "INSERT INTO api_keys (id, org_id, name, role, prefix, key_hash, created_at) VALUES ($1,$2,$3,$4,$5,$6,$7)",
    [id, opts.orgId, opts.name, opts.role, prefix, hashSecret(apiKey), created],
  );
  return {
    key_id: id,
    api_key: apiKey,
    prefix,
    name: opts.name,
    role: opts.role,
    created_at: created.toISOString(),
  };
}

/**
 * Creates a dashboard user session for `email` in an organization with the roles of the
 * membership table (the same code path OIDC sign-in uses). Returns the bearer secret once.
 * @throws ApiError 403 when the user is not a member of the organization.
 */
export async function createUserSession(
  q: Queryable,
  opts: { orgId: string; email: string; clock: Clock; ttlSeconds?: number },
): Promise<{ session_id: string; token: string; roles: UserRole[]; expires_at: string }> {
  const { rows } = await q.query("SELECT roles, display_name FROM members WHERE org_id = $1 AND email = $2", [
    opts.orgId,
    opts.email.toLowerCase(),
  ]);
  const member = rows[0];
  if (!member) throw forbidden("This user is not a member of the organization");
  const token = newSecret(SESSION_PREFIX);
  const id = randomUUID();
  const now = opts.clock.nowMs();
  const expires = new Date(now + (opts.ttlSeconds ?? 8 * 3600) * 1000);
  await q.query(
    "INSERT INTO user_sessions (id, token_hash, org_id, email, display_name, roles, created_at, expires_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
    [
      id,
      hashSecret(token),
      opts.orgId,
      opts.email.toLowerCase(),
      member.display_name,
      member.roles,
      new Date(now),
      expires,
    ],
  );
  return { session_id: id, token, roles: member.roles, expires_at: expires.toISOString() };
}

/** Role checks. Each throws 401/403 ApiError and returns the organization id in scope. */
export const guard = {
  /** Agents and sidecars: any API key, or an org admin. */
  client(p: Principal | null): string {
    if (!p) throw unauthorized();
    if (p.kind === "api_key" || p.kind === "workload") return p.orgId;
    if (p.kind === "user" && p.roles.includes("admin")) return p.orgId;
    throw forbidden("An organization API key or workload token is required");
  },
  /** Organization members (any role), admin API keys. */
  member(p: Principal | null): { orgId: string; isAdmin: boolean } {
    if (!p) throw unauthorized();
    if (p.kind === "user") return { orgId: p.orgId, isAdmin: p.roles.includes("admin") };
    if (p.kind === "api_key" && p.role === "admin") return { orgId: p.orgId, isAdmin: true };
    throw forbidden("A member session or admin API key is required");
  },
  /** Organization admins: admin users, admin API keys. */
  admin(p: Principal | null): string {
    if (!p) throw unauthorized();
    if (p.kind === "user" && p.roles.includes("admin")) return p.orgId;
    if (p.kind === "api_key" && p.role === "admin") return p.orgId;
    throw forbidden("The admin role is required");
  },
  /** Approvers and admins decide approvals. */
  approver(p: Principal | null): string {
    if (!p) throw unauthorized();
    if (p.kind === "user" && (p.roles.includes("approver") || p.roles.includes("admin"))) return p.orgId;
    if (p.kind === "api_key" && p.role === "admin") return p.orgId;
    throw forbidden("The approver or admin role is required");
  },
  /** The service admin token (operator/bootstrap). */
  serviceAdmin(p: Principal | null): void {
    if (!p) throw unauthorized();
    if (p.kind !== "service_admin") throw forbidden("The service admin token is required");
  },
};
