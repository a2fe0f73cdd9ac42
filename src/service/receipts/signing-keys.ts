/**
 * Ed25519 signing keys kept by the service (receipt attestations, approval signatures): private
 * keys are sealed with a key derived from the master key; a key is created on first use, can be
 * rotated (the old one is retired but stays for verification) and revoked (ADR 0010): a revoked
 * key's signatures made at or after its revocation time are refused, earlier ones still verify.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { exportPublicJwk, generateSigningKey } from "../../receipts/ed25519.js";
import type { Database, Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";
import { deriveKey, seal, unseal } from "../secrets.js";

export type KeyPurpose = "receipt" | "approval";

/** A usable signing key. */
export interface SigningKey {
  kid: string;
  purpose: KeyPurpose;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** Where a key is in its life: active (signs now), retired (rotated out), revoked (compromised). */
export type KeyLifeStatus = "active" | "retired" | "revoked";

/** A key as the admin API lists it (no key material). Times are ISO 8601 UTC. */
export interface KeyView {
  kid: string;
  status: KeyLifeStatus;
  created_at: string;
  retired_at: string | null;
  revoked_at: string | null;
  revocation_reason: string | null;
}

/** Columns shared by signing_keys and receipt_hmac_keys that say where a key is in its life. */
export interface KeyLifeRow {
  kid: string;
  created_at: Date;
  retired_at: Date | null;
  revoked_at: Date | null;
  revocation_reason: string | null;
}

const iso = (d: Date | null): string | null => (d === null ? null : new Date(d).toISOString());

/** The admin view of a key row. */
export function keyView(r: KeyLifeRow): KeyView {
  return {
    kid: r.kid,
    status: r.revoked_at ? "revoked" : r.retired_at ? "retired" : "active",
    created_at: new Date(r.created_at).toISOString(),
    retired_at: iso(r.retired_at),
    revoked_at: iso(r.revoked_at),
    revocation_reason: r.revocation_reason,
  };
}

/** Serializes key rotations of the whole service (both replicas rotating at once make one key). */
export const KEY_ROTATION_LOCK = 7_401_202_632;

interface KeyRow extends KeyLifeRow {
  purpose: KeyPurpose;
  public_key_pem: string;
  private_key_sealed: string;
}

/** Loads, creates, rotates, revokes and caches the service's signing keys. */
export class SigningKeys {
  private readonly sealingKey: Buffer;
  /** Unsealed keys by kid; which kid is active is read from the database on every use. */
  private readonly byKid = new Map<string, SigningKey>();

  constructor(
    private readonly db: Database,
    masterKey: Buffer,
    private readonly clock: { nowMs(): number },
  ) {
    this.sealingKey = deriveKey(masterKey, "key-sealing");
  }

  /**
   * The active key for `purpose`, created on first use. Reads which key is active on every call
   * (one query on a table of a few rows), so a rotation or revocation on another replica applies at once.
   */
  async active(purpose: KeyPurpose): Promise<SigningKey> {
    const { rows } = await this.db.query<KeyRow>(
      "SELECT * FROM signing_keys WHERE purpose = $1 AND retired_at IS NULL AND revoked_at IS NULL ORDER BY created_at DESC LIMIT 1",
      [purpose],
    );
    if (!rows[0]) return this.db.tx((q) => this.create(q, purpose));
    return this.byKid.get(rows[0].kid) ?? this.fromRow(rows[0]);
  }

  /**
   * Retires the active key of `purpose` and creates a new one, in its own transaction or in the
   * caller's `q`.
   * @returns the new key's view and the retired kid (null when there was no active key).
   */
  async rotate(purpose: KeyPurpose, q?: Queryable): Promise<{ key: KeyView; retired_kid: string | null }> {
    if (!q) return this.db.tx((tx) => this.rotate(purpose, tx));
    await q.query("SELECT pg_advisory_xact_lock($1)", [KEY_ROTATION_LOCK]);
    const { rows } = await q.query<{ kid: string }>(
      "UPDATE signing_keys SET retired_at = $2 WHERE purpose = $1 AND retired_at IS NULL RETURNING kid",
      [purpose, new Date(this.clock.nowMs())],
    );
    const key = await this.create(q, purpose);
    return { key: await this.view(q, key.kid), retired_kid: rows[0]?.kid ?? null };
  }

  /**
   * Marks `kid` revoked from `revokedAtMs` on (an earlier time than one already recorded wins;
   * a later one is ignored, so a revocation is never weakened). A key still active is rotated
   * first, so new signatures use a new key. In its own transaction or in the caller's `q`.
   * @throws ApiError 404 when no signing key has that kid.
   */
  async revoke(
    kid: string,
    revokedAtMs: number,
    reason: string | null,
    q?: Queryable,
  ): Promise<{ purpose: KeyPurpose; key: KeyView; replaced_by: string | null }> {
    if (!q) return this.db.tx((tx) => this.revoke(kid, revokedAtMs, reason, tx));
    await q.query("SELECT pg_advisory_xact_lock($1)", [KEY_ROTATION_LOCK]);
    const { rows } = await q.query<KeyRow>("SELECT * FROM signing_keys WHERE kid = $1", [kid]);
    const row = rows[0];
    if (!row) throw notFound("Signing key");
    const replacedBy =
      row.retired_at === null && row.revoked_at === null ? (await this.rotate(row.purpose, q)).key.kid : null;
    await q.query(
      `UPDATE signing_keys SET revoked_at = LEAST(COALESCE(revoked_at, $2), $2),
         revocation_reason = COALESCE($3, revocation_reason) WHERE kid = $1`,
      [kid, new Date(revokedAtMs), reason],
    );
    return { purpose: row.purpose, key: await this.view(q, kid), replaced_by: replacedBy };
  }

  /** Every key of `purpose`, oldest first. */
  async list(purpose: KeyPurpose): Promise<KeyView[]> {
    const { rows } = await this.db.query<KeyRow>(
      "SELECT * FROM signing_keys WHERE purpose = $1 ORDER BY created_at, kid",
      [purpose],
    );
    return rows.map(keyView);
  }

  /** A key by kid (active, retired or revoked), or null. */
  async byId(kid: string): Promise<SigningKey | null> {
    const hit = this.byKid.get(kid);
    if (hit) return hit;
    const { rows } = await this.db.query<KeyRow>("SELECT * FROM signing_keys WHERE kid = $1", [kid]);
    return rows[0] ? this.fromRow(rows[0]) : null;
  }

  /**
   * Public keys of `purpose` as a JWKS document: every key ever used, with its status and
   * validity period (created_at, retired_at, revoked_at: signatures made at or after revoked_at
   * are refused), so an offline verifier judges old signatures as the service does.
   */
  async jwks(purpose: KeyPurpose) {
    const { rows } = await this.db.query<KeyRow>(
      "SELECT * FROM signing_keys WHERE purpose = $1 ORDER BY created_at, kid",
      [purpose],
    );
    return {
      keys: rows.map((r) => {
        const v = keyView(r);
        return {
          ...exportPublicJwk(r.kid, createPublicKey(r.public_key_pem)),
          status: v.status,
          created_at: v.created_at,
          retired_at: v.retired_at,
          revoked_at: v.revoked_at,
        };
      }),
    };
  }

  private async view(q: Queryable, kid: string): Promise<KeyView> {
    const { rows } = await q.query<KeyRow>("SELECT * FROM signing_keys WHERE kid = $1", [kid]);
    return keyView(rows[0]!);
  }

  private async create(q: Queryable, purpose: KeyPurpose): Promise<SigningKey> {
    const k = generateSigningKey();
    const pem = k.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    await q.query(
      "INSERT INTO signing_keys (kid, purpose, public_key_pem, private_key_sealed, created_at) VALUES ($1,$2,$3,$4,$5) ON CONFLICT (kid) DO NOTHING",
      [
        k.kid,
        purpose,
        k.publicKey.export({ type: "spki", format: "pem" }).toString(),
        seal(this.sealingKey, pem),
        new Date(this.clock.nowMs()),
      ],
    );
    const key = { kid: k.kid, purpose, privateKey: k.privateKey, publicKey: k.publicKey };
    this.byKid.set(key.kid, key);
    return key;
  }

  private fromRow(r: KeyRow): SigningKey {
    const key = {
      kid: r.kid,
      purpose: r.purpose,
      privateKey: createPrivateKey(unseal(this.sealingKey, r.private_key_sealed)),
      publicKey: createPublicKey(r.public_key_pem),
    };
    this.byKid.set(key.kid, key);
    return key;
  }
}

/**
 * What verification knows of a key: its validity period. Times in ms since the epoch; null
 * when the key was never retired or revoked.
 */
export interface KeyValidity {
  retiredAtMs: number | null;
  revokedAtMs: number | null;
}

/** A signing key's public half as verification uses it. */
export interface StoredKey extends KeyValidity {
  publicKey: KeyObject;
}

const ms = (d: Date | null): number | null => (d === null ? null : new Date(d).getTime());

/** Every key of `purpose` ever used (active, retired and revoked), by key id. */
export async function loadPublicKeys(q: Queryable, purpose: KeyPurpose): Promise<Map<string, StoredKey>> {
  const { rows } = await q.query<KeyRow>(
    "SELECT kid, public_key_pem, retired_at, revoked_at FROM signing_keys WHERE purpose = $1",
    [purpose],
  );
  return new Map(
    rows.map((r) => [
      r.kid,
      {
        publicKey: createPublicKey(r.public_key_pem),
        retiredAtMs: ms(r.retired_at),
        revokedAtMs: ms(r.revoked_at),
      },
    ]),
  );
}
