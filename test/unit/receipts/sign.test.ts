import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { canonicalJson } from "../../../src/receipts/canonical.js";
import { ed25519Verify, generateSigningKey } from "../../../src/receipts/ed25519.js";
import { ReceiptBodySchema, type SignedReceipt, SignedReceiptSchema } from "../../../src/receipts/schema.js";
import {
  hmacSignature,
  receiptBody,
  receiptHash,
  signingInput,
  signReceipt,
  verifyHmac,
} from "../../../src/receipts/sign.js";
import { clone, HMAC_KEY, makeBody } from "./fixtures.js";

type Path = (string | number)[];

/** Every path into a JSON value: objects, arrays and leaves, except the root. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== "object" || value === null) return [];
  const entries: [string | number, unknown][] = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value);
  return entries.flatMap(([key, item]) => [[...prefix, key], ...pathsOf(item, [...prefix, key])]);
}

function changed(value: unknown): unknown {
  if (typeof value === "string") return `${value}x`;
  if (typeof value === "number") return value + 1;
  if (typeof value === "boolean") return !value;
  if (value === null) return "x";
  if (Array.isArray(value)) return value.length > 0 ? value.slice(1) : ["x"];
  return { ...(value as object), extra: 1 };
}

/** A copy of `root` with the value at `path` changed, or its key deleted. */
function mutate<T>(root: T, path: Path, mode: "change" | "delete"): T {
  const copy = clone(root) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (mode === "delete") {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else {
    parent[last] = changed(parent[last]);
  }
  return copy as T;
}

const key = generateSigningKey();
const completed = signReceipt(makeBody(1), { hmacKey: HMAC_KEY, ed25519: key });
const failed = signReceipt(
  makeBody(2, "sha256:" + "0".repeat(64), {
    status: "failed",
    failure: { mode: "exception", message: "TimeoutError: upstream did not answer" },
    approvals: [],
    metadata: {},
  }),
  { hmacKey: HMAC_KEY },
);

describe("hmacSignature and verifyHmac", () => {
  it("signs the canonical body as hmac-sha256:<64 hex> and verifies it", () => {
    const body = makeBody(1);
    const signature = hmacSignature(body, HMAC_KEY);
    expect(signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(hmacSignature(body, HMAC_KEY)).toBe(signature);
    expect(verifyHmac(body, signature, HMAC_KEY)).toBe(true);
    expect(completed.signature).toBe(signature);
  });

  it("ignores key order and the signature fields of a signed receipt", () => {
    const reversed = Object.fromEntries(Object.entries(completed).reverse()) as SignedReceipt;
    expect(verifyHmac(reversed, completed.signature, HMAC_KEY)).toBe(true);
    expect(hmacSignature(completed, HMAC_KEY)).toBe(completed.signature);
    expect(signingInput(completed)).toBe(canonicalJson(makeBody(1)));
  });

  it("survives a JSON round trip", () => {
    const imported = clone(completed);
    expect(verifyHmac(imported, imported.signature, HMAC_KEY)).toBe(true);
    expect(receiptHash(imported)).toBe(receiptHash(completed));
  });

  it("rejects another key", () => {
    expect(verifyHmac(completed, completed.signature, Buffer.alloc(32, 8))).toBe(false);
  });

  it.each([
    ["an empty string", ""],
    ["no prefix", completed.signature.slice("hmac-sha256:".length)],
    ["another algorithm", completed.signature.replace("hmac-sha256", "hmac-sha512")],
    ["upper-case hex", completed.signature.toUpperCase().replace("HMAC-SHA256", "hmac-sha256")],
    ["a short digest", completed.signature.slice(0, -2)],
    ["a long digest", completed.signature + "00"],
    ["a non-string", 42 as unknown as string],
  ])("rejects a signature with %s", (_label, signature) => {
    expect(verifyHmac(completed, signature, HMAC_KEY)).toBe(false);
  });

  it("rejects a body that cannot be canonicalized instead of throwing", () => {
    const bad = { ...completed, summary: undefined } as unknown as SignedReceipt;
    expect(verifyHmac(bad, completed.signature, HMAC_KEY)).toBe(false);
  });

  it("refuses HMAC keys shorter than 32 bytes", () => {
    expect(() => hmacSignature(makeBody(1), Buffer.alloc(31))).toThrow(RangeError);
    expect(() => verifyHmac(completed, completed.signature, Buffer.alloc(16))).toThrow(RangeError);
    expect(() => signReceipt(makeBody(1), { hmacKey: Buffer.from("secret") })).toThrow(RangeError);
  });

  it.each([
    ["completed", completed],
    ["failed", failed],
  ])("is invalidated by altering or deleting any field of a %s receipt", (_label, signed) => {
    const paths = pathsOf(receiptBody(signed));
    expect(paths.length).toBeGreaterThan(20);
    fc.assert(
      fc.property(
        fc.constantFrom(...paths),
        fc.constantFrom("change" as const, "delete" as const),
        (path, mode) => {
          const altered = mutate(signed, path, mode);
          expect(verifyHmac(altered, signed.signature, HMAC_KEY)).toBe(false);
          expect(receiptHash(altered)).not.toBe(receiptHash(signed));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("is invalidated by an added field", () => {
    const altered = { ...completed, extra: null } as unknown as SignedReceipt;
    expect(verifyHmac(altered, completed.signature, HMAC_KEY)).toBe(false);
  });
});

describe("receiptHash", () => {
  it("is sha256:<64 hex> over the canonical full signed receipt", () => {
    expect(receiptHash(completed)).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(receiptHash(clone(completed))).toBe(receiptHash(completed));
  });

  it.each([
    ["signature", (r: SignedReceipt) => ({ ...r, signature: hmacSignature(r, Buffer.alloc(32, 9)) })],
    [
      "ed25519 signature",
      (r: SignedReceipt) => ({ ...r, ed25519: { kid: r.ed25519!.kid, signature: "A".repeat(86) } }),
    ],
    ["ed25519 kid", (r: SignedReceipt) => ({ ...r, ed25519: { ...r.ed25519!, kid: "0000000000000000" } })],
    ["ed25519 removed", (r: SignedReceipt) => ({ ...r, ed25519: null })],
  ])("changes when the %s changes, which the signed data does not cover", (_label, alter) => {
    const altered = alter(completed);
    expect(signingInput(altered)).toBe(signingInput(completed));
    expect(verifyHmac(altered, completed.signature, HMAC_KEY)).toBe(true);
    expect(receiptHash(altered)).not.toBe(receiptHash(completed));
  });
});

describe("signReceipt", () => {
  it("returns the validated body with an HMAC and an Ed25519 signature of the same bytes", () => {
    expect(SignedReceiptSchema.parse(completed)).toEqual(completed);
    expect(receiptBody(completed)).toEqual(makeBody(1));
    expect(completed.ed25519?.kid).toBe(key.kid);
    expect(ed25519Verify(signingInput(completed), completed.ed25519!.signature, key.publicKey)).toBe(true);
  });

  it("sets ed25519 to null without an Ed25519 key", () => {
    expect(failed.ed25519).toBeNull();
    expect(SignedReceiptSchema.safeParse(failed).success).toBe(true);
  });

  it("does not keep references to the caller's body", () => {
    const body = makeBody(1);
    const signed = signReceipt(body, { hmacKey: HMAC_KEY });
    body.metadata.ticket = "changed";
    expect(signed.metadata.ticket).toBe("OPS-17");
  });

  it.each([
    ["an unknown field", { ...makeBody(1), extra: 1 }],
    ["a non-canonical receipt number", makeBody(1, null, { receipt_number: "PR-2026-000001" })],
    ["a malformed previous hash", makeBody(1, "sha256:abc")],
    ["a failed status without failure", makeBody(1, null, { status: "failed" })],
    [
      "a completed status with a failure",
      makeBody(1, null, { failure: { mode: "exception", message: "x" } }),
    ],
    ["completed_at before started_at", makeBody(1, null, { completed_at: "2026-01-15T11:00:00.000Z" })],
    ["a timestamp with an offset", makeBody(1, null, { started_at: "2026-01-15T12:00:00+01:00" })],
    ["a non-UUID receipt id", makeBody(1, null, { receipt_id: "r-1" })],
    ["an upper-case organization", makeBody(1, null, { organization: "Acme" })],
    ["a fractional total_actions", makeBody(1, null, { total_actions: 1.5 })],
    ["a non-JSON metadata value", makeBody(1, null, { metadata: { at: new Date(0) as never } })],
  ])("rejects a body with %s", (_label, body) => {
    expect(() => signReceipt(body as never, { hmacKey: HMAC_KEY })).toThrow(ZodError);
    expect(ReceiptBodySchema.safeParse(body).success).toBe(false);
  });

  it("rejects an Ed25519 key that is not a private key", () => {
    expect(() =>
      signReceipt(makeBody(1), { hmacKey: HMAC_KEY, ed25519: { kid: key.kid, privateKey: key.publicKey } }),
    ).toThrow(TypeError);
  });
});
