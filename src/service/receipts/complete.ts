/**
 * Chain completion and receipts (spec: "Receipt", signing and chaining rules). The receipt is
 * built from the stored chain, signed (HMAC-SHA256 with the service-only key, plus an Ed25519
 * attestation for offline verification), and appended to the organization's hash chain under
 * the organization's row lock, so concurrent completions never fork the chain or skip a number.
 *
 * The chain's events are hash-linked here, not when they are recorded (docs/adr/0007): by now
 * every event's final decision and outcome are known, and the receipt commits to each event's
 * hash and to the head of the chain (src/receipts/event-chain.ts). Every approval the receipt
 * lists is signed by then: pending ones are cancelled and signed, and resolutions still without
 * an attestation (a timeout applied on read without keys, whose job has not run yet) are signed
 * in the same transaction. Each completion also returns a signed checkpoint of the
 * organization's log (src/receipts/checkpoint.ts).
 */
import { randomUUID } from "node:crypto";
import type { CompleteChain, CompleteResponseSchema, WireOf } from "../../contract/v1/chains.js";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import { redactText } from "../../policy/sanitize.js";
import { canonicalJson } from "../../receipts/canonical.js";
import { type Checkpoint, signCheckpoint } from "../../receipts/checkpoint.js";
import { type EventChainCommitment, type EventRecord, hashEventChain } from "../../receipts/event-chain.js";
import { formatReceiptNumber } from "../../receipts/number.js";
import type { ReceiptApproval, ReceiptBody, ReceiptEvent } from "../../receipts/schema.js";
import { hashOfCanonical, signReceipt } from "../../receipts/sign.js";
import { signUnsignedResolutions } from "../approvals/attestation.js";
import { cancelPendingApprovals } from "../approvals/decide.js";
import type { ApprovalWaiters } from "../approvals/waiters.js";
import { type ChainRow, getChain, sealChain } from "../chains/store.js";
import { cumulativeMetrics } from "../chains/views.js";
import type { Clock } from "../clock.js";
import type { Database, Queryable } from "../db/pool.js";
import { conflict } from "../errors.js";
import type { OrgConfigCache } from "../orgs/orgs.js";
import { orgById } from "../orgs/orgs.js";
import { loadEventRecords, loadReceiptApprovals } from "./evidence.js";
import type { ReceiptHmacKeys } from "./hmac-keys.js";
import type { SigningKeys } from "./signing-keys.js";
import { appendReceipt, lockReceiptLog } from "./store.js";

/** Answer of POST /v1/chains/{chain_id}/complete. */
export type CompletionResult = {
  chain_id: string;
  status: "completed" | "failed";
  receipt_id: string;
  receipt_number: string;
  /** The organization's log as of this receipt, signed with the receipt key (keep it to detect truncation). */
  checkpoint: Checkpoint;
};

/**
 * Seals a chain and issues its receipt (spec: "Exit chain context"), with a signed checkpoint
 * of the organization's receipt log ending at it.
 * @throws ApiError 404 unknown chain; 409 TG_ERR_CHAIN_COMPLETED when already sealed (details
 *   carry the existing receipt_id).
 */
export async function completeChain(
  db: Database,
  opts: {
    orgId: string;
    chainId: string;
    body: CompleteChain;
    clock: Clock;
    /** The organization's receipt HMAC keys: the active one signs. */
    hmacKeys: ReceiptHmacKeys;
    keys: SigningKeys;
    configs: OrgConfigCache;
    /** Held approval-status requests, woken when a pending approval is cancelled. */
    approvalWaiters: ApprovalWaiters;
  },
): Promise<CompletionResult> {
  const signingKey = await opts.keys.active("receipt");
  const approvalKey = await opts.keys.active("approval");
  return db.tx(async (q) => {
    const chain = await getChain(q, opts.orgId, opts.chainId, true);
    if (chain.status === "completed" || chain.status === "failed") {
      throw conflict(ApiErrorCode.CHAIN_COMPLETED, "The chain is already completed", {
        chain_id: chain.id,
        receipt_id: chain.receipt_id,
      });
    }
    const nowMs = Math.max(opts.clock.nowMs(), new Date(chain.started_at).getTime());
    await cancelPendingApprovals(q, {
      chainId: chain.id,
      nowMs,
      key: approvalKey,
      approvalWaiters: opts.approvalWaiters,
    });
    // The receipt commits to the chain's approval records: none may be left unsigned.
    await signUnsignedResolutions(q, chain.id, approvalKey);
    const given = opts.body.failure ?? null;
    // A failure message may quote whatever the agent held: the payload's secret rules apply.
    const failure = given && { mode: redactText(given.mode), message: redactText(given.message) };
    const status = failure ? "failed" : "completed";
    // The per-organization lock: every append of this organization waits here.
    const log = await lockReceiptLog(q, opts.orgId);
    const org = await orgById(q, opts.orgId);
    const { policyVersion } = await opts.configs.get(q, org);
    const sequence = log.sequence + 1;
    const receiptId = randomUUID();
    const { events, eventChain } = await receiptEvents(q, chain.id);
    const approvals = await receiptApprovals(q, chain.id);
    const body: ReceiptBody = {
      receipt_id: receiptId,
      receipt_number: formatReceiptNumber(new Date(nowMs).getUTCFullYear(), sequence),
      chain_id: chain.id,
      organization: org.slug,
      chain_name: chain.name,
      environment: chain.environment,
      metadata: chain.metadata as ReceiptBody["metadata"],
      status,
      failure: failure ? { mode: failure.mode, message: failure.message } : null,
      summary: summarize(chain, events, approvals, status, failure?.mode),
      started_at: new Date(chain.started_at).toISOString(),
      completed_at: new Date(nowMs).toISOString(),
      agents_involved: [...new Set(events.map((e) => e.agent_name))].sort(),
      total_actions: events.length,
      cumulative_metrics: cumulativeMetrics(chain),
      approvals,
      events_summary: events,
      event_chain: eventChain,
      policy_version: policyVersion,
      previous_receipt_hash: log.lastHash,
    };
    const hmac = await opts.hmacKeys.active(q, opts.orgId);
    const signed = signReceipt(body, {
      hmacKey: hmac.key,
      ed25519: { kid: signingKey.kid, privateKey: signingKey.privateKey },
    });
    // The stored text and the receipt hash come from one serialization (receiptHash would redo it).
    const text = canonicalJson(signed);
    const hash = hashOfCanonical(text);
    await appendReceipt(q, {
      id: receiptId,
      org_id: opts.orgId,
      chain_id: chain.id,
      sequence,
      receipt_number: body.receipt_number,
      body: text,
      receipt_hash: hash,
      hmacKid: hmac.kid,
      createdAt: new Date(nowMs),
    });
    await sealChain(q, chain.id, { status, failure, completedAt: new Date(nowMs), receiptId });
    const checkpoint = signCheckpoint(
      {
        organization: org.slug,
        sequence,
        receipt_number: body.receipt_number,
        receipt_hash: hash,
        issued_at: body.completed_at,
      },
      signingKey,
    );
    return {
      chain_id: chain.id,
      status,
      receipt_id: receiptId,
      receipt_number: body.receipt_number,
      checkpoint,
    } satisfies CompletionResult & WireOf<typeof CompleteResponseSchema>;
  });
}

function summarize(
  chain: ChainRow,
  events: ReceiptEvent[],
  approvals: ReceiptApproval[],
  status: string,
  failureMode?: string,
): string {
  const count = (d: string) => events.filter((e) => e.policy_decision === d).length;
  const agents = new Set(events.map((e) => e.agent_name)).size;
  const parts = [
    `Chain "${chain.name}" ${status === "failed" ? `failed (${failureMode})` : "completed"}`,
    `${events.length} action${events.length === 1 ? "" : "s"} by ${agents} agent${agents === 1 ? "" : "s"}`,
    `${count("allow") + count("allow_with_flag")} allowed (${count("allow_with_flag")} flagged), ${count("deny")} denied`,
    `${approvals.length} approval decision${approvals.length === 1 ? "" : "s"}`,
  ];
  return `${parts.join("; ")}.`;
}

/**
 * The chain's events as the receipt summarizes them, each with its event hash, and the
 * commitment to the whole event chain (src/receipts/event-chain.ts).
 */
async function receiptEvents(
  q: Queryable,
  chainId: string,
): Promise<{ events: ReceiptEvent[]; eventChain: EventChainCommitment }> {
  const records: EventRecord[] = (await loadEventRecords(q, [chainId])).get(chainId) ?? [];
  const { hashes, commitment } = hashEventChain(records);
  const events = records.map(
    (r, i): ReceiptEvent => ({
      sequence: r.sequence,
      event_id: r.event_id,
      agent_name: r.agent_name,
      parent_agent_name: r.parent_agent_name,
      action_type: r.action_type,
      action_name: r.action_name,
      policy_decision: r.decision.policy_decision as ReceiptEvent["policy_decision"],
      decision_source: r.decision.decision_source as ReceiptEvent["decision_source"],
      policy_name: (r.decision.policy_name as string | null | undefined) ?? null,
      exception_id: r.exception_id,
      recorded_at: r.recorded_at,
      outcome: r.outcome,
      event_hash: hashes[i]!,
      ...(r.principal && { principal: r.principal }),
    }),
  );
  return { events, eventChain: commitment };
}

async function receiptApprovals(q: Queryable, chainId: string): Promise<ReceiptApproval[]> {
  const rows = await loadReceiptApprovals(q, chainId);
  return rows.map((r) => ({
    approval_id: r.id,
    action_event_id: r.event_id,
    agent_name: r.agent_name,
    action_type: r.action_type,
    action_name: r.action_name,
    decision: r.status,
    decided_by: r.decided_by,
    notes: r.notes,
    decided_at: new Date(r.decided_at).toISOString(),
    exception: r.exception_id
      ? {
          exception_id: r.exception_id,
          duration: r.duration,
          expires_at: new Date(r.exception_expires_at).toISOString(),
        }
      : null,
  }));
}
