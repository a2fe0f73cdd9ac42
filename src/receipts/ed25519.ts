/**
 * Ed25519 keys and signatures (RFC 8032 pure Ed25519, through node:crypto) for receipts and
 * approval attestations (spec: "Verification results": Ed25519 signature status and key-trust
 * status). Pure helpers only: generating, encoding and using keys. Storing private keys
 * (sealed, rotated, retired) is the service's job.
 *
 * Encodings:
 * - kid: the first 16 lowercase hex characters of SHA-256 over the raw 32-byte public key.
 * - signatures: unpadded base64url of the 64-byte signature (86 characters).
 * - public keys: JWK (RFC 8037: `kty` OKP, `crv` Ed25519, `x` base64url raw key) or SPKI PEM.
 * - private keys: PKCS#8 PEM (unencrypted; the caller seals it).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  KeyObject,
  sign,
  verify,
} from "node:crypto";
import { z } from "zod";

/** An Ed25519 key pair with its key id. */
export interface SigningKey {
  /** First 16 lowercase hex characters of SHA-256 of the raw public key. */
  kid: string;
  publicKey: KeyObject;
  privateKey: KeyObject;
}

/** An Ed25519 public key as a JWK (RFC 7517, RFC 8037), as published in a JWKS. */
export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  /** Unpadded base64url of the raw 32-byte public key. */
  x: string;
  kid: string;
  use: "sig";
  alg: "EdDSA";
}

/** A JSON Web Key Set of Ed25519 public keys. */
export interface Jwks {
  keys: PublicJwk[];
}

/** A public key accepted by `importPublicJwk`: other JWK members (x5c, key_ops, ...) are ignored. */
export const PublicJwkInputSchema = z
  .object({
    kty: z.literal("OKP"),
    crv: z.literal("Ed25519"),
    x: z.string().regex(/^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/, "must be base64url of 32 bytes"),
    kid: z.string().min(1).max(128).optional(),
    use: z.literal("sig").optional(),
    alg: z.enum(["EdDSA", "Ed25519"]).optional(),
  })
  .loose()
  .refine((jwk) => !("d" in jwk), "a public JWK must not carry private key material (d)");

/** Generates a new Ed25519 key pair and its kid. */
export function generateSigningKey(): SigningKey {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  return { kid: keyIdOf(publicKey), publicKey, privateKey };
}

/**
 * The kid of an Ed25519 key: first 16 lowercase hex characters of SHA-256 over the raw 32-byte
 * public key. A private key gives the kid of its public key.
 *
 * @throws TypeError when the key is not an Ed25519 key.
 */
export function keyIdOf(key: KeyObject): string {
  return createHash("sha256").update(rawPublicKey(key)).digest("hex").slice(0, 16);
}

/**
 * The public JWK of an Ed25519 public key: `{ kty: "OKP", crv: "Ed25519", x, kid, use: "sig",
 * alg: "EdDSA" }`.
 *
 * @throws TypeError when the key is not an Ed25519 public key.
 */
export function exportPublicJwk(kid: string, publicKey: KeyObject): PublicJwk {
  assertKey(publicKey, "public");
  return {
    kty: "OKP",
    crv: "Ed25519",
    x: rawPublicKey(publicKey).toString("base64url"),
    kid,
    use: "sig",
    alg: "EdDSA",
  };
}

/** A JWKS of the given public keys, in the given order. Throws like `exportPublicJwk`. */
export function exportJwks(keys: ReadonlyArray<{ kid: string; publicKey: KeyObject }>): Jwks {
  return { keys: keys.map(({ kid, publicKey }) => exportPublicJwk(kid, publicKey)) };
}

/**
 * Imports an Ed25519 public JWK. The kid is the JWK's `kid`, or the computed kid (`keyIdOf`)
 * when it has none.
 *
 * @throws TypeError when `jwk` is not an Ed25519 public JWK (wrong kty or crv, malformed x,
 *   use other than sig, or private key material `d` present).
 */
export function importPublicJwk(jwk: unknown): { kid: string; publicKey: KeyObject } {
  const parsed = PublicJwkInputSchema.safeParse(jwk);
  if (!parsed.success) {
    throw new TypeError(`not an Ed25519 public JWK: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
  }
  const { kty, crv, x } = parsed.data;
  const publicKey = createPublicKey({ key: { kty, crv, x }, format: "jwk" });
  return { kid: parsed.data.kid ?? keyIdOf(publicKey), publicKey };
}

/**
 * Signs `data` (a string is signed as its UTF-8 bytes) and returns the unpadded base64url
 * signature (86 characters).
 *
 * @throws TypeError when the key is not an Ed25519 private key.
 */
export function ed25519Sign(data: string | Buffer, privateKey: KeyObject): string {
  assertKey(privateKey, "private");
  return sign(null, toBytes(data), privateKey).toString("base64url");
}

/**
 * True when `signature` (unpadded base64url, 86 characters) is a valid Ed25519 signature of
 * `data` (a string is verified as its UTF-8 bytes) under `publicKey`.
 *
 * Never throws: a malformed or non-canonical signature encoding, a signature of the wrong
 * length, a key that is not an Ed25519 public key, or data that is neither string nor Buffer
 * all give false.
 */
export function ed25519Verify(data: string | Buffer, signature: string, publicKey: KeyObject): boolean {
  try {
    if (!isKey(publicKey, "public") || typeof signature !== "string") return false;
    if (typeof data !== "string" && !Buffer.isBuffer(data)) return false;
    if (!/^[A-Za-z0-9_-]{86}$/.test(signature)) return false;
    const bytes = Buffer.from(signature, "base64url");
    // Node decodes leniently; accept only the one canonical spelling of the 64 bytes.
    if (bytes.length !== 64 || bytes.toString("base64url") !== signature) return false;
    return verify(null, toBytes(data), publicKey, bytes);
  } catch {
    return false;
  }
}

/**
 * PKCS#8 PEM of an Ed25519 private key, unencrypted: seal it before storing.
 *
 * @throws TypeError when the key is not an Ed25519 private key.
 */
export function exportPrivateKeyPem(privateKey: KeyObject): string {
  assertKey(privateKey, "private");
  return privateKey.export({ format: "pem", type: "pkcs8" }).toString();
}

/**
 * Imports a PKCS#8 PEM Ed25519 private key and derives its public key and kid.
 *
 * @throws TypeError when the PEM is malformed or holds another kind of key.
 */
export function importPrivateKeyPem(pem: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new TypeError("not a PEM private key");
  }
  assertKey(privateKey, "private");
  const publicKey = createPublicKey(privateKey);
  return { kid: keyIdOf(publicKey), publicKey, privateKey };
}

/**
 * SPKI PEM of an Ed25519 public key.
 *
 * @throws TypeError when the key is not an Ed25519 public key.
 */
export function exportPublicKeyPem(publicKey: KeyObject): string {
  assertKey(publicKey, "public");
  return publicKey.export({ format: "pem", type: "spki" }).toString();
}

/**
 * Imports an SPKI PEM Ed25519 public key.
 *
 * @throws TypeError when the PEM is malformed or is not an Ed25519 public key (a private key
 *   PEM is rejected too, so a private key is never mistaken for a public one).
 */
export function importPublicKeyPem(pem: string): KeyObject {
  if (typeof pem !== "string" || !pem.includes("-----BEGIN PUBLIC KEY-----")) {
    throw new TypeError("not an SPKI PEM public key");
  }
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: pem, format: "pem" });
  } catch {
    throw new TypeError("not an SPKI PEM public key");
  }
  assertKey(publicKey, "public");
  return publicKey;
}

function rawPublicKey(key: KeyObject): Buffer {
  if (!isKey(key, "public") && !isKey(key, "private")) throw new TypeError("not an Ed25519 key");
  const publicKey = key.type === "public" ? key : createPublicKey(key);
  const jwk = publicKey.export({ format: "jwk" });
  return Buffer.from(jwk.x as string, "base64url");
}

function isKey(key: unknown, type: "public" | "private"): key is KeyObject {
  return key instanceof KeyObject && key.type === type && key.asymmetricKeyType === "ed25519";
}

function assertKey(key: KeyObject, type: "public" | "private"): void {
  if (!isKey(key, type)) throw new TypeError(`not an Ed25519 ${type} key`);
}

function toBytes(data: string | Buffer): Buffer {
  return typeof data === "string" ? Buffer.from(data, "utf8") : data;
}
