/**
 * The final decision of an approval (src/service/approvals/final-decision.ts), one case per way a
 * pending approval ends, against the spec's pending_approval rows: a reviewer's decision carries
 * decision_source human_approval, everything else (timeout, withdrawal, completion) is a backend
 * deny; the requested decision's other fields survive.
 */
import { describe, expect, it } from "vitest";
import type { PolicyDecision } from "../../../src/policy/schema.js";
import { PolicyDecisionSchema } from "../../../src/policy/schema.js";
import { type ApprovalOutcome, finalDecision } from "../../../src/service/approvals/final-decision.js";

const requested: PolicyDecision = {
  policy_decision: "require_approval",
  decision_reason: "Payments above 500 USD need a human",
  decision_source: "backend_evaluation",
  policy_name: "large-payments",
  kill_switch_active: false,
  pause_reason: null,
  remediation: "Ask finance",
  docs_url: null,
  evaluation_mode: "enforce",
  shadow_decision: null,
  estimated_cost_usd: 0.02,
  auto_paused: false,
};

describe("finalDecision", () => {
  it.each<
    [string, ApprovalOutcome, Omit<ReturnType<typeof finalDecision>, "decision"> & Partial<PolicyDecision>]
  >([
    [
      "reviewer approves with notes",
      { kind: "approved", decidedBy: "ana@example.com", notes: "ok for Q3" },
      {
        status: "approved",
        decidedBy: "ana@example.com",
        notes: "ok for Q3",
        policy_decision: "allow",
        decision_source: "human_approval",
        decision_reason: "Approved by ana@example.com: ok for Q3",
      },
    ],
    [
      // Approving with a time-boxed exception decides the same: the exception is granted beside it.
      "reviewer approves without notes",
      { kind: "approved", decidedBy: "ana@example.com", notes: null },
      {
        status: "approved",
        decidedBy: "ana@example.com",
        notes: null,
        policy_decision: "allow",
        decision_source: "human_approval",
        decision_reason: "Approved by ana@example.com",
      },
    ],
    [
      "reviewer denies with notes",
      { kind: "denied", decidedBy: "bo@example.com", notes: "wrong vendor" },
      {
        status: "denied",
        decidedBy: "bo@example.com",
        notes: "wrong vendor",
        policy_decision: "deny",
        decision_source: "human_approval",
        decision_reason: "wrong vendor",
      },
    ],
    [
      "reviewer denies without notes",
      { kind: "denied", decidedBy: "bo@example.com", notes: null },
      {
        status: "denied",
        decidedBy: "bo@example.com",
        notes: null,
        policy_decision: "deny",
        decision_source: "human_approval",
        decision_reason: "Denied by reviewer",
      },
    ],
    [
      "the approval times out",
      { kind: "timed_out", condition: "Approval not resolved within 24 hours" },
      {
        status: "timed_out",
        decidedBy: null,
        notes: null,
        policy_decision: "deny",
        decision_source: "backend_evaluation",
        decision_reason: "Approval not resolved within 24 hours",
      },
    ],
    [
      "the caller withdraws with a reason",
      { kind: "withdrawn", withdrawnBy: "sidecar", reason: "task cancelled" },
      {
        status: "cancelled",
        decidedBy: "sidecar",
        notes: "task cancelled",
        policy_decision: "deny",
        decision_source: "backend_evaluation",
        decision_reason: "Withdrawn by the caller: task cancelled",
      },
    ],
    [
      "the caller withdraws without a reason",
      { kind: "withdrawn", withdrawnBy: "sidecar", reason: null },
      {
        status: "cancelled",
        decidedBy: "sidecar",
        notes: null,
        policy_decision: "deny",
        decision_source: "backend_evaluation",
        decision_reason: "Withdrawn by the caller",
      },
    ],
    [
      "the chain is completed while pending",
      { kind: "chain_completed" },
      {
        status: "cancelled",
        decidedBy: null,
        notes: null,
        policy_decision: "deny",
        decision_source: "backend_evaluation",
        decision_reason: "Chain completed before a decision",
      },
    ],
  ])("%s", (_, outcome, want) => {
    const { status, decidedBy, notes, ...decision } = want;
    const f = finalDecision(requested, outcome);
    expect({ status: f.status, decidedBy: f.decidedBy, notes: f.notes }).toEqual({
      status,
      decidedBy,
      notes,
    });
    expect(f.decision).toEqual({ ...requested, ...decision });
    // What is written to the event is a PolicyDecision of the spec, every field set.
    expect(PolicyDecisionSchema.strict().parse(f.decision)).toEqual(f.decision);
  });

  it("only a reviewer's decision is a human decision", () => {
    const outcomes: ApprovalOutcome[] = [
      { kind: "approved", decidedBy: "a", notes: null },
      { kind: "denied", decidedBy: "a", notes: null },
      { kind: "timed_out", condition: "Approval not resolved within 1 hour" },
      { kind: "withdrawn", withdrawnBy: "a", reason: null },
      { kind: "chain_completed" },
    ];
    const human = outcomes.filter(
      (o) => finalDecision(requested, o).decision.decision_source === "human_approval",
    );
    expect(human.map((o) => o.kind)).toEqual(["approved", "denied"]);
  });

  it("does not change the requested decision", () => {
    const before = structuredClone(requested);
    finalDecision(requested, { kind: "approved", decidedBy: "a", notes: null });
    expect(requested).toEqual(before);
  });
});
