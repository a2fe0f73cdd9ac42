/**
 * Public verification tokens (spec: "Public verification token", "Authentication" 4–5,
 * "Versioning" 5): admins issue an opaque bearer token for one approval or receipt; the
 * plaintext is returned once and only its SHA-256 hash is stored. Tokens do not expire (the
 * spec leaves the lifetime open); they end when revoked.
 */
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type {
  ArtifactType,
  IssuedToken,
  IssueToken,
  ListTokensQuery,
  RevokedToken,
  TokenRecord,
} from "../../contract/v1/verification.js";
import type { Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";
import { hashSecret } from "../secrets.js";

/** Prefix of public verification tokens; the rest is 32 random bytes, base64url (256 bits). */
export const PUBLIC_TOKEN_PREFIX = "tgp_";
/** The only shape a token can have: prefix plus 43 base64url characters. */
export const PUBLIC_TOKEN_PATTERN = /^tgp_[A-Za-z0-9_-]{43}$/;

interface TokenRow {
  id: string;
  org_id: string;
  token_hash: string;
  artifact_type: ArtifactType;
  artifact_id: string;
  created_by: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);

function view(r: TokenRow): TokenRecord {
  return {
    token_id: r.id,
    artifact_type: r.artifact_type,
    artifact_id: r.artifact_id,
    status: r.revoked_at ? "revoked" : "active",
    created_by: r.created_by,
    created_at: iso(r.created_at)!,
    revoked_at: iso(r.revoked_at),
    last_used_at: iso(r.last_used_at),
  };
}

/**
 * Issues a token for an artifact of the organization. Returns the plaintext once.
 * @throws ApiError 404 when the artifact does not exist in the organization.
 */
export async function issueToken(
  q: Queryable,
  opts: { orgId: string; body: IssueToken; createdBy: string; nowMs: number; publicUrl: string },
): Promise<IssuedToken> {
  const table = opts.body.artifact_type === "receipt" ? "receipts" : "approvals";
  const found = await q.query(`SELECT 1 FROM ${table} WHERE id = $1 AND org_id = $2`, [
    opts.body.artifact_id,
    opts.orgId,
  ]);
  if (found.rowCount === 0) throw notFound(opts.body.artifact_type === "receipt" ? "Receipt" : "Approval");
  const token = `${PUBLIC_TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const id = randomUUID();
  const created = new Date(opts.nowMs);
  await q.query(
    `INSERT INTO public_verification_tokens (id, org_id, token_hash, artifact_type, artifact_id, created_by, created_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7)`,
    [
      id,
      opts.orgId,
      hashSecret(token),
      opts.body.artifact_type,
      opts.body.artifact_id,
      opts.createdBy,
      created,
    ],
  );
  const publicPath = `/public/v2/verify/${token}`;
  return {
    token_id: id,
    token,
    public_path: publicPath,
    public_url: `${opts.publicUrl.replace(/\/$/, "")}${publicPath}`,
    artifact_type: opts.body.artifact_type,
    artifact_id: opts.body.artifact_id,
    status: "active",
    created_at: created.toISOString(),
  };
}

/** Tokens of the organization, newest first. */
export async function listTokens(
  q: Queryable,
  orgId: string,
  query: ListTokensQuery,
): Promise<TokenRecord[]> {
  const where = ["org_id = $1"];
  const values: unknown[] = [orgId];
  if (query.status) where.push(query.status === "active" ? "revoked_at IS NULL" : "revoked_at IS NOT NULL");
  if (query.artifact_type) where.push(`artifact_type = $${values.push(query.artifact_type)}`);
  if (query.artifact_id) where.push(`artifact_id = $${values.push(query.artifact_id)}`);
  const { rows } = await q.query<TokenRow>(
    `SELECT * FROM public_verification_tokens WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id LIMIT $${values.push(query.limit)}`,
    values,
  );
  return rows.map(view);
}

/**
 * Revokes a token of the organization; idempotent (a second revoke keeps the first time).
 * @throws ApiError 404 when the token does not exist in the organization.
 */
export async function revokeToken(
  q: Queryable,
  opts: { orgId: string; tokenId: string; nowMs: number },
): Promise<RevokedToken> {
  const { rows } = await q.query<TokenRow>(
    `UPDATE public_verification_tokens SET revoked_at = COALESCE(revoked_at, $3)
     WHERE id = $1 AND org_id = $2 RETURNING *`,
    [opts.tokenId, opts.orgId, new Date(opts.nowMs)],
  );
  if (!rows[0]) throw notFound("Public verification token");
  const v = view(rows[0]);
  return {
    token_id: v.token_id,
    artifact_type: v.artifact_type,
    artifact_id: v.artifact_id,
    status: "revoked",
    revoked_at: v.revoked_at!,
  };
}

/** What an active token grants: one artifact of one organization. */
export interface TokenGrant {
  tokenId: string;
  orgId: string;
  artifactType: ArtifactType;
  artifactId: string;
}

/**
 * Resolves a presented token to its grant, or null when it is malformed, unknown or revoked.
 * Every input takes the same path: hash it (SHA-256), look the hash up through the unique index,
 * and compare the stored hash in constant time; the checks are combined only at the end, so the
 * work does not depend on why a token is unavailable. Records last_used_at on success.
 */
export async function resolveToken(q: Queryable, token: string, nowMs: number): Promise<TokenGrant | null> {
  const wellFormed = PUBLIC_TOKEN_PATTERN.test(token);
  const hash = hashSecret(token);
  const { rows } = await q.query<TokenRow>("SELECT * FROM public_verification_tokens WHERE token_hash = $1", [
    hash,
  ]);
  const row = rows[0];
  const stored = Buffer.from(row?.token_hash ?? "0".repeat(64), "utf8");
  const given = Buffer.from(hash, "utf8");
  const hashMatches = stored.length === given.length && timingSafeEqual(stored, given);
  const active = row !== undefined && row.revoked_at === null;
  if (!(wellFormed && hashMatches && active)) return null;
  await q.query("UPDATE public_verification_tokens SET last_used_at = $2 WHERE id = $1", [
    row.id,
    new Date(nowMs),
  ]);
  return { tokenId: row.id, orgId: row.org_id, artifactType: row.artifact_type, artifactId: row.artifact_id };
}
