/**
 * Wire shapes of key rotation and revocation (ADR 0010; docs/operations/keys.md): the service's
 * Ed25519 signing keys (receipt, approval) and each organization's receipt HMAC keys. No shape
 * carries key material: keys are named by their key id (kid) only.
 */
import { z } from "zod";

/** Kid of an Ed25519 signing key: 16 lowercase hex characters (src/receipts/ed25519.ts). */
export const SigningKidSchema = z.string().regex(/^[0-9a-f]{16}$/, "must be 16 lowercase hex characters");

/** Kid of a receipt HMAC key: 16 lowercase hex characters, or `master` (the derived key). */
export const HmacKidSchema = z
  .string()
  .regex(/^([0-9a-f]{16}|master)$/, "must be 16 lowercase hex characters or master");

/** What an Ed25519 key signs. */
export const SigningKeyPurposeSchema = z.enum(["receipt", "approval"]);

/** One key as listed: where it is in its life, never its material. Times are ISO 8601 UTC. */
export const KeyViewSchema = z.object({
  kid: z.string(),
  /** active: signs new artifacts; retired: rotated out, still verifies; revoked: see revoked_at. */
  status: z.enum(["active", "retired", "revoked"]),
  created_at: z.string(),
  /** When a rotation retired it; null while active. */
  retired_at: z.string().nullable(),
  /** Signatures made at or after this time are refused; earlier ones still verify. */
  revoked_at: z.string().nullable(),
  revocation_reason: z.string().nullable(),
});
export type KeyView = z.infer<typeof KeyViewSchema>;

/** GET /v1/admin/signing-keys. */
export const SigningKeyListSchema = z.object({
  receipt: z.array(KeyViewSchema),
  approval: z.array(KeyViewSchema),
});

/** Body of POST /v1/admin/signing-keys/rotate. */
export const RotateSigningKeySchema = z.object({ purpose: SigningKeyPurposeSchema }).strict();

/** POST /v1/admin/signing-keys/rotate and .../receipt-hmac-keys/rotate: the new active key. */
export const KeyRotatedSchema = z.object({
  /** receipt, approval, or receipt_hmac. */
  purpose: z.enum(["receipt", "approval", "receipt_hmac"]),
  /** The organization slug of a receipt HMAC key; null for the service's Ed25519 keys. */
  organization: z.string().nullable(),
  key: KeyViewSchema,
  /** The key the rotation retired; null when there was none. */
  retired_kid: z.string().nullable(),
});

/** A revocation time: ISO 8601 with offset, not before 1970 (no key existed earlier). */
export const RevokedAtSchema = z.iso
  .datetime({ offset: true })
  .refine((v) => Date.parse(v) >= 0, "must not be before 1970-01-01");

/** Body of the revoke routes. */
export const RevokeKeySchema = z
  .object({
    /**
     * ISO 8601 with offset; from when the key's signatures are refused (e.g. when it may have
     * leaked). Default: now. Not in the future.
     */
    revoked_at: RevokedAtSchema.optional(),
    reason: z.string().min(1).max(500).optional(),
  })
  .strict();

/** Answer of the revoke routes. */
export const KeyRevokedSchema = z.object({
  purpose: z.enum(["receipt", "approval", "receipt_hmac"]),
  organization: z.string().nullable(),
  key: KeyViewSchema,
  /** The key that replaced it when it was active (revoking rotates first); null otherwise. */
  replaced_by: z.string().nullable(),
});

/** GET /v1/admin/organizations/{slug}/receipt-hmac-keys. */
export const HmacKeyListSchema = z.object({ organization: z.string(), keys: z.array(KeyViewSchema) });
