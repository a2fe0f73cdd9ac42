/**
 * Each organization's receipt HMAC keys (spec: Receipt, "Signing and chaining rules" 2: the key
 * is held only by the backend and never exposed), rotated and revoked per organization (ADR
 * 0010). Before its first rotation an organization signs with the key derived from the master
 * key (kid {@link MASTER_HMAC_KID}); later keys are 32 random bytes sealed with the master key's
 * sealing key. A receipt row records the kid its HMAC was made with (receipts.hmac_kid; NULL:
 * the derived key).
 */
import { randomBytes } from "node:crypto";
import type { Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";
import { deriveKey, seal, unseal } from "../secrets.js";
import {
  KEY_ROTATION_LOCK,
  type KeyLifeRow,
  type KeyValidity,
  type KeyView,
  keyView,
} from "./signing-keys.js";

/** Kid of the receipt HMAC key derived from the master key (every organization's first key). */
export const MASTER_HMAC_KID = "master";

/** A receipt HMAC key with its validity period. */
export interface HmacKey extends KeyValidity {
  kid: string;
  /** 32 bytes; never logged, never returned. */
  key: Buffer;
}

interface HmacRow extends KeyLifeRow {
  key_sealed: string | null;
}

/** Reads, rotates and revokes organizations' receipt HMAC keys. */
export class ReceiptHmacKeys {
  private readonly masterHmacKey: Buffer;
  private readonly sealingKey: Buffer;

  constructor(masterKey: Buffer) {
    this.masterHmacKey = deriveKey(masterKey, "receipt-hmac");
    this.sealingKey = deriveKey(masterKey, "key-sealing");
  }

  /** The organization's key that signs new receipts. */
  async active(q: Queryable, orgId: string): Promise<HmacKey> {
    const { rows } = await q.query<HmacRow>(
      "SELECT * FROM receipt_hmac_keys WHERE org_id = $1 AND retired_at IS NULL AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1",
      [orgId],
    );
    return rows[0] ? this.fromRow(rows[0]) : this.master(null);
  }

  /**
   * Every HMAC key of the organization, by kid (the derived key included even before the first
   * rotation recorded it).
   */
  async all(q: Queryable, orgId: string): Promise<Map<string, HmacKey>> {
    const rows = await this.rows(q, orgId);
    const keys = new Map(rows.map((r) => [r.kid, this.fromRow(r)]));
    if (!keys.has(MASTER_HMAC_KID)) keys.set(MASTER_HMAC_KID, this.master(null));
    return keys;
  }

  /**
   * The organization's keys as the admin API lists them, oldest first. The first rotation or
   * revocation records the derived key as a row; before that it is the only key, active.
   */
  async list(q: Queryable, orgId: string): Promise<KeyView[]> {
    const rows = await this.rows(q, orgId);
    if (rows.length > 0) return rows.map(keyView);
    const master = {
      kid: MASTER_HMAC_KID,
      created_at: await orgCreatedAt(q, orgId),
      retired_at: null,
      revoked_at: null,
      revocation_reason: null,
    };
    return [keyView(master)];
  }

  /**
   * Retires the organization's active HMAC key and creates a new random one, in the caller's
   * transaction `q`.
   * @returns the new key's view and the retired kid.
   */
  async rotate(
    q: Queryable,
    orgId: string,
    nowMs: number,
  ): Promise<{ key: KeyView; retired_kid: string | null }> {
    await q.query("SELECT pg_advisory_xact_lock($1)", [KEY_ROTATION_LOCK]);
    const now = new Date(nowMs);
    await this.recordMaster(q, orgId);
    const { rows } = await q.query<{ kid: string }>(
      "UPDATE receipt_hmac_keys SET retired_at = $2 WHERE org_id = $1 AND retired_at IS NULL RETURNING kid",
      [orgId, now],
    );
    const kid = randomBytes(8).toString("hex");
    await q.query(
      "INSERT INTO receipt_hmac_keys (org_id, kid, key_sealed, created_at) VALUES ($1, $2, $3, $4)",
      [orgId, kid, seal(this.sealingKey, randomBytes(32).toString("base64")), now],
    );
    return { key: await this.view(q, orgId, kid), retired_kid: rows[0]?.kid ?? null };
  }

  /**
   * Marks the organization's key `kid` revoked from `revokedAtMs` (an earlier time than one
   * recorded wins); an active key is rotated first. In the caller's transaction `q`.
   * @throws ApiError 404 when the organization has no HMAC key with that kid.
   */
  async revoke(
    q: Queryable,
    orgId: string,
    kid: string,
    revokedAtMs: number,
    reason: string | null,
    nowMs: number,
  ): Promise<{ key: KeyView; replaced_by: string | null }> {
    await q.query("SELECT pg_advisory_xact_lock($1)", [KEY_ROTATION_LOCK]);
    if (kid === MASTER_HMAC_KID) await this.recordMaster(q, orgId);
    const { rows } = await q.query<HmacRow>(
      "SELECT * FROM receipt_hmac_keys WHERE org_id = $1 AND kid = $2",
      [orgId, kid],
    );
    if (!rows[0]) throw notFound("Receipt HMAC key");
    const isActive = rows[0].retired_at === null && rows[0].revoked_at === null;
    const replacedBy = isActive ? (await this.rotate(q, orgId, nowMs)).key.kid : null;
    await q.query(
      `UPDATE receipt_hmac_keys SET revoked_at = LEAST(COALESCE(revoked_at, $3), $3),
         revocation_reason = COALESCE($4, revocation_reason) WHERE org_id = $1 AND kid = $2`,
      [orgId, kid, new Date(revokedAtMs), reason],
    );
    return { key: await this.view(q, orgId, kid), replaced_by: replacedBy };
  }

  /** Records the derived key as a row (once), valid from the organization's creation. */
  private async recordMaster(q: Queryable, orgId: string): Promise<void> {
    const created = await orgCreatedAt(q, orgId);
    await q.query(
      "INSERT INTO receipt_hmac_keys (org_id, kid, key_sealed, created_at) VALUES ($1, $2, NULL, $3) ON CONFLICT DO NOTHING",
      [orgId, MASTER_HMAC_KID, created],
    );
  }

  private master(row: HmacRow | null): HmacKey {
    return {
      kid: MASTER_HMAC_KID,
      key: this.masterHmacKey,
      retiredAtMs: row?.retired_at ? new Date(row.retired_at).getTime() : null,
      revokedAtMs: row?.revoked_at ? new Date(row.revoked_at).getTime() : null,
    };
  }

  private fromRow(r: HmacRow): HmacKey {
    if (r.key_sealed === null) return this.master(r);
    return {
      kid: r.kid,
      key: Buffer.from(unseal(this.sealingKey, r.key_sealed), "base64"),
      retiredAtMs: r.retired_at ? new Date(r.retired_at).getTime() : null,
      revokedAtMs: r.revoked_at ? new Date(r.revoked_at).getTime() : null,
    };
  }

  private async rows(q: Queryable, orgId: string): Promise<HmacRow[]> {
    const { rows } = await q.query<HmacRow>(
      "SELECT * FROM receipt_hmac_keys WHERE org_id = $1 ORDER BY created_at, kid",
      [orgId],
    );
    return rows;
  }

  private async view(q: Queryable, orgId: string, kid: string): Promise<KeyView> {
    const { rows } = await q.query<HmacRow>(
      "SELECT * FROM receipt_hmac_keys WHERE org_id = $1 AND kid = $2",
      [orgId, kid],
    );
    return keyView(rows[0]!);
  }
}

async function orgCreatedAt(q: Queryable, orgId: string): Promise<Date> {
  const { rows } = await q.query<{ created_at: Date }>("SELECT created_at FROM organizations WHERE id = $1", [
    orgId,
  ]);
  if (!rows[0]) throw notFound("Organization");
  return rows[0].created_at;
}
