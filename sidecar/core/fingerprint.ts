/**
 * Which calls are the same call: the fingerprint and the re-attach key a retry is matched by
 * (approvals.ts), and the SHA-256 hex the outcome reports carry.
 */
import { hash } from "node:crypto";
import canonicalize from "canonicalize";
import type { InvokeInput } from "../wire/validate.js";

/**
 * The call's fingerprint: SHA-256 of the canonical JSON of agent, parent, type, name, payload
 * and upstream. Two calls with the same fingerprint are the same call.
 */
export function fingerprintOf(input: InvokeInput): string {
  return sha256Hex(
    canonicalize({
      agent: input.agentName,
      parent: input.parentAgentName,
      type: input.actionType,
      name: input.actionName,
      payload: input.payload,
      upstream: input.upstream,
    }) ?? "",
  );
}

/** The re-attach key of a call: its idempotency key when given, else its fingerprint. */
export function reattachKey(input: InvokeInput, idempotencyKey: string | null): string {
  return idempotencyKey ? `key:${idempotencyKey}` : `fp:${fingerprintOf(input)}`;
}

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export const sha256Hex = (text: string): string => hash("sha256", text, "hex");
