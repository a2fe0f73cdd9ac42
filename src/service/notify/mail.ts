/**
 * The approval mail (spec: "Events" 3): chain name and id, the triggering agent and attempted
 * action, the cumulative chain metrics so far, and signed approve and deny links. The same
 * mail goes to fallback approvers at half the timeout (kind approval_escalated). Rendering is
 * pure; loading reads the approval, its event and its chain.
 */

import type { WorkloadIdentity } from "../../policy/schema.js";
import { cumulativeMetrics } from "../chains/views.js";
import { type CumulativeMetricsView, formatDuration, formatTime, metricRows } from "../dashboard/format.js";
import { html } from "../dashboard/html.js";
import type { Queryable } from "../db/pool.js";
import { approvalLinkUrl } from "./links.js";

/**
 * The verified identity behind a request as one line (SPIFFE ID and
 * pod), or a note that the agent's name is only its own claim (an API key or session recorded it).
 */
export const whoIsAsking = (p: WorkloadIdentity | null): string =>
  p
    ? `${p.spiffe_id}${p.pod_name ? ` (pod ${p.namespace}/${p.pod_name})` : ""} — verified`
    : "not verified (API key or session: the agent name is the caller's own label)";

/** Outbox kinds that carry an approval mail. */
export const ApprovalMailKind = {
  approval_requested: "approval_requested",
  approval_escalated: "approval_escalated",
} as const;
export type ApprovalMailKind = (typeof ApprovalMailKind)[keyof typeof ApprovalMailKind];

/** Everything an approval mail shows; times are epoch ms. */
export interface ApprovalMailData {
  kind: ApprovalMailKind;
  recipient: string;
  organization: string;
  approvalId: string;
  status: string;
  chainId: string;
  chainName: string;
  environment: string;
  agentName: string;
  parentAgentName: string | null;
  /** "Who is asking": the verified workload identity of the request; null without one (API key). */
  principal: WorkloadIdentity | null;
  actionType: string;
  actionName: string;
  category: string;
  reason: string;
  policyName: string | null;
  requestedAtMs: number;
  expiresAtMs: number;
  metrics: CumulativeMetricsView;
}

/** A rendered mail. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

/** Loads what the mail about `approvalId` shows; null when the approval no longer exists. */
export async function loadApprovalMailData(
  q: Queryable,
  opts: { approvalId: string; kind: ApprovalMailKind; recipient: string },
): Promise<ApprovalMailData | null> {
  const { rows } = await q.query(
    `SELECT a.status, a.chain_id, a.requested_at, a.expires_at, a.requested_decision, o.slug, c.name, c.environment,
       c.financial_exposure_usd, c.external_communications_count, c.records_modified_count, c.domains_contacted,
       c.estimated_cost_usd, ev.agent_name, ev.parent_agent_name, ev.action_type, ev.action_name, ev.category,
       ev.principal
     FROM approvals a JOIN organizations o ON o.id = a.org_id JOIN chains c ON c.id = a.chain_id
       JOIN chain_events ev ON ev.id = a.event_id
     WHERE a.id = $1`,
    [opts.approvalId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    kind: opts.kind,
    recipient: opts.recipient,
    organization: r.slug,
    approvalId: opts.approvalId,
    status: r.status,
    chainId: r.chain_id,
    chainName: r.name,
    environment: r.environment,
    agentName: r.agent_name,
    parentAgentName: r.parent_agent_name,
    principal: r.principal ?? null,
    actionType: r.action_type,
    actionName: r.action_name,
    category: r.category,
    reason: r.requested_decision?.decision_reason ?? "",
    policyName: r.requested_decision?.policy_name ?? null,
    requestedAtMs: new Date(r.requested_at).getTime(),
    expiresAtMs: new Date(r.expires_at).getTime(),
    metrics: cumulativeMetrics(r as Parameters<typeof cumulativeMetrics>[0]),
  };
}

/**
 * Renders the mail with its approve and deny links. `nowMs` only sets the "time left" text.
 * Text and HTML parts say the same; every value is escaped in the HTML part.
 */
export function renderApprovalMail(
  d: ApprovalMailData,
  opts: { publicUrl: string; linkKey: Buffer; nowMs: number },
): RenderedMail {
  const link = (decision: "approve" | "deny") =>
    approvalLinkUrl(opts.publicUrl, opts.linkKey, {
      approvalId: d.approvalId,
      decision,
      recipient: d.recipient,
      expiresAtSec: Math.floor(d.expiresAtMs / 1000),
    });
  const approveUrl = link("approve");
  const denyUrl = link("deny");
  const dashboardUrl = `${opts.publicUrl.replace(/\/$/, "")}/dashboard/approvals`;
  const escalated = d.kind === "approval_escalated";
  const action = `${d.actionType} ${d.actionName}`;
  const subject = `${escalated ? "[Escalated] " : ""}Approval required: ${d.agentName} → ${d.actionName} in chain ${d.chainName}`;
  const left = formatDuration(Math.max(0, d.expiresAtMs - opts.nowMs));
  const facts: [string, string][] = [
    ["Organization", d.organization],
    ["Chain", `${d.chainName} (${d.chainId})`],
    ["Environment", d.environment],
    ["Agent", d.parentAgentName ? `${d.agentName} (delegated by ${d.parentAgentName})` : d.agentName],
    ["Who is asking", whoIsAsking(d.principal)],
    ["Attempted action", action],
    ["Category", d.category],
    ["Why approval is required", d.reason || "a policy requires approval"],
    ...(d.policyName ? ([["Policy", d.policyName]] as [string, string][]) : []),
    ["Requested", formatTime(d.requestedAtMs)],
    ["Expires", `${formatTime(d.expiresAtMs)} (in ${left})`],
  ];
  const metrics = metricRows(d.metrics);
  const intro = escalated
    ? "No approver has decided this action within half of the approval timeout. You are a fallback approver."
    : "An AI agent is waiting for a human decision before it may continue.";
  const text = [
    intro,
    "",
    ...facts.map(([k, v]) => `${k}: ${v}`),
    "",
    "Cumulative chain metrics so far:",
    ...metrics.map(([k, v]) => `  ${k}: ${v}`),
    "",
    `Approve: ${approveUrl}`,
    `Deny:    ${denyUrl}`,
    "",
    "Each link works once and only after you sign in; you confirm the decision on the approvals page.",
    `All pending approvals: ${dashboardUrl}`,
  ].join("\n");
  const row = ([k, v]: [string, string]) =>
    html`<tr><th style="text-align:left;padding:4px 12px 4px 0;color:#475569;font-weight:600;vertical-align:top">${k}</th><td style="padding:4px 0">${v}</td></tr>`;
  const button = (href: string, label: string, color: string) =>
    html`<a href="${href}" style="display:inline-block;padding:10px 18px;margin:0 8px 8px 0;border-radius:6px;background:${color};color:#ffffff;text-decoration:none;font-weight:600">${label}</a>`;
  const body = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${subject}</title></head>
<body style="font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#0f172a;background:#f8fafc;margin:0;padding:24px">
<div style="max-width:640px;margin:0 auto;background:#ffffff;border:1px solid #e2e8f0;border-radius:8px;padding:24px">
<p style="margin:0 0 4px;color:#475569;font-size:14px">Tollgate${escalated ? " · escalated to fallback approvers" : ""}</p>
<h1 style="font-size:20px;margin:0 0 12px">Approval required: ${d.agentName} → ${d.actionName}</h1>
<p>${intro}</p>
<table style="border-collapse:collapse;font-size:14px;margin:12px 0">${facts.map(row)}</table>
<h2 style="font-size:16px;margin:16px 0 4px">Cumulative chain metrics so far</h2>
<table style="border-collapse:collapse;font-size:14px;margin:0 0 16px">${metrics.map(row)}</table>
<p>${button(approveUrl, "Approve…", "#15803d")}${button(denyUrl, "Deny…", "#b91c1c")}</p>
<p style="font-size:13px;color:#475569">Each link works once and only after you sign in; you confirm the decision on the approvals page. <a href="${dashboardUrl}">All pending approvals</a></p>
</div></body></html>`;
  return { subject, text, html: body.value };
}
