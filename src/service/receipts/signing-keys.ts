/**
 * Ed25519 signing keys kept by the service (receipt attestations, approval signatures): private
 * keys are sealed with a key derived from the master key; a key is created on first use and
 * can be rotated (the old one is retired but stays for verification).
 */
import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { exportPublicJwk, generateSigningKey } from "../../receipts/ed25519.js";
import type { Database, Queryable } from "../db/pool.js";
import { deriveKey, seal, unseal } from "../secrets.js";

export type KeyPurpose = "receipt" | "approval";

/** A usable signing key. */
export interface SigningKey {
  kid: string;
  purpose: KeyPurpose;
  privateKey: KeyObject;
  publicKey: KeyObject;
  retired: boolean;
}

interface KeyRow {
  kid: string;
  purpose: KeyPurpose;
  public_key_pem: string;
  private_key_sealed: string;
  retired_at: Date | null;
}

/** Loads, creates, rotates and caches the service's signing keys. */
export class SigningKeys {
  private readonly sealingKey: Buffer;
  private readonly current = new Map<KeyPurpose, SigningKey>();
  private readonly byKid = new Map<string, SigningKey>();

  constructor(
    private readonly db: Database,
    masterKey: Buffer,
    private readonly clock: { nowMs(): number },
  ) {
    this.sealingKey = deriveKey(masterKey, "key-sealing");
  }

  /** The active key for `purpose`, created on first use. */
  async active(purpose: KeyPurpose): Promise<SigningKey> {
    const hit = this.current.get(purpose);
    if (hit) return hit;
    const { rows } = await this.db.query(
      "SELECT * FROM signing_keys WHERE purpose = $1 AND retired_at IS NULL ORDER BY created_at DESC LIMIT 1",
      [purpose],
    );
    const key = rows[0] ? this.fromRow(rows[0] as KeyRow) : await this.create(purpose);
    this.current.set(purpose, key);
    return key;
  }

  /** Retires the active key of `purpose` and creates a new one; returns the new kid. */
  async rotate(purpose: KeyPurpose): Promise<string> {
    await this.db.query("UPDATE signing_keys SET retired_at = $2 WHERE purpose = $1 AND retired_at IS NULL", [
      purpose,
      new Date(this.clock.nowMs()),
    ]);
    this.current.delete(purpose);
    for (const k of this.byKid.values()) if (k.purpose === purpose) k.retired = true;
    const key = await this.create(purpose);
    this.current.set(purpose, key);
    return key.kid;
  }

  /** A key by kid (active or retired), or null. */
  async byId(kid: string): Promise<SigningKey | null> {
    const hit = this.byKid.get(kid);
    if (hit) return hit;
    const { rows } = await this.db.query("SELECT * FROM signing_keys WHERE kid = $1", [kid]);
    return rows[0] ? this.fromRow(rows[0] as KeyRow) : null;
  }

  /** Public keys of `purpose` as a JWKS document (active and retired, with status). */
  async jwks(purpose: KeyPurpose) {
    const { rows } = await this.db.query(
      "SELECT kid, public_key_pem, created_at, retired_at FROM signing_keys WHERE purpose = $1 ORDER BY created_at",
      [purpose],
    );
    return {
      keys: rows.map((r) => ({
        ...exportPublicJwk(r.kid, createPublicKey(r.public_key_pem)),
        status: r.retired_at ? ("retired" as const) : ("active" as const),
        created_at: new Date(r.created_at).toISOString(),
      })),
    };
  }

  private async create(purpose: KeyPurpose): Promise<SigningKey> {
    const k = generateSigningKey();
    const pem = k.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    await this.db.query(
      "INSERT INTO signing_keys (kid, purpose, public_key_pem, private_key_sealed, created_at) VALUES ($1,$2,$3,$4,$5) ON CONFLICT (kid) DO NOTHING",
      [
        k.kid,
        purpose,
        k.publicKey.export({ type: "spki", format: "pem" }).toString(),
        seal(this.sealingKey, pem),
        new Date(this.clock.nowMs()),
      ],
    );
    const key = { kid: k.kid, purpose, privateKey: k.privateKey, publicKey: k.publicKey, retired: false };
    this.byKid.set(key.kid, key);
    return key;
  }

  private fromRow(r: KeyRow): SigningKey {
    const key = {
      kid: r.kid,
      purpose: r.purpose,
      privateKey: createPrivateKey(unseal(this.sealingKey, r.private_key_sealed)),
      publicKey: createPublicKey(r.public_key_pem),
      retired: r.retired_at !== null,
    };
    this.byKid.set(key.kid, key);
    return key;
  }
}

/** A signing key's public half as verification uses it: retired keys verify but are not trusted. */
export interface StoredKey {
  publicKey: KeyObject;
  retired: boolean;
}

/** Every key of `purpose` ever used (current and retired), by key id. */
export async function loadPublicKeys(q: Queryable, purpose: KeyPurpose): Promise<Map<string, StoredKey>> {
  const { rows } = await q.query(
    "SELECT kid, public_key_pem, retired_at FROM signing_keys WHERE purpose = $1",
    [purpose],
  );
  return new Map(
    rows.map((r) => [
      r.kid as string,
      { publicKey: createPublicKey(r.public_key_pem), retired: r.retired_at !== null },
    ]),
  );
}
