/**
 * /dashboard/approvals (spec: dashboard pages; "States and transitions" pending_approval):
 * pending approvals of the organization, newest first, each with the chain, the agent and
 * attempted action, the sanitized payload, the cumulative chain metrics and the time left, and
 * for approvers and admins the decision form (approve or deny with notes, optionally granting a
 * time-boxed exception of 1 hour, 1 day, 1 week or 1 month). Below: recent decisions.
 */
import type { listApprovals } from "../../approvals/views.js";
import { whoIsAsking } from "../../notify/mail.js";
import { durationLabels, formatTime, metricRows, timeLeft } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { badge, csrfField, toneOf, type Viewer } from "../layout.js";

/** One approval as listApprovals returns it. */
export type ApprovalItem = Awaited<ReturnType<typeof listApprovals>>[number];

/** A decision pre-selected by a followed e-mail link. */
export interface Preselect {
  approvalId: string;
  decision: "approve" | "deny";
  fromLink: boolean;
}

const statusLabel: Record<string, string> = {
  approved: "Approved",
  denied: "Denied",
  timed_out: "Timed out",
  cancelled: "Cancelled",
  pending: "Pending",
};

function decideForm(a: ApprovalItem, viewer: Viewer, pre: Preselect | null): SafeHtml {
  const id = a.approval_id;
  const chosen = pre?.approvalId === id ? pre.decision : null;
  return html`<form class="decide" method="post" action="/dashboard/approvals/${id}/decision">
${csrfField(viewer.csrf)}
<fieldset>
<legend>Your decision</legend>
<div class="choices">
<label class="choice"><input type="radio" name="decision" value="approve" required${chosen === "approve" ? html` checked` : ""}> Approve</label>
<label class="choice"><input type="radio" name="decision" value="deny"${chosen === "deny" ? html` checked` : ""}> Deny</label>
</div>
</fieldset>
<label class="field" for="notes-${id}">Notes <span class="muted small">(optional; a denial's notes are returned to the agent as the condition)</span></label>
<textarea id="notes-${id}" name="notes" maxlength="2000"></textarea>
<div class="inline">
<label><input type="checkbox" name="exception" value="on" id="exc-${id}"> Grant time-boxed exception</label>
<label class="muted" for="dur-${id}">for</label>
<select id="dur-${id}" name="exception_duration" aria-label="Exception duration">
${Object.entries(durationLabels).map(([v, label]) => html`<option value="${v}"${v === "1d" ? html` selected` : ""}>${label}</option>`)}
</select>
</div>
<p class="hint">An exception applies only when approving: later actions by ${a.agent_name} of type ${a.action_type} to the same destination are allowed with a flag until it expires.</p>
<div class="actions"><button class="primary" type="submit">Submit decision</button></div>
</form>`;
}

function pendingCard(a: ApprovalItem, viewer: Viewer, nowMs: number, pre: Preselect | null): SafeHtml {
  const expired = new Date(a.expires_at).getTime() <= nowMs;
  const focused = pre?.approvalId === a.approval_id;
  return html`<article class="card${focused ? " highlight" : ""}" id="approval-${a.approval_id}" aria-labelledby="h-${a.approval_id}">
${
  focused &&
  pre?.fromLink &&
  html`<div class="notice info" role="status">You followed the <strong>${pre.decision}</strong> link from your e-mail. Review the action below, then confirm with <strong>Submit decision</strong>.</div>`
}
<div class="card-head">
<h3 id="h-${a.approval_id}">${a.agent_name} → ${a.action_name}</h3>
<span>${expired ? badge("Expired", "bad") : badge(`${timeLeft(a.expires_at, nowMs)} left`, "warn")}${a.escalated_at ? html` ${badge("Escalated", "bad")}` : ""}</span>
</div>
<div class="grid">
<dl class="facts">
<dt>Chain</dt><dd><a href="/dashboard/chains/${a.chain_id}">${a.chain_name}</a><br><span class="mono small muted">${a.chain_id}</span></dd>
<dt>Agent</dt><dd>${a.agent_name}</dd>
<dt>Who is asking</dt><dd>${whoIsAsking(a.principal)}</dd>
<dt>Action</dt><dd><span class="mono">${a.action_type}</span> · <strong>${a.action_name}</strong></dd>
<dt>Why</dt><dd>${a.decision.decision_reason || "A policy requires approval."}${a.decision.policy_name ? html` <span class="muted small">(${a.decision.policy_name})</span>` : ""}</dd>
<dt>Requested</dt><dd>${formatTime(a.requested_at)}</dd>
<dt>Expires</dt><dd>${formatTime(a.expires_at)}</dd>
</dl>
<div>
<h4 class="small muted">Cumulative chain metrics so far</h4>
<dl class="facts">${metricRows(a.cumulative_metrics).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
</div>
</div>
<details${focused ? html` open` : ""}><summary>Payload (sanitized)</summary><pre>${JSON.stringify(a.payload, null, 2)}</pre></details>
${
  viewer.canDecide && !expired
    ? decideForm(a, viewer, pre)
    : html`<p class="hint">${expired ? "This approval expired and will be marked timed out." : "Only approvers and admins can decide. You can review the action."}</p>`
}
</article>`;
}

/** The page body. */
export function approvalsBody(opts: {
  viewer: Viewer;
  pending: ApprovalItem[];
  recent: ApprovalItem[];
  nowMs: number;
  preselect: Preselect | null;
}): SafeHtml {
  const { viewer, pending, recent, nowMs, preselect } = opts;
  return html`<h1>Pending approvals</h1>
<p class="lead">${pending.length === 0 ? "Nothing is waiting for a decision." : `${pending.length} action${pending.length === 1 ? " is" : "s are"} waiting for a human decision, newest first.`}</p>
${pending.map((a) => pendingCard(a, viewer, nowMs, preselect))}
<h2>Recent decisions</h2>
${
  recent.length === 0
    ? html`<p class="muted">No decisions yet.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th scope="col">Decided</th><th scope="col">Chain</th><th scope="col">Agent → action</th><th scope="col">Result</th><th scope="col">By</th><th scope="col">Notes</th><th scope="col">Exception</th></tr></thead>
<tbody>${recent.map(
        (a) => html`<tr>
<td>${a.decided_at ? formatTime(a.decided_at) : "—"}</td>
<td><a href="/dashboard/chains/${a.chain_id}">${a.chain_name}</a></td>
<td>${a.agent_name} → ${a.action_name}</td>
<td>${badge(statusLabel[a.status] ?? a.status, toneOf(a.status))}</td>
<td>${a.decided_by ?? "—"}</td>
<td>${a.notes ?? ""}</td>
<td>${a.exception ? `${durationLabels[a.exception.duration as keyof typeof durationLabels] ?? a.exception.duration}, until ${formatTime(a.exception.expires_at)}` : "—"}</td>
</tr>`,
      )}</tbody></table></div>`
}`;
}
