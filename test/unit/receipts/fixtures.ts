/** Receipt fixtures shared by the receipts unit tests. */

import {
  APPROVAL_ATTESTATION_FORMAT,
  type ApprovalRecord,
  approvalAttestationText,
} from "../../../src/receipts/approval-record.js";
import { ed25519Sign, type SigningKey } from "../../../src/receipts/ed25519.js";
import { type EventRecord, type ExportedEvent, hashEventChain } from "../../../src/receipts/event-chain.js";
import { formatReceiptNumber } from "../../../src/receipts/number.js";
import type {
  PreEventChainReceiptBody,
  PreEventChainSignedReceipt,
  ReceiptBody,
  ReceiptEvent,
  SignedReceipt,
} from "../../../src/receipts/schema.js";
import { hmacSignature, receiptHash, signingInput, signReceipt } from "../../../src/receipts/sign.js";

/** The service's HMAC key in tests (32 bytes). */
export const HMAC_KEY = Buffer.alloc(32, 7);

/** A deterministic, valid v4 UUID. */
export const uuid = (n: number, group = 0): string =>
  `0000000${group}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

/** The organization id of the fixtures' approval attestations. */
export const ORG_ID = uuid(1, 9);

/**
 * The two recorded events of receipt `sequence`'s chain: a planner's LLM call with an outcome,
 * and a payment approved by a human (approval uuid(sequence, 3)).
 */
export function makeEventRecords(sequence = 1): EventRecord[] {
  const chainId = uuid(sequence, 2);
  return [
    {
      chain_id: chainId,
      sequence: 1,
      event_id: uuid(sequence, 6),
      agent_name: "planner",
      parent_agent_name: null,
      action_type: "llm_call",
      action_name: "plan",
      category: "llm",
      payload: { model: "m", input_tokens: 10, api_key: "[REDACTED]" },
      decision: {
        policy_decision: "allow",
        decision_source: "backend_evaluation",
        policy_name: null,
        decision_reason: "",
      },
      exception_id: null,
      approval_id: null,
      outcome: { status: "success", error_class: null, duration_ms: 812, result_sha256: "ab".repeat(32) },
      recorded_at: "2026-01-15T12:01:00.000Z",
    },
    {
      chain_id: chainId,
      sequence: 2,
      event_id: uuid(sequence, 4),
      agent_name: "payer",
      parent_agent_name: "planner",
      action_type: "tool_call",
      action_name: "pay_invoice",
      category: "financial",
      payload: { amount_usd: 7500, vendor: "ACME" },
      decision: {
        policy_decision: "allow",
        decision_source: "human_approval",
        policy_name: "financial-threshold",
        decision_reason: "ok for this vendor",
      },
      exception_id: null,
      approval_id: uuid(sequence, 3),
      outcome: null,
      recorded_at: "2026-01-15T12:02:00.000Z",
    },
  ];
}

/** The events of receipt `sequence` as an export carries them (records with their hashes). */
export function makeExportedEvents(sequence = 1, records = makeEventRecords(sequence)): ExportedEvent[] {
  const { hashes } = hashEventChain(records);
  return records.map((r, i) => ({ ...r, event_hash: hashes[i]! }));
}

/** The events_summary items and event_chain of a receipt over `records`. */
export function summarizeEvents(records: EventRecord[]): Pick<ReceiptBody, "events_summary" | "event_chain"> {
  const { hashes, commitment } = hashEventChain(records);
  return {
    events_summary: records.map(
      (r, i): ReceiptEvent => ({
        sequence: r.sequence,
        event_id: r.event_id,
        agent_name: r.agent_name,
        parent_agent_name: r.parent_agent_name,
        action_type: r.action_type,
        action_name: r.action_name,
        policy_decision: r.decision.policy_decision as ReceiptEvent["policy_decision"],
        decision_source: r.decision.decision_source as ReceiptEvent["decision_source"],
        policy_name: (r.decision.policy_name as string | null) ?? null,
        exception_id: r.exception_id,
        recorded_at: r.recorded_at,
        outcome: r.outcome,
        event_hash: hashes[i]!,
      }),
    ),
    event_chain: commitment,
  };
}

/** The signed approval record of receipt `sequence`'s approval, as an export carries it. */
export function makeApprovalRecord(sequence: number, key: SigningKey): ApprovalRecord {
  const facts = {
    approval_id: uuid(sequence, 3),
    organization_id: ORG_ID,
    chain_id: uuid(sequence, 2),
    event_id: uuid(sequence, 4),
    status: "approved",
    policy_decision: "allow",
    decision_source: "human_approval",
    decided_by: "ana@acme.example",
    notes: "ok for this vendor",
    requested_at: "2026-01-15T12:02:00.000Z",
    decided_at: "2026-01-15T12:03:00.000Z",
    exception: {
      exception_id: uuid(sequence, 5),
      duration: "1d",
      expires_at: "2026-01-16T12:03:00.000Z",
    },
  };
  const text = approvalAttestationText({ format: APPROVAL_ATTESTATION_FORMAT, ...facts, kid: key.kid });
  return { ...facts, kid: key.kid, signature: ed25519Sign(text, key.privateKey) };
}

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
    ...summarizeEvents(makeEventRecords(sequence)),
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

/**
 * The body receipt `sequence` had before the event hash chain (793c0af^): makeBody without
 * `event_chain` and without `events_summary[].event_hash`.
 */
export function makePreEventChainBody(
  sequence = 1,
  previousHash: string | null = null,
): PreEventChainReceiptBody {
  const { event_chain: _chain, events_summary, ...rest } = makeBody(sequence, previousHash);
  return {
    ...rest,
    events_summary: events_summary.map(({ event_hash: _hash, ...event }) => event),
  };
}

/**
 * Signs a body the way the service did before the event hash chain: HMAC-SHA256 and Ed25519
 * over the canonical JSON of the body as given (no schema of today's format involved).
 */
export function signAsBefore(
  body: PreEventChainReceiptBody | Record<string, unknown>,
  keys: { hmacKey?: Buffer; signingKey?: SigningKey } = {},
): PreEventChainSignedReceipt {
  const typed = body as PreEventChainReceiptBody;
  const input = signingInput(typed);
  return {
    ...typed,
    signature: hmacSignature(typed, keys.hmacKey ?? HMAC_KEY),
    ed25519: keys.signingKey
      ? { kid: keys.signingKey.kid, signature: ed25519Sign(input, keys.signingKey.privateKey) }
      : null,
  };
}

/**
 * A log of `old` pre-event-chain receipts followed by `current` receipts that commit to their
 * events, correctly linked and numbered 1..old+current (an organization's log across the upgrade).
 */
export function buildMixedChain(
  old: number,
  current: number,
  keys: { hmacKey?: Buffer; signingKey?: SigningKey } = {},
): Array<SignedReceipt | PreEventChainSignedReceipt> {
  const hmacKey = keys.hmacKey ?? HMAC_KEY;
  const ed25519 = keys.signingKey
    ? { kid: keys.signingKey.kid, privateKey: keys.signingKey.privateKey }
    : undefined;
  const chain: Array<SignedReceipt | PreEventChainSignedReceipt> = [];
  for (let sequence = 1; sequence <= old + current; sequence++) {
    const previous = chain.at(-1);
    const previousHash = previous ? receiptHash(previous) : null;
    chain.push(
      sequence <= old
        ? signAsBefore(makePreEventChainBody(sequence, previousHash), {
            hmacKey,
            signingKey: keys.signingKey,
          })
        : signReceipt(makeBody(sequence, previousHash), { hmacKey, ed25519 }),
    );
  }
  return chain;
}
