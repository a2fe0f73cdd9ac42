/**
 * The `requestState` of a modern-era (MCP 2026-07-28) approval wait: the handle a retried
 * tools/call carries back to re-attach to the same approval, on the same or another connection.
 *
 * Format: `v1.<payload>.<mac>`, payload the base64url of the JSON
 * `{ c: chain id, a: approval id, t: tool, h: SHA-256 hex of the canonical JSON of the arguments }`,
 * mac the base64url HMAC-SHA256 of `v1.<payload>` under the key of {@link stateKey}: the same in
 * every replica of one pod template and across restarts (derived from the API key all replicas
 * mount, and from the agent name and the upstream), so that any of them opens the handle of
 * another (issue 29). Tamper-evident rather than secret (the chain and approval ids also appear
 * in results): a client can neither alter a handle nor reuse one for other arguments. With a
 * service account token (per pod, rotated) there is no shared secret: the key is derived from the
 * agent name and the upstream only, and a handle opened on a sidecar that does not hold its wait
 * is checked against the service's record of the approval's event (core/approvals.ts `adopt`).
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import canonicalize from "canonicalize";
import { z } from "zod";
import { sha256Hex } from "../../core/fingerprint.js";
import { invalidArgument } from "../../wire/errors.js";

/** What a requestState names: the wait of one approval in one chain, for one tool call. */
export interface WaitHandle {
  chainId: string;
  approvalId: string;
}

const PayloadSchema = z.object({ c: z.string().min(1), a: z.string().min(1), t: z.string(), h: z.string() });

/** Issues and opens requestState handles (see the module comment). */
export class RequestStates {
  readonly #key: Buffer;

  /** @param key the HMAC key ({@link stateKey}). */
  constructor(key: Buffer) {
    this.#key = key;
  }

  /** The handle of `wait` for the call of `tool` with `args`. */
  issue(wait: WaitHandle, tool: string, args: Record<string, unknown>): string {
    const payload = Buffer.from(
      JSON.stringify({ c: wait.chainId, a: wait.approvalId, t: tool, h: argumentsHash(args) }),
    ).toString("base64url");
    const signed = `v1.${payload}`;
    return `${signed}.${this.#mac(signed).toString("base64url")}`;
  }

  /**
   * Opens a handle a retry of the call of `tool` with `args` carried.
   * @throws GatewayError INVALID_ARGUMENT (field requestState) when the handle is malformed, was
   *   not issued by a sidecar of this pod template, or was issued for another tool or other
   *   arguments.
   */
  open(state: string, tool: string, args: Record<string, unknown>): WaitHandle {
    const [version, payload, mac, ...rest] = state.split(".");
    if (version !== "v1" || !payload || !mac || rest.length > 0)
      throw invalidArgument("requestState", "is not a handle this sidecar issued");
    const expected = this.#mac(`v1.${payload}`);
    const given = Buffer.from(mac, "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw invalidArgument("requestState", "was not issued by a sidecar of this pod template (altered)");
    let parsed: z.infer<typeof PayloadSchema>;
    try {
      parsed = PayloadSchema.parse(JSON.parse(Buffer.from(payload, "base64url").toString("utf8")));
    } catch {
      throw invalidArgument("requestState", "is not a handle this sidecar issued");
    }
    if (parsed.t !== tool || parsed.h !== argumentsHash(args))
      throw invalidArgument("requestState", "belongs to a call of another tool or with other arguments");
    return { chainId: parsed.c, approvalId: parsed.a };
  }

  #mac(text: string): Buffer {
    return createHmac("sha256", this.#key).update(text).digest();
  }
}

/** SHA-256 hex of the canonical JSON of a call's arguments. */
const argumentsHash = (args: Record<string, unknown>): string => sha256Hex(canonicalize(args) ?? "");

/**
 * The HMAC key of requestState handles: HKDF-SHA256 of `secret` (the API key all replicas mount;
 * null with a per-pod service account token) with the agent name and the upstream as info, so
 * a handle is valid at every replica of the pod template and after restarts, and nowhere else.
 */
export function stateKey(secret: string | null, agentName: string, upstream: string): Buffer {
  const info = `tollgate mcp requestState v1\0${agentName}\0${upstream}`;
  return Buffer.from(hkdfSync("sha256", secret ?? "", "tollgate", info, 32));
}
