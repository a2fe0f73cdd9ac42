/**
 * Receipt bodies shaped like the ones the service builds at chain completion
 * (src/service/receipts/complete.ts completeChain): events_summary rows with and without
 * outcomes, a few approvals with time-boxed exceptions, chain metadata, cumulative metrics.
 * Only the data is synthetic; the bench signs and hashes it with the real src/receipts code.
 */
import { createHash, randomUUID } from "node:crypto";
import { formatReceiptNumber } from "../../src/receipts/number.js";
import {
  EVENT_CHAIN_FORMAT,
  type ReceiptApproval,
  type ReceiptBody,
  type ReceiptEvent,
} from "../../src/receipts/schema.js";

const START_MS = Date.UTC(2026, 0, 15, 12);
const AGENTS = ["planner", "researcher", "payer", "mailer"];
const ACTIONS = [
  { action_type: "llm_call", action_name: "plan" },
  { action_type: "tool_call", action_name: "read_file" },
  { action_type: "tool_call", action_name: "pay_invoice" },
  { action_type: "tool_call", action_name: "send_email" },
] as const;

/** Event `i` (0-based) of a chain: mostly allowed with an outcome, some flagged, denied or approved. */
function event(i: number): ReceiptEvent {
  const agent = AGENTS[i % AGENTS.length]!;
  const action = ACTIONS[i % ACTIONS.length]!;
  const kind = i % 10;
  const decision = kind === 9 ? "deny" : kind === 7 ? "allow_with_flag" : "allow";
  return {
    sequence: i + 1,
    event_id: randomUUID(),
    agent_name: agent,
    parent_agent_name: agent === "planner" ? null : "planner",
    ...action,
    policy_decision: decision,
    decision_source: kind === 5 ? "human_approval" : "backend_evaluation",
    policy_name: decision === "allow" ? null : "financial-threshold",
    exception_id: null,
    recorded_at: new Date(START_MS + i * 250).toISOString(),
    outcome:
      decision === "deny"
        ? null
        : {
            status: kind === 3 ? "error" : "success",
            error_class: kind === 3 ? "TimeoutError" : null,
            duration_ms: 12 + (i % 50) * 1.5,
            result_sha256: createHash("sha256").update(String(i)).digest("hex"),
          },
    // synthetic, like the rest: the bench measures signing, not the event hash chain
    event_hash: `sha256:${createHash("sha256").update(`event-${i}`).digest("hex")}`,
  };
}

function approval(event: ReceiptEvent, decidedAtMs: number): ReceiptApproval {
  return {
    approval_id: randomUUID(),
    action_event_id: event.event_id,
    agent_name: event.agent_name,
    action_type: event.action_type,
    action_name: event.action_name,
    decision: "approved",
    decided_by: "ana@acme.example",
    notes: "ok for this vendor",
    decided_at: new Date(decidedAtMs).toISOString(),
    exception: {
      exception_id: randomUUID(),
      duration: "1d",
      expires_at: new Date(decidedAtMs + 86_400_000).toISOString(),
    },
  };
}

/**
 * An unsigned receipt body for a completed chain of `events` events, the organization's
 * receipt number `sequence`, linked to `previousHash` (null for the genesis receipt).
 */
export function receiptBody(sequence: number, events: number, previousHash: string | null): ReceiptBody {
  const summary = Array.from({ length: events }, (_, i) => event(i));
  const completedMs = START_MS + events * 250 + 1000;
  const approvals = summary
    .filter((e) => e.decision_source === "human_approval")
    .slice(0, 20)
    .map((e) => approval(e, Date.parse(e.recorded_at) - 100));
  const count = (d: string) => summary.filter((e) => e.policy_decision === d).length;
  return {
    receipt_id: randomUUID(),
    receipt_number: formatReceiptNumber(2026, sequence),
    chain_id: randomUUID(),
    organization: "acme",
    chain_name: "invoice-run",
    environment: "production",
    metadata: { ticket: "OPS-17", team: "finance", retries: 2, tags: ["nightly", "eu"] },
    status: "completed",
    failure: null,
    summary: `Chain "invoice-run" completed; ${events} actions by ${Math.min(events, AGENTS.length)} agents; ${count("allow") + count("allow_with_flag")} allowed (${count("allow_with_flag")} flagged), ${count("deny")} denied; ${approvals.length} approval decisions.`,
    started_at: new Date(START_MS).toISOString(),
    completed_at: new Date(completedMs).toISOString(),
    agents_involved: [...new Set(summary.map((e) => e.agent_name))].sort(),
    total_actions: events,
    cumulative_metrics: {
      financial_exposure_usd: 7250.5,
      external_communications_count: count("allow"),
      records_modified_count: 3,
      external_domains_contacted: ["api.stripe.com", "smtp.acme.example"],
      estimated_cost_usd: 0.0123 * events,
    },
    approvals,
    events_summary: summary,
    event_chain: {
      format: EVENT_CHAIN_FORMAT,
      event_count: events,
      head_hash: summary.at(-1)?.event_hash ?? null,
    },
    policy_version: "cfg-3f2a",
    previous_receipt_hash: previousHash,
  };
}
