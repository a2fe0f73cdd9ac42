/**
 * /dashboard/chains/{chain_id}: the chain's timeline of events with their decisions (and which
 * time-boxed exception authorized which action), the approval decisions, and the receipt with
 * its v2 verification status (receipts/verification.ts), including whether the stored events and
 * approvals still match the receipt: an event or approval that does not is marked where it is
 * shown. A receipt issued before the event hash chain says that its events and approvals are
 * not evaluated (it never committed to them), not that they fail.
 */
import type { ReceiptVerification } from "../../../contract/v1/verification.js";
import type { PolicyDecision } from "../../../policy/schema.js";
import type { ChainApproval } from "../../approvals/store.js";
import type { chainEvents } from "../../chains/store.js";
import type { ChainBody } from "../../chains/views.js";
import type { ChainException } from "../../exceptions/store.js";
import { whoIsAsking } from "../../notify/mail.js";
import { decisionLabels, durationLabels, formatTime, metricRows } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { badge, toneOf } from "../layout.js";

type EventItem = Awaited<ReturnType<typeof chainEvents>>[number];

/** What the receipt section shows. */
export type ReceiptSection =
  | { kind: "none" }
  | {
      kind: "verified";
      receiptNumber: string;
      receiptId: string;
      createdAt: string;
      verification: ReceiptVerification;
    }
  | { kind: "unverified"; receiptNumber: string; receiptId: string; createdAt: string; reason: string }
  | { kind: "missing"; receiptId: string };

/** Sequences of events and ids of approvals that do not match the receipt (empty unless verified). */
function mismatchesOf(r: ReceiptSection): { events: Set<number>; approvals: Set<string> } {
  if (r.kind !== "verified") return { events: new Set(), approvals: new Set() };
  return {
    events: new Set(r.verification.events.mismatched_sequences),
    approvals: new Set(r.verification.approvals.mismatched_approval_ids),
  };
}

const mismatchBadge = () => html` ${badge("Does not match the receipt", "bad")}`;

const durationText = (d: string | null) => (d ? (durationLabels[d as keyof typeof durationLabels] ?? d) : "");

function exceptionNote(e: ChainException | undefined, id: string, chainId: string): SafeHtml {
  if (!e)
    return html`<p class="small">Authorized by time-boxed exception <span class="mono">${id}</span>.</p>`;
  return html`<p class="small">${badge("Exception", "warn")} Authorized by the ${durationText(e.duration)} exception granted by ${e.granted_by}
on ${formatTime(e.created_at)} (scope: ${e.agent_name} · ${e.action_type}${e.destination_domain ? ` · ${e.destination_domain}` : ""}; expires ${formatTime(e.expires_at)})${
    e.chain_id && e.chain_id !== chainId
      ? html` when approving an action in <a href="/dashboard/chains/${e.chain_id}">another chain</a>`
      : html` when approving an earlier action of this chain`
  }. <span class="mono muted">${e.id}</span></p>`;
}

function eventItem(
  ev: EventItem,
  chainId: string,
  approvals: Map<string, ChainApproval>,
  exceptions: Map<string, ChainException>,
  mismatched: boolean,
): SafeHtml {
  const d = ev.decision as PolicyDecision;
  const approval = ev.approval_id ? approvals.get(ev.approval_id) : undefined;
  return html`<li class="d-${d.policy_decision}" id="event-${ev.sequence}"${mismatched ? html` data-evidence="mismatch"` : ""}>
<div class="card-head"><strong>#${ev.sequence} ${ev.agent_name}${ev.parent_agent_name ? html` <span class="muted small">(delegated by ${ev.parent_agent_name})</span>` : ""} → <span class="mono">${ev.action_type}</span> ${ev.action_name}</strong>
<span>${badge(decisionLabels[d.policy_decision] ?? d.policy_decision, toneOf(d.policy_decision))}${d.decision_source === "human_approval" ? html` ${badge("Human decision", "neutral")}` : ""}${mismatched ? mismatchBadge() : ""}</span></div>
<div class="small muted">Who is asking: ${whoIsAsking(ev.principal)}</div>
<div class="small muted">${formatTime(ev.recorded_at)} · category ${ev.category}${d.policy_name ? ` · policy ${d.policy_name}` : ""}${d.evaluation_mode === "shadow" && d.shadow_decision ? ` · shadow: ${d.shadow_decision}` : ""}</div>
${d.decision_reason && html`<p class="small">${d.decision_reason}</p>`}
${ev.exception_id && exceptionNote(exceptions.get(ev.exception_id), ev.exception_id, chainId)}
${
  approval &&
  html`<p class="small">Approval ${badge(approval.status, toneOf(approval.status))}${approval.decided_by ? ` by ${approval.decided_by}` : ""}${approval.decided_at ? ` on ${formatTime(approval.decided_at)}` : ""}${approval.notes ? html` — “${approval.notes}”` : ""}</p>`
}
<details><summary class="small">Payload (sanitized)</summary><pre>${JSON.stringify(ev.payload, null, 2)}</pre></details>
</li>`;
}

/** Issued before events were hash-linked: the receipt commits to neither events nor approvals. */
const PRE_EVENT_CHAIN_NOTE = "not covered: this receipt was issued before events were hash-linked";

function eventsNote(v: ReceiptVerification): string {
  const e = v.events;
  if (v.receipt_format === "pre_event_chain") return PRE_EVENT_CHAIN_NOTE;
  if (e.status === "valid") return `all ${e.event_count} match the receipt's event hash chain`;
  if (e.status === "not_evaluated") return "cannot be checked: the receipt cannot be read";
  const n = e.mismatched_sequences.length;
  if (n === 0) return "do not match the receipt";
  return `event${n === 1 ? "" : "s"} ${e.mismatched_sequences.map((s) => `#${s}`).join(", ")} do${n === 1 ? "es" : ""} not match the receipt`;
}

function approvalsNote(v: ReceiptVerification): string {
  if (v.receipt_format === "pre_event_chain") return PRE_EVENT_CHAIN_NOTE;
  if (v.approvals.status === "valid") return `${v.approvals.approval_count} signed and matching the receipt`;
  if (v.approvals.status === "not_evaluated") return "cannot be checked: the receipt cannot be read";
  return "do not match the receipt or their signatures";
}

function receiptBlock(r: ReceiptSection, chainStatus: string): SafeHtml {
  if (r.kind === "none") {
    return html`<p class="muted">${chainStatus === "completed" || chainStatus === "failed" ? "No receipt was found." : "The receipt is issued when the chain completes."}</p>`;
  }
  if (r.kind === "missing") {
    return html`<div class="notice bad"><p>The receipt of this chain (<span class="mono small">${r.receiptId}</span>) is missing: it was deleted. The events below are not covered by any receipt.</p></div>`;
  }
  const head = html`<dl class="facts"><dt>Receipt number</dt><dd><strong>${r.receiptNumber}</strong></dd>
<dt>Receipt id</dt><dd class="mono small">${r.receiptId}</dd><dt>Issued</dt><dd>${formatTime(r.createdAt)}</dd>`;
  if (r.kind === "unverified") {
    return html`${head}<dt>Verification</dt><dd>${badge("Verification pending", "neutral")} <span class="small muted">${r.reason}</span></dd></dl>`;
  }
  const v = r.verification;
  return html`${head}
<dt>Overall (v2)</dt><dd>${badge(v.overall_status, toneOf(v.overall_status))}</dd>
<dt>Integrity</dt><dd>${badge(v.integrity.status, toneOf(v.integrity.status))}</dd>
<dt>Receipt chain</dt><dd>${badge(v.chain.status, toneOf(v.chain.status))}${v.chain.predecessor_receipt_number ? html` <span class="small muted">after ${v.chain.predecessor_receipt_number}</span>` : ""}</dd>
<dt>Ed25519 signature</dt><dd>${badge(v.signature.status, toneOf(v.signature.status))} <span class="small muted">key ${v.signature.key_status}</span></dd>
<dt>Recorded events</dt><dd>${badge(v.events.status, toneOf(v.events.status))} <span class="small muted">${eventsNote(v)}</span></dd>
<dt>Approval records</dt><dd>${badge(v.approvals.status, toneOf(v.approvals.status))} <span class="small muted">${approvalsNote(v)}</span></dd>
<dt>Verified</dt><dd>${formatTime(v.verified_at)} <span class="small muted">(server-attested)</span></dd>
</dl>
${v.problems.length > 0 && html`<div class="notice bad"><ul>${v.problems.map((p) => html`<li>${p}</li>`)}</ul></div>`}`;
}

/** The page body. */
export function chainBody(opts: {
  chain: ChainBody;
  events: EventItem[];
  approvals: ChainApproval[];
  exceptions: Map<string, ChainException>;
  receipt: ReceiptSection;
}): SafeHtml {
  const { chain, events, approvals, exceptions } = opts;
  const byId = new Map(approvals.map((a) => [a.approval_id, a]));
  const mismatched = mismatchesOf(opts.receipt);
  const meta = Object.entries(chain.metadata ?? {});
  return html`<p class="small"><a href="/dashboard/approvals">← Approvals</a></p>
<h1>Chain ${chain.name}</h1>
<div class="grid">
<section class="card" aria-labelledby="h-chain">
<h2 id="h-chain" class="small muted">Chain</h2>
<dl class="facts">
<dt>Status</dt><dd>${badge(chain.status, toneOf(chain.status))}${chain.failure ? html` <span class="small">${chain.failure.mode}: ${chain.failure.message}</span>` : ""}</dd>
<dt>Chain id</dt><dd class="mono small">${chain.chain_id}</dd>
<dt>Environment</dt><dd>${chain.environment}</dd>
<dt>Started</dt><dd>${formatTime(chain.started_at)}</dd>
<dt>Completed</dt><dd>${chain.completed_at ? formatTime(chain.completed_at) : "—"}</dd>
<dt>Actions</dt><dd>${chain.total_actions}</dd>
${meta.map(([k, v]) => html`<dt>${k}</dt><dd class="small">${typeof v === "string" ? v : JSON.stringify(v)}</dd>`)}
</dl>
</section>
<section class="card" aria-labelledby="h-metrics">
<h2 id="h-metrics" class="small muted">Cumulative metrics</h2>
<dl class="facts">${metricRows(chain.cumulative_metrics).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
</section>
</div>
<h2>Timeline</h2>
${events.length === 0 ? html`<p class="muted">No actions recorded yet.</p>` : html`<section class="card"><ol class="timeline">${events.map((e) => eventItem(e, chain.chain_id, byId, exceptions, mismatched.events.has(e.sequence)))}</ol></section>`}
<h2>Approval decisions</h2>
${
  approvals.length === 0
    ? html`<p class="muted">No action of this chain required approval.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">By</th><th scope="col">Decided</th><th scope="col">Notes</th><th scope="col">Exception granted</th></tr></thead>
<tbody>${approvals.map((a) => {
        const seq = events.find((e) => e.event_id === a.event_id)?.sequence;
        return html`<tr><td>${seq ? html`<a href="#event-${seq}">#${seq}</a>` : "—"}</td><td>${badge(a.status, toneOf(a.status))}${mismatched.approvals.has(a.approval_id) ? mismatchBadge() : ""}</td>
<td>${a.decided_by ?? "—"}</td><td>${a.decided_at ? formatTime(a.decided_at) : html`<span class="muted">expires ${formatTime(a.expires_at)}</span>`}</td>
<td>${a.notes ?? ""}</td><td>${a.exception_id ? `${durationText(a.duration)} until ${formatTime(a.exception_expires_at!)}` : "—"}</td></tr>`;
      })}</tbody></table></div>`
}
<h2>Receipt</h2>
<section class="card">${receiptBlock(opts.receipt, chain.status)}</section>`;
}
