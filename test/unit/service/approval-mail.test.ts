/**
 * The approval mail says who is asking (issue 27): the verified workload identity, or that the
 * agent name is only the caller's label when an API key recorded the action.
 */
import { describe, expect, it } from "vitest";
import { type ApprovalMailData, renderApprovalMail, whoIsAsking } from "../../../src/service/notify/mail.js";

const base: ApprovalMailData = {
  kind: "approval_requested",
  recipient: "approver@acme.example",
  organization: "acme",
  approvalId: "6f1c2a9e-1b7e-4c1f-9a44-0e5d2f3b7c10",
  status: "pending",
  chainId: "0b6a8f3e-2c4d-4e5f-8a9b-1c2d3e4f5a6b",
  chainName: "pay-run",
  environment: "production",
  agentName: "cfo-agent",
  parentAgentName: null,
  principal: null,
  actionType: "tool_call",
  actionName: "pay_invoice",
  category: "financial",
  reason: "Single transaction above 5000 USD",
  policyName: "financial_threshold",
  requestedAtMs: Date.UTC(2026, 0, 15, 12),
  expiresAtMs: Date.UTC(2026, 0, 16, 12),
  metrics: {
    financial_exposure_usd: 0,
    external_communications_count: 0,
    records_modified_count: 0,
    external_domains_contacted: [],
    estimated_cost_usd: 0,
  },
};
const opts = {
  publicUrl: "https://tollgate.example",
  linkKey: Buffer.alloc(32, 7),
  nowMs: Date.UTC(2026, 0, 15, 13),
};

describe("approval mail: who is asking", () => {
  it("names the verified workload identity and its pod, in text and HTML", () => {
    const principal = {
      namespace: "acme-agents",
      service_account: "invoice-agent",
      pod_name: "invoice-agent-7d9f",
      pod_uid: "uid-1",
      spiffe_id: "spiffe://cluster.local/ns/acme-agents/sa/invoice-agent",
    };
    const mail = renderApprovalMail({ ...base, principal }, opts);
    const line =
      "Who is asking: spiffe://cluster.local/ns/acme-agents/sa/invoice-agent (pod acme-agents/invoice-agent-7d9f) — verified";
    expect(mail.text).toContain(line);
    expect(mail.html).toContain("spiffe://cluster.local/ns/acme-agents/sa/invoice-agent");
    expect(mail.text).toContain("Agent: cfo-agent");
  });

  it("says the identity is not verified when an API key recorded the action", () => {
    expect(renderApprovalMail(base, opts).text).toContain(`Who is asking: ${whoIsAsking(null)}`);
    expect(whoIsAsking(null)).toMatch(/^not verified/);
  });
});
