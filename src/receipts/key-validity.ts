/**
 * Revoked keys (ADR 0010): a revoked key's signatures made at or after its revocation time are
 * refused; earlier ones still verify and say that the key was revoked later. Pure: the service
 * (online verification) and `tollgate verify` (offline, from the published JWKS whose entries
 * carry `revoked_at`) judge signatures with the same rule.
 *
 * When an artifact was signed is the time it states (a receipt's completed_at, an approval's
 * decided_at, a checkpoint's issued_at, an export's exported_at) or, online, the time the
 * service stored it. A holder of a compromised key can backdate what it forges; checkpoints kept
 * before the revocation bound what a backdated receipt can claim (docs/operations/keys.md).
 */

/** How a signature relates to its key's revocation. */
export type RevocationCheck = "not_revoked" | "signed_before_revocation" | "revoked";

/**
 * Judges a signature made at `signedAt` (ISO 8601 string, ms since the epoch, or a Date) by a key
 * revoked at `revokedAtMs` (null: never revoked). A signing time that cannot be read, for a
 * revoked key, counts as revoked (fail closed).
 */
export function revocationOf(revokedAtMs: number | null, signedAt: unknown): RevocationCheck {
  if (revokedAtMs === null) return "not_revoked";
  const t =
    signedAt instanceof Date
      ? signedAt.getTime()
      : typeof signedAt === "number"
        ? signedAt
        : typeof signedAt === "string"
          ? Date.parse(signedAt)
          : Number.NaN;
  return Number.isFinite(t) && t < revokedAtMs ? "signed_before_revocation" : "revoked";
}

/**
 * The revocation times a JWKS publishes: kid → revoked_at in ms, for every key whose
 * `revoked_at` is an ISO 8601 time. A `revoked_at` that is present but not a time makes the
 * key revoked from the beginning (fail closed).
 */
export function revocationsOf(jwks: unknown): Map<string, number> {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  const out = new Map<string, number>();
  if (!Array.isArray(keys)) return out;
  for (const jwk of keys) {
    if (typeof jwk !== "object" || jwk === null) continue;
    const { kid, revoked_at: revokedAt, status } = jwk as Record<string, unknown>;
    if (typeof kid !== "string") continue;
    if (revokedAt === undefined || revokedAt === null) {
      if (status === "revoked") out.set(kid, Number.NEGATIVE_INFINITY);
      continue;
    }
    const t = typeof revokedAt === "string" ? Date.parse(revokedAt) : Number.NaN;
    out.set(kid, Number.isFinite(t) ? t : Number.NEGATIVE_INFINITY);
  }
  return out;
}

/** The problem sentence of a refused signature; `what` names the artifact. */
export function revokedProblem(what: string, kid: string, revokedAtMs: number): string {
  const when = Number.isFinite(revokedAtMs) ? new Date(revokedAtMs).toISOString() : "the beginning";
  return `${what} is signed with key ${kid} after its revocation (revoked from ${when}): refused`;
}
