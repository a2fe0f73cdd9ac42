/**
 * Admin pages: API keys (spec: "Authentication" 1 — created in the dashboard, shown once),
 * public verification tokens (spec: "Public verification token" — issue, copy once, list,
 * revoke), and the organization kill switch and pause.
 */

import type { TokenRecord } from "../../../contract/v1/verification.js";
import type { ReceiptChoice } from "../../receipts/store.js";
import { formatTime } from "../format.js";
import { html, type SafeHtml } from "../html.js";
import { badge, csrfField, toneOf, type Viewer } from "../layout.js";

/** An API key as listed (never the key). */
export interface ApiKeyRow {
  key_id: string;
  name: string;
  role: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/** A secret shown exactly once, with a copy button. */
function secretOnce(label: string, value: string, id: string): SafeHtml {
  return html`<div class="notice warn" role="status">
<p><strong>${label}</strong> — copy it now. It is shown only once and cannot be recovered; if you lose it, revoke it and create a new one.</p>
<div class="secret"><label class="sr" for="${id}">${label}</label><input type="text" id="${id}" readonly value="${value}" data-copy aria-label="${label}"></div>
</div>`;
}

/** /dashboard/admin/api-keys body; `created` is the key just created (shown once). */
export function apiKeysBody(opts: {
  viewer: Viewer;
  keys: ApiKeyRow[];
  created?: { name: string; apiKey: string };
}): SafeHtml {
  const { viewer, keys, created } = opts;
  return html`<h1>API keys</h1>
<p class="lead">Agents and sidecars call Tollgate with an API key of role <strong>client</strong>; role <strong>admin</strong> also manages the organization through the API. Keep keys in a secrets store.</p>
${created && secretOnce(`API key “${created.name}”`, created.apiKey, "new-api-key")}
<section class="card"><h2 class="small muted">Create a key</h2>
<form method="post" action="/dashboard/admin/api-keys">${csrfField(viewer.csrf)}
<label class="field" for="k-name">Name</label><input type="text" id="k-name" name="name" required maxlength="200" placeholder="payments-agent">
<label class="field" for="k-role">Role</label><select id="k-role" name="role"><option value="client" selected>client</option><option value="admin">admin</option></select>
<div class="actions"><button class="primary" type="submit">Create key</button></div>
</form></section>
<h2>Keys</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${
    keys.length === 0
      ? html`<tr><td colspan="6" class="muted">No keys.</td></tr>`
      : keys.map(
          (
            k,
          ) => html`<tr><td>${k.name}</td><td>${k.role}</td><td class="mono">${k.prefix}…</td><td>${formatTime(k.created_at)}</td>
<td>${k.revoked_at ? badge(`revoked ${formatTime(k.revoked_at)}`, "bad") : badge("active", "ok")}</td>
<td>${
            !k.revoked_at &&
            html`<form method="post" action="/dashboard/admin/api-keys/${k.key_id}/revoke">${csrfField(viewer.csrf)}<button class="danger" type="submit" aria-label="Revoke key ${k.name}">Revoke</button></form>`
          }</td></tr>`,
        )
  }</tbody></table></div>`;
}

/** /dashboard/admin/verification-tokens body; `issued` is the token just issued (shown once). */
export function tokensBody(opts: {
  viewer: Viewer;
  tokens: TokenRecord[];
  receipts: ReceiptChoice[];
  issued?: { token: string; publicUrl: string; artifact: string };
}): SafeHtml {
  const { viewer, tokens, receipts, issued } = opts;
  return html`<h1>Public verification tokens</h1>
<p class="lead">A token lets someone outside your organization verify one receipt or approval at <span class="mono">/public/v2/verify/…</span>. They see a minimized result only. Share the link with intended recipients; revoke it to end access.</p>
${issued && secretOnce(`Public verification link for ${issued.artifact}`, issued.publicUrl, "new-token")}
<section class="card"><h2 class="small muted">Issue a token</h2>
<form method="post" action="/dashboard/admin/verification-tokens">${csrfField(viewer.csrf)}
<label class="field" for="t-type">Artifact type</label>
<select id="t-type" name="artifact_type"><option value="receipt" selected>receipt</option><option value="approval">approval</option></select>
<label class="field" for="t-id">Artifact id</label>
<input type="text" id="t-id" name="artifact_id" required list="recent-receipts" placeholder="receipt or approval id (UUID)" autocomplete="off">
<datalist id="recent-receipts">${receipts.map((r) => html`<option value="${r.id}">${r.receipt_number}</option>`)}</datalist>
<p class="hint">Receipt and approval ids are shown on each chain's page.</p>
<div class="actions"><button class="primary" type="submit">Issue token</button></div>
</form></section>
<h2>Tokens</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Artifact</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${
    tokens.length === 0
      ? html`<tr><td colspan="5" class="muted">No tokens.</td></tr>`
      : tokens.map(
          (t) => html`<tr><td>${t.artifact_type}<br><span class="mono small">${t.artifact_id}</span></td>
<td>${badge(t.status, toneOf(t.status))}</td><td>${formatTime(t.created_at)}<br><span class="small muted">by ${t.created_by}</span></td>
<td>${t.last_used_at ? formatTime(t.last_used_at) : "never"}</td>
<td>${
            t.status === "active" &&
            html`<form method="post" action="/dashboard/admin/verification-tokens/${t.token_id}/revoke">${csrfField(viewer.csrf)}<button class="danger" type="submit">Revoke</button></form>`
          }</td></tr>`,
        )
  }</tbody></table></div>`;
}

/** One toggle (kill switch or pause) with its form. */
function toggleCard(
  viewer: Viewer,
  which: "kill-switch" | "pause",
  state: { active: boolean; reason: string | null },
): SafeHtml {
  const title = which === "kill-switch" ? "Kill switch" : "Pause";
  const explain =
    which === "kill-switch"
      ? "While active, every action of every agent of the organization is denied."
      : "While paused, actions are denied with the pause reason until you resume.";
  return html`<section class="card" aria-labelledby="h-${which}">
<div class="card-head"><h2 id="h-${which}">${title}</h2>${state.active ? badge("active", "bad") : badge("off", "ok")}</div>
<p>${explain}</p>
${state.active && state.reason && html`<p>Reason: <strong>${state.reason}</strong></p>`}
<form method="post" action="/dashboard/admin/organization/${which}">${csrfField(viewer.csrf)}
<input type="hidden" name="active" value="${state.active ? "false" : "true"}">
${
  !state.active &&
  html`<label class="field" for="r-${which}">Reason</label><input type="text" id="r-${which}" name="reason" maxlength="1000" placeholder="Incident INC-1234">`
}
<div class="actions"><button class="${state.active ? "primary" : "danger"}" type="submit">${
    state.active
      ? which === "kill-switch"
        ? "Deactivate kill switch"
        : "Resume"
      : which === "kill-switch"
        ? "Activate kill switch"
        : "Pause organization"
  }</button></div>
</form></section>`;
}

/** /dashboard/admin/organization body. */
export function organizationBody(opts: {
  viewer: Viewer;
  killSwitch: { active: boolean; reason: string | null };
  pause: { active: boolean; reason: string | null };
  managedBy: string | null;
}): SafeHtml {
  return html`<h1>Kill switch and pause</h1>
${
  opts.managedBy &&
  html`<p class="notice warn">This organization is managed by the Organization resource <strong class="mono">${opts.managedBy}</strong>. A change made here is overwritten when the operator next reconciles it; for a lasting change, edit the resource.</p>`
}
<div class="grid">${toggleCard(opts.viewer, "kill-switch", opts.killSwitch)}${toggleCard(opts.viewer, "pause", opts.pause)}</div>`;
}
