import { createHash, createPrivateKey, generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  ed25519Sign,
  ed25519Verify,
  exportJwks,
  exportPrivateKeyPem,
  exportPublicJwk,
  exportPublicKeyPem,
  generateSigningKey,
  importPrivateKeyPem,
  importPublicJwk,
  importPublicKeyPem,
  keyIdOf,
} from "../../../src/receipts/ed25519.js";

const b64u = (hex: string): string => Buffer.from(hex, "hex").toString("base64url");

/** RFC 8032 section 7.1, tests 1 and 2. */
const rfc8032 = [
  {
    secret: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
    public: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    message: "",
    signature:
      "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
  },
  {
    secret: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
    public: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    message: "72",
    signature:
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
  },
];

const key = generateSigningKey();
const other = generateSigningKey();

describe("Ed25519 keys", () => {
  it("derives the kid from SHA-256 of the raw public key", () => {
    const raw = Buffer.from(exportPublicJwk(key.kid, key.publicKey).x, "base64url");
    expect(raw.length).toBe(32);
    expect(key.kid).toMatch(/^[0-9a-f]{16}$/);
    expect(key.kid).toBe(createHash("sha256").update(raw).digest("hex").slice(0, 16));
    expect(keyIdOf(key.privateKey)).toBe(key.kid);
    expect(other.kid).not.toBe(key.kid);
  });

  it("exports a public JWK and a JWKS", () => {
    const jwk = exportPublicJwk(key.kid, key.publicKey);
    expect(jwk).toEqual({
      kty: "OKP",
      crv: "Ed25519",
      x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      kid: key.kid,
      use: "sig",
      alg: "EdDSA",
    });
    expect(exportJwks([key, other]).keys.map((k) => k.kid)).toEqual([key.kid, other.kid]);
    expect(() => exportPublicJwk(key.kid, key.privateKey)).toThrow(TypeError);
  });

  it("imports a public JWK, computing the kid when it has none", () => {
    const jwk = exportPublicJwk("custom-kid", key.publicKey);
    const imported = importPublicJwk(jwk);
    expect(imported.kid).toBe("custom-kid");
    expect(imported.publicKey.equals(key.publicKey)).toBe(true);
    const { kid: _kid, ...bare } = jwk;
    expect(importPublicJwk({ ...bare, x5t: "ignored" }).kid).toBe(key.kid);
  });

  it.each([
    ["a private JWK", () => createPrivateKey(exportPrivateKeyPem(key.privateKey)).export({ format: "jwk" })],
    ["another curve", () => ({ ...exportPublicJwk(key.kid, key.publicKey), crv: "X25519" })],
    ["another key type", () => ({ ...exportPublicJwk(key.kid, key.publicKey), kty: "EC" })],
    ["an encryption key", () => ({ ...exportPublicJwk(key.kid, key.publicKey), use: "enc" })],
    ["a short x", () => ({ ...exportPublicJwk(key.kid, key.publicKey), x: "AAAA" })],
    [
      "a padded x",
      () => ({
        ...exportPublicJwk(key.kid, key.publicKey),
        x: `${exportPublicJwk(key.kid, key.publicKey).x}=`,
      }),
    ],
    ["null", () => null],
    ["a string", () => "jwk"],
  ])("rejects %s on import with a TypeError", (_label, make) => {
    expect(() => importPublicJwk(make())).toThrow(TypeError);
  });

  it("round-trips private keys through PKCS#8 PEM and public keys through SPKI PEM", () => {
    const pem = exportPrivateKeyPem(key.privateKey);
    expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const imported = importPrivateKeyPem(pem);
    expect(imported.kid).toBe(key.kid);
    expect(imported.publicKey.equals(key.publicKey)).toBe(true);
    expect(ed25519Verify("x", ed25519Sign("x", imported.privateKey), key.publicKey)).toBe(true);

    const publicPem = exportPublicKeyPem(key.publicKey);
    expect(publicPem).toMatch(/^-----BEGIN PUBLIC KEY-----\n/);
    expect(importPublicKeyPem(publicPem).equals(key.publicKey)).toBe(true);
  });

  it("rejects PEMs of the wrong kind", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
    expect(() => importPrivateKeyPem("not a pem")).toThrow(TypeError);
    expect(() =>
      importPrivateKeyPem(rsa.privateKey.export({ format: "pem", type: "pkcs8" }).toString()),
    ).toThrow(TypeError);
    expect(() => importPublicKeyPem(exportPrivateKeyPem(key.privateKey))).toThrow(TypeError);
    expect(() =>
      importPublicKeyPem(rsa.publicKey.export({ format: "pem", type: "spki" }).toString()),
    ).toThrow(TypeError);
    expect(() =>
      importPublicKeyPem("-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n"),
    ).toThrow(TypeError);
    expect(() => exportPrivateKeyPem(key.publicKey)).toThrow(TypeError);
    expect(() => exportPublicKeyPem(key.privateKey)).toThrow(TypeError);
  });
});

describe("ed25519Sign and ed25519Verify", () => {
  it.each(rfc8032)("match the RFC 8032 test vector for message %j", (vector) => {
    const privateKey = createPrivateKey({
      key: { kty: "OKP", crv: "Ed25519", d: b64u(vector.secret), x: b64u(vector.public) },
      format: "jwk",
    });
    const { publicKey } = importPublicJwk({ kty: "OKP", crv: "Ed25519", x: b64u(vector.public) });
    const message = Buffer.from(vector.message, "hex");
    expect(ed25519Sign(message, privateKey)).toBe(b64u(vector.signature));
    expect(ed25519Verify(message, b64u(vector.signature), publicKey)).toBe(true);
  });

  it("signs strings as UTF-8 in 86 base64url characters", () => {
    const signature = ed25519Sign("grüße", key.privateKey);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(ed25519Verify("grüße", signature, key.publicKey)).toBe(true);
    expect(ed25519Verify(Buffer.from("grüße", "utf8"), signature, key.publicKey)).toBe(true);
  });

  it("rejects other data and other keys", () => {
    const signature = ed25519Sign("data", key.privateKey);
    expect(ed25519Verify("datA", signature, key.publicKey)).toBe(false);
    expect(ed25519Verify("data", signature, other.publicKey)).toBe(false);
  });

  const valid = ed25519Sign("data", key.privateKey);
  const flipped = (valid[0] === "A" ? "B" : "A") + valid.slice(1);
  const lastIndex = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".indexOf(valid.at(-1)!);
  const nonCanonical =
    valid.slice(0, -1) + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[lastIndex + 1];

  it.each([
    ["an empty string", ""],
    ["a flipped byte", flipped],
    ["a truncated signature", valid.slice(0, 85)],
    ["a padded signature", `${valid}==`],
    ["standard base64", Buffer.from(valid, "base64url").toString("base64")],
    ["a non-canonical last character", nonCanonical],
    [
      "a 65-byte signature",
      Buffer.concat([Buffer.from(valid, "base64url"), Buffer.alloc(1)]).toString("base64url"),
    ],
    ["characters outside base64url", "!".repeat(86)],
    ["a non-string", 12 as unknown as string],
    ["null", null as unknown as string],
  ])("returns false, never throws, for %s", (_label, signature) => {
    expect(ed25519Verify("data", signature, key.publicKey)).toBe(false);
  });

  it("returns false for keys and data of the wrong kind", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
    expect(ed25519Verify("data", valid, key.privateKey)).toBe(false);
    expect(ed25519Verify("data", valid, rsa.publicKey)).toBe(false);
    expect(ed25519Verify("data", valid, "key" as never)).toBe(false);
    expect(ed25519Verify({ a: 1 } as never, valid, key.publicKey)).toBe(false);
  });

  it("refuses to sign with a public key", () => {
    expect(() => ed25519Sign("data", key.publicKey)).toThrow(TypeError);
  });
});
