/**
 * The page frame of the dashboard: header with organization, navigation and sign-out, the
 * development-only banner, notices, and the main landmark. Pure: returns the HTML document.
 */
import type { UserRole } from "../auth.js";
import { html, type SafeHtml } from "./html.js";

/** The signed-in person looking at a page. */
export interface Viewer {
  email: string;
  orgId: string;
  orgSlug: string;
  orgName: string | null;
  roles: UserRole[];
  sessionId: string;
  /** CSRF token for this session's forms. */
  csrf: string;
  /** Approvers and admins decide approvals. */
  canDecide: boolean;
  isAdmin: boolean;
}

/** Navigation entries; admin entries only show for admins. */
export const NavKey = {
  approvals: "approvals",
  team: "team",
  apiKeys: "api-keys",
  tokens: "tokens",
  organization: "organization",
} as const;
export type NavKey = (typeof NavKey)[keyof typeof NavKey];

const nav: { key: NavKey; href: string; label: string; admin: boolean }[] = [
  { key: "approvals", href: "/dashboard/approvals", label: "Approvals", admin: false },
  { key: "team", href: "/dashboard/settings/team", label: "Team", admin: false },
  { key: "api-keys", href: "/dashboard/admin/api-keys", label: "API keys", admin: true },
  { key: "tokens", href: "/dashboard/admin/verification-tokens", label: "Verification tokens", admin: true },
  { key: "organization", href: "/dashboard/admin/organization", label: "Kill switch & pause", admin: true },
];

/** A message shown above the page content. */
export interface Notice {
  kind: "ok" | "bad" | "info" | "warn";
  text: SafeHtml | string;
}

/** Hidden CSRF field for a form of `viewer`. */
export const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}">`;

/** Renders a complete page. */
export function page(opts: {
  title: string;
  viewer: Viewer | null;
  active?: NavKey;
  body: SafeHtml;
  notices?: Notice[];
  devOidc: boolean;
}): string {
  const v = opts.viewer;
  const items = v ? nav.filter((n) => !n.admin || v.isAdmin) : [];
  const doc = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${opts.title} · Tollgate</title>
<link rel="stylesheet" href="/dashboard/static/tollgate.css">
<script src="/dashboard/static/tollgate.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${opts.devOidc && html`<div class="devbar" role="note">DEVELOPMENT ONLY — signed in through the embedded development identity provider; do not use in production</div>`}
<header class="top"><div class="inner">
<a class="brand" href="/dashboard/approvals">Tollgate${v && html`<small>${v.orgName ?? v.orgSlug}</small>`}</a>
${
  items.length > 0 &&
  html`<nav class="main" aria-label="Main"><ul>${items.map(
    (n) =>
      html`<li><a href="${n.href}"${opts.active === n.key ? html` aria-current="page"` : ""}>${n.label}</a></li>`,
  )}</ul></nav>`
}
${
  v &&
  html`<div class="who"><span>${v.email} <span class="roles">(${v.roles.join(", ")})</span></span>
<form method="post" action="/auth/logout">${csrfField(v.csrf)}<button class="btn-link-light" type="submit">Sign out</button></form></div>`
}
</div></header>
<main id="main">
${(opts.notices ?? []).map((n) => html`<div class="notice ${n.kind}" role="${n.kind === "bad" ? "alert" : "status"}">${n.text}</div>`)}
${opts.body}
</main>
</body>
</html>`;
  return doc.value;
}

/** A badge with a tone. */
export const badge = (text: string, tone: "ok" | "warn" | "bad" | "info" | "neutral") =>
  html`<span class="badge b-${tone}">${text}</span>`;

/** Tone of a policy outcome or approval status. */
export function toneOf(value: string): "ok" | "warn" | "bad" | "info" | "neutral" {
  if (
    value === "allow" ||
    value === "approved" ||
    value === "valid" ||
    value === "active" ||
    value === "genesis"
  )
    return "ok";
  if (value === "allow_with_flag" || value === "pending" || value === "not_evaluated") return "warn";
  if (
    value === "deny" ||
    value === "denied" ||
    value === "invalid" ||
    value === "timed_out" ||
    value === "broken" ||
    value === "revoked"
  )
    return "bad";
  if (value === "require_approval" || value === "pending_approval") return "info";
  return "neutral";
}
