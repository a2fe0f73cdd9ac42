/**
 * Short-lived state kept in the browser between redirects (the sign-in request's state, nonce
 * and PKCE verifier; the organization choice), sealed with AES-256-GCM under a key derived
 * from the master key, so the browser can neither read nor alter it. Each value carries its
 * own expiry (service clock, epoch ms) and purpose.
 */
import { z } from "zod";
import { deriveKey, seal, unseal } from "../secrets.js";

/** Seals `value` for `purpose` until `expMs`. */
export function sealState(
  masterKey: Buffer,
  purpose: string,
  value: Record<string, unknown>,
  expMs: number,
): string {
  return seal(deriveKey(masterKey, "session"), JSON.stringify({ p: purpose, e: expMs, v: value }));
}

const Envelope = z.object({ p: z.string(), e: z.number(), v: z.record(z.string(), z.unknown()) });

/**
 * Opens a sealed value; null when missing, altered, sealed for another purpose or expired.
 * The result is validated with `schema`.
 */
export function openState<T>(
  masterKey: Buffer,
  purpose: string,
  sealed: string | undefined,
  nowMs: number,
  schema: z.ZodType<T>,
): T | null {
  if (!sealed) return null;
  try {
    const env = Envelope.parse(JSON.parse(unseal(deriveKey(masterKey, "session"), sealed)));
    if (env.p !== purpose || env.e <= nowMs) return null;
    const parsed = schema.safeParse(env.v);
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
