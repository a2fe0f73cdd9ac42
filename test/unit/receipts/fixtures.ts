/** Receipt fixtures shared by the receipts unit tests. */

import type { SigningKey } from "../../../src/receipts/ed25519.js";
import { formatReceiptNumber } from "../../../src/receipts/number.js";
import type { ReceiptBody, SignedReceipt } from "../../../src/receipts/schema.js";
import { receiptHash, signReceipt } from "../../../src/receipts/sign.js";

/** The service's HMAC key in tests (32 bytes). */
export const HMAC_KEY = Buffer.alloc(32, 7);

/** A deterministic, valid v4 UUID. */
export const uuid = (n: number, group = 0): string =>
  `0000000${group}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/** A complete receipt body with every kind of field filled in. */
export function makeBody(
  sequence = 1,
  previousHash: string | null = null,
  overrides: Partial<ReceiptBody> = {},
): ReceiptBody {
  return {
    receipt_id: uuid(sequence, 1),
    receipt_number: formatReceiptNumber(2026, sequence),
    chain_id: uuid(sequence, 2),
    organization: "acme",
    chain_name: "invoice-run",
    environment: "production",
    metadata: { ticket: "OPS-17", nested: { retries: 2, tags: ["a", "b"], ok: true, none: null } },
    status: "completed",
    failure: null,
    summary: "Paid 2 invoices; 1 approval.",
    started_at: "2026-01-15T12:00:00.000Z",
    completed_at: "2026-01-15T12:05:00.000Z",
    agents_involved: ["planner", "payer"],
    total_actions: 2,
    cumulative_metrics: {
      financial_exposure_usd: 7250.5,
      external_communications_count: 1,
      records_modified_count: 3,
      external_domains_contacted: ["api.stripe.com"],
      estimated_cost_usd: 0.0123,
    },
    approvals: [
      {
        approval_id: uuid(sequence, 3),
        action_event_id: uuid(sequence, 4),
        agent_name: "payer",
        action_type: "tool_call",
        action_name: "pay_invoice",
        decision: "approved",
        decided_by: "ana@acme.example",
        notes: "ok for this vendor",
        decided_at: "2026-01-15T12:03:00.000Z",
        exception: {
          exception_id: uuid(sequence, 5),
          duration: "1d",
          expires_at: "2026-01-16T12:03:00.000Z",
        },
      },
    ],
    events_summary: [
      {
        sequence: 1,
        event_id: uuid(sequence, 6),
        agent_name: "planner",
        parent_agent_name: null,
        action_type: "llm_call",
        action_name: "plan",
        policy_decision: "allow",
        decision_source: "backend_evaluation",
        policy_name: null,
        exception_id: null,
        recorded_at: "2026-01-15T12:01:00.000Z",
        outcome: { status: "success", error_class: null, duration_ms: 812, result_sha256: "ab".repeat(32) },
      },
      {
        sequence: 2,
        event_id: uuid(sequence, 4),
        agent_name: "payer",
        parent_agent_name: "planner",
        action_type: "tool_call",
        action_name: "pay_invoice",
        policy_decision: "allow",
        decision_source: "human_approval",
        policy_name: "financial-threshold",
        exception_id: null,
        recorded_at: "2026-01-15T12:02:00.000Z",
        outcome: null,
      },
    ],
    policy_version: "cfg-3f2a",
    previous_receipt_hash: previousHash,
    ...overrides,
  };
}

/** A correctly signed and linked chain of `n` receipts of organization acme. */
export function buildChain(
  n: number,
  keys: { hmacKey?: Buffer; signingKey?: SigningKey } = {},
  body: (sequence: number, previousHash: string | null) => ReceiptBody = makeBody,
): SignedReceipt[] {
  const hmacKey = keys.hmacKey ?? HMAC_KEY;
  const ed25519 = keys.signingKey
    ? { kid: keys.signingKey.kid, privateKey: keys.signingKey.privateKey }
    : undefined;
  const chain: SignedReceipt[] = [];
  for (let sequence = 1; sequence <= n; sequence++) {
    const previous = chain.at(-1);
    chain.push(signReceipt(body(sequence, previous ? receiptHash(previous) : null), { hmacKey, ed25519 }));
  }
  return chain;
}

/** A deep copy through JSON, as a receipt looks after export and import. */
export const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
