/**
 * /dashboard/settings/team: who receives approval mails and may decide. Approver teams with
 * their approvers and fallback approvers (read-only with a note when an ApproverTeam resource
 * manages them, i.e. managed_by is set), and the organization's members with their roles.
 * Admins may edit unmanaged teams and members here.
 */

import type { MemberRow } from "../../orgs/orgs.js";
import { html, type SafeHtml } from "../html.js";
import { badge, csrfField, type Viewer } from "../layout.js";

/** An approver team as stored. */
export interface TeamRow {
  name: string;
  approvers: { email: string; role?: string; name?: string }[];
  fallback_approvers: string[];
  managed_by: string | null;
}

/** Text of a team's approvers for the edit form: one `email [admin]` per line. */
export const approversText = (t: TeamRow) =>
  t.approvers.map((a) => `${a.email}${a.role === "admin" ? " admin" : ""}`).join("\n");

function teamCard(t: TeamRow, viewer: Viewer): SafeHtml {
  const editable = viewer.isAdmin && !t.managed_by;
  return html`<section class="card" aria-labelledby="team-${t.name}">
<div class="card-head"><h3 id="team-${t.name}">Team ${t.name}</h3>${t.managed_by ? badge("Managed by ApproverTeam", "info") : ""}</div>
${
  t.managed_by &&
  html`<p class="notice info small">Read-only: this team is managed by the ApproverTeam resource <strong class="mono">${t.managed_by}</strong>. Change it with <span class="mono">kubectl</span>; edits here would be overwritten.</p>`
}
<div class="grid">
<div><h4>Approvers</h4>${
    t.approvers.length
      ? html`<ul>${t.approvers.map((a) => html`<li>${a.name ? `${a.name} — ` : ""}${a.email}${a.role === "admin" ? html` ${badge("admin", "neutral")}` : ""}</li>`)}</ul>`
      : html`<p class="muted">None</p>`
  }</div>
<div><h4>Fallback approvers</h4><p class="small muted">Mailed at half the approval timeout when nobody has decided.</p>${
    t.fallback_approvers.length
      ? html`<ul>${t.fallback_approvers.map((f) => html`<li>${f}</li>`)}</ul>`
      : html`<p class="muted">None</p>`
  }</div>
</div>
${
  editable &&
  html`<details><summary>Edit team ${t.name}</summary>${teamForm(viewer, t.name, approversText(t), t.fallback_approvers.join("\n"))}</details>`
}
</section>`;
}

function teamForm(viewer: Viewer, name: string | null, approvers: string, fallback: string): SafeHtml {
  return html`<form method="post" action="/dashboard/settings/team/teams">${csrfField(viewer.csrf)}
${
  name
    ? html`<input type="hidden" name="name" value="${name}">`
    : html`<label class="field" for="team-name">Team name</label><input type="text" id="team-name" name="name" required maxlength="253" placeholder="finance-approvers">`
}
<label class="field" for="ap-${name ?? "new"}">Approvers</label>
<textarea id="ap-${name ?? "new"}" name="approvers" placeholder="alice@example.com&#10;bob@example.com admin">${approvers}</textarea>
<p class="hint">One e-mail address per line; add <span class="mono">admin</span> after the address to make the approver an admin.</p>
<label class="field" for="fb-${name ?? "new"}">Fallback approvers</label>
<textarea id="fb-${name ?? "new"}" name="fallback_approvers">${fallback}</textarea>
<div class="actions"><button class="primary" type="submit">Save team</button></div>
</form>`;
}

/** The page body. */
export function teamBody(opts: {
  viewer: Viewer;
  teams: TeamRow[];
  members: MemberRow[];
  timeoutHours: number;
}): SafeHtml {
  const { viewer, teams, members } = opts;
  return html`<h1>Team and approvers</h1>
<p class="lead">Approvers receive an e-mail for every action that requires approval; fallback approvers receive it after ${opts.timeoutHours / 2} hours (half of the ${opts.timeoutHours}-hour approval timeout) without a decision. Both may decide until the approval expires.</p>
<h2>Approver teams</h2>
${teams.length === 0 ? html`<p class="muted">No approver team yet. Members with the approver role still receive approval mails.</p>` : teams.map((t) => teamCard(t, viewer))}
${viewer.isAdmin && html`<details class="card"><summary>Add an approver team</summary>${teamForm(viewer, null, "", "")}</details>`}
<h2>Members</h2>
<p class="hint">Roles: <strong>member</strong> views, <strong>approver</strong> decides and receives approval mails, <strong>admin</strong> manages keys, tokens, the kill switch and this page.</p>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Member</th><th scope="col">Roles</th></tr></thead>
<tbody>${
    members.length === 0
      ? html`<tr><td colspan="2" class="muted">No members.</td></tr>`
      : members.map(
          (
            m,
          ) => html`<tr><td>${m.display_name ? html`${m.display_name}<br>` : ""}<span class="small">${m.email}</span></td>
<td>${m.roles.map((r) => html`${badge(r, r === "admin" ? "info" : r === "approver" ? "ok" : "neutral")} `)}</td></tr>`,
        )
  }</tbody></table></div>
${
  viewer.isAdmin &&
  html`<details class="card"><summary>Add or change a member</summary>
<form method="post" action="/dashboard/settings/team/members">${csrfField(viewer.csrf)}
<label class="field" for="m-email">E-mail address</label><input type="email" id="m-email" name="email" required autocomplete="off">
<label class="field" for="m-name">Display name <span class="muted small">(optional)</span></label><input type="text" id="m-name" name="display_name" maxlength="200">
<fieldset><legend>Roles</legend><div class="choices">
<label class="choice"><input type="checkbox" name="roles" value="member" checked> member</label>
<label class="choice"><input type="checkbox" name="roles" value="approver"> approver</label>
<label class="choice"><input type="checkbox" name="roles" value="admin"> admin</label>
</div></fieldset>
<div class="actions"><button class="primary" type="submit">Save member</button></div>
</form></details>`
}`;
}
