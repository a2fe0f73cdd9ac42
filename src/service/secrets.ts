/**
 * Key material derived from the master key (HKDF-SHA256), sealing of private keys at rest
 * (AES-256-GCM), and hashing of bearer secrets (API keys, sessions, public tokens) for storage.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hash,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";

/** Purposes of derived keys; each gets an independent 32-byte key. */
export type KeyPurpose = "receipt-hmac" | "key-sealing" | "approval-links" | "csrf" | "session";

/** Derives a 32-byte key for `purpose` from the master key. */
export function deriveKey(masterKey: Buffer, purpose: KeyPurpose): Buffer {
  return Buffer.from(hkdfSync("sha256", masterKey, Buffer.from("tollgate"), Buffer.from(purpose), 32));
}

/** SHA-256 hex of a bearer secret; what the database stores instead of the secret. */
export const hashSecret = (secret: string): string => hash("sha256", secret, "hex");

/** Constant-time string comparison (false on length mismatch without leaking content). */
export function safeEqual(a: string, b: string): boolean {
  const ab = createHash("sha256").update(a).digest();
  const bb = createHash("sha256").update(b).digest();
  return timingSafeEqual(ab, bb) && a.length === b.length;
}

/** Seals `plaintext` with AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return [
    "v1",
    iv.toString("base64url"),
    cipher.getAuthTag().toString("base64url"),
    ct.toString("base64url"),
  ].join(".");
}

/** Opens a value made by seal(); throws if it was altered or sealed under another key. */
export function unseal(key: Buffer, sealed: string): string {
  const [v, iv, tag, ct] = sealed.split(".");
  if (v !== "v1" || !iv || !tag || !ct) throw new Error("sealed value has an unknown format");
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  return Buffer.concat([decipher.update(Buffer.from(ct, "base64url")), decipher.final()]).toString("utf8");
}

/** A new random bearer secret with a readable prefix, 256 bits of entropy. */
export const newSecret = (prefix: string): string => `${prefix}${randomBytes(32).toString("base64url")}`;
