/**
 * CSRF protection of every dashboard form: a token bound to the session (HMAC-SHA256 of a
 * binding such as the session id, under a key derived from the master key). Forms carry it in
 * the hidden field `_csrf`; POST handlers compare it in constant time. Together with the
 * SameSite=Lax session cookie a cross-site form can neither read nor forge it.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { deriveKey } from "../secrets.js";

/** Name of the hidden form field. */
export const CSRF_FIELD = "_csrf";

/** Issues and checks tokens for one master key. */
export class Csrf {
  private readonly key: Buffer;

  constructor(masterKey: Buffer) {
    this.key = deriveKey(masterKey, "csrf");
  }

  /** The token for `binding` (a session id, or `purpose:id` before sign-in). */
  token(binding: string): string {
    return createHmac("sha256", this.key).update(`tollgate-csrf:v1:${binding}`).digest("base64url");
  }

  /** True when `given` is the token of `binding`. */
  check(binding: string, given: unknown): boolean {
    if (typeof given !== "string") return false;
    const a = Buffer.from(this.token(binding));
    const b = Buffer.from(given);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
