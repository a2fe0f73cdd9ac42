/**
 * Key rotation and revocation requested by deployment configuration (the Helm chart's `keys`
 * values; ADR 0010), applied when the service starts:
 * - `TOLLGATE_ROTATE_KEYS`: JSON `{receipt?, approval?, receipt_hmac?}` of rotation tokens (any
 *   string). A kind whose token differs from the last one applied is rotated (receipt_hmac:
 *   every organization's HMAC key) and the token recorded, so each token rotates once however
 *   many replicas start with it.
 * - `TOLLGATE_REVOKE_KEYS`: JSON array of `{kind, kid, revoked_at, organization?, reason?}`;
 *   each is applied as the admin API's revoke (idempotent: an earlier time wins).
 * Everything runs in one transaction under the key rotation lock.
 */
import { z } from "zod";
import { SlugSchema } from "../../contract/v1/admin.js";
import { HmacKidSchema, RevokedAtSchema, SigningKidSchema } from "../../contract/v1/keys.js";
import type { Database } from "../db/pool.js";
import type { Logger } from "../logger.js";
import { orgBySlug } from "../orgs/orgs.js";
import type { ReceiptHmacKeys } from "./hmac-keys.js";
import { KEY_ROTATION_LOCK, type SigningKeys } from "./signing-keys.js";

const token = z.string().min(1).max(253);

/** `TOLLGATE_ROTATE_KEYS`: a rotation token per key kind. */
export const RotateKeysSchema = z
  .object({ receipt: token.optional(), approval: token.optional(), receipt_hmac: token.optional() })
  .strict();

const reason = z.string().min(1).max(500).optional();

/** `TOLLGATE_REVOKE_KEYS`: keys to mark revoked. */
export const RevokeKeysSchema = z
  .array(
    z.discriminatedUnion("kind", [
      z
        .object({
          kind: z.enum(["receipt", "approval"]),
          kid: SigningKidSchema,
          revoked_at: RevokedAtSchema,
          reason,
        })
        .strict(),
      z
        .object({
          kind: z.literal("receipt_hmac"),
          organization: SlugSchema,
          kid: HmacKidSchema,
          revoked_at: RevokedAtSchema,
          reason,
        })
        .strict(),
    ]),
  )
  .max(100);

/** What the deployment asks for. */
export interface KeyConfig {
  rotate: z.infer<typeof RotateKeysSchema>;
  revoke: z.infer<typeof RevokeKeysSchema>;
}

/**
 * Rotates and revokes as `config` asks (see the module comment).
 * @throws ApiError 404 when a revocation names a key or organization that does not exist (the
 *   service refuses to start: a revocation that cannot be applied must not pass unnoticed)
 */
export async function applyKeyConfig(
  db: Database,
  keys: { signingKeys: SigningKeys; receiptHmacKeys: ReceiptHmacKeys },
  config: KeyConfig,
  nowMs: number,
  log: Logger,
): Promise<void> {
  await db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock($1)", [KEY_ROTATION_LOCK]);
    for (const kind of ["receipt", "approval", "receipt_hmac"] as const) {
      const wanted = config.rotate[kind];
      if (wanted === undefined) continue;
      const { rows } = await q.query<{ token: string }>(
        "SELECT token FROM key_rotation_triggers WHERE kind = $1",
        [kind],
      );
      if (rows[0]?.token === wanted) continue;
      if (kind === "receipt_hmac") {
        const orgs = await q.query<{ id: string }>("SELECT id FROM organizations ORDER BY slug");
        for (const org of orgs.rows) await keys.receiptHmacKeys.rotate(q, org.id, nowMs);
      } else {
        await keys.signingKeys.rotate(kind, q);
      }
      await q.query(
        `INSERT INTO key_rotation_triggers (kind, token, applied_at) VALUES ($1, $2, $3)
         ON CONFLICT (kind) DO UPDATE SET token = EXCLUDED.token, applied_at = EXCLUDED.applied_at`,
        [kind, wanted, new Date(nowMs)],
      );
      log.info({ kind }, "key rotated as the deployment configuration asks");
    }
    for (const r of config.revoke) {
      const at = Date.parse(r.revoked_at);
      if (r.kind === "receipt_hmac") {
        const org = await orgBySlug(q, r.organization);
        await keys.receiptHmacKeys.revoke(q, org.id, r.kid, at, r.reason ?? null, nowMs);
      } else {
        await keys.signingKeys.revoke(r.kid, at, r.reason ?? null, q);
      }
    }
    if (config.revoke.length > 0) log.info({ count: config.revoke.length }, "key revocations applied");
  });
}
