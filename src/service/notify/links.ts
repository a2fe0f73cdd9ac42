/**
 * Signed one-click approval links (spec: "Authentication" 6, "Events" 3). A link carries the
 * approval id, the decision, the recipient and an expiry (the approval's), signed with
 * HMAC-SHA256 under the service's link key (derived from the master key):
 *
 *   {public_url}/dashboard/approvals/{approval_id}/link?d=approve&r=<recipient>&exp=<unix s>&sig=<b64url>
 *
 * A link never decides by itself: following it requires signing in, and then leads to the
 * approvals page with the decision pre-selected, to be confirmed with a CSRF-protected POST.
 * A link works once (table approval_link_uses) and is refused when tampered, expired or reused.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { Queryable } from "../db/pool.js";

/** The two decisions a link can pre-select. */
export const LinkDecision = { approve: "approve", deny: "deny" } as const;
export type LinkDecision = (typeof LinkDecision)[keyof typeof LinkDecision];

/** What a link asserts. `expiresAtSec` is epoch seconds. */
export interface ApprovalLink {
  approvalId: string;
  decision: LinkDecision;
  recipient: string;
  expiresAtSec: number;
}

/** Query string of a link as it arrives (validated at the boundary). */
export const ApprovalLinkQuerySchema = z.object({
  d: z.enum(["approve", "deny"]),
  r: z.string().email().max(320),
  exp: z.coerce.number().int().positive(),
  sig: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "must be a base64url HMAC-SHA256"),
});
export type ApprovalLinkQuery = z.infer<typeof ApprovalLinkQuerySchema>;

/** Why a link was refused. */
export const LinkRefusal = {
  invalid: "invalid",
  expired: "expired",
  used: "used",
  wrong_recipient: "wrong_recipient",
} as const;
export type LinkRefusal = (typeof LinkRefusal)[keyof typeof LinkRefusal];

const message = (l: ApprovalLink) =>
  [
    "tollgate-approval-link:v1",
    l.approvalId.toLowerCase(),
    l.decision,
    l.recipient.toLowerCase(),
    String(l.expiresAtSec),
  ].join("\n");

/** The base64url HMAC-SHA256 of a link (43 characters). */
export function signApprovalLink(key: Buffer, link: ApprovalLink): string {
  return createHmac("sha256", key).update(message(link)).digest("base64url");
}

/** The absolute URL of a signed link under `publicUrl`. */
export function approvalLinkUrl(publicUrl: string, key: Buffer, link: ApprovalLink): string {
  const q = new URLSearchParams({
    d: link.decision,
    r: link.recipient.toLowerCase(),
    exp: String(link.expiresAtSec),
    sig: signApprovalLink(key, link),
  });
  return `${publicUrl.replace(/\/$/, "")}/dashboard/approvals/${encodeURIComponent(link.approvalId)}/link?${q}`;
}

/** The link a query string describes (not yet verified). */
export const linkFromQuery = (approvalId: string, q: ApprovalLinkQuery): ApprovalLink => ({
  approvalId,
  decision: q.d,
  recipient: q.r.toLowerCase(),
  expiresAtSec: q.exp,
});

/**
 * Checks a link's signature (constant time) and expiry against `nowMs`. Does not consume it.
 * Returns null when valid, else the refusal.
 */
export function checkApprovalLink(
  key: Buffer,
  link: ApprovalLink,
  sig: string,
  nowMs: number,
): LinkRefusal | null {
  const expected = Buffer.from(signApprovalLink(key, link));
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return "invalid";
  if (link.expiresAtSec * 1000 <= nowMs) return "expired";
  return null;
}

/**
 * Records the single use of a link; returns false when it was used before. Call after the
 * signature check and after sign-in, inside the request that shows the decision to confirm.
 */
export async function consumeApprovalLink(
  q: Queryable,
  link: ApprovalLink,
  usedBy: string,
  nowMs: number,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO approval_link_uses (approval_id, decision, recipient, used_by, used_at) VALUES ($1,$2,$3,$4,$5)
     ON CONFLICT DO NOTHING`,
    [link.approvalId, link.decision, link.recipient.toLowerCase(), usedBy, new Date(nowMs)],
  );
  return (rowCount ?? 0) === 1;
}

/** Whether a link was already used (shown before sign-in as "already used"). */
export async function approvalLinkUsed(q: Queryable, link: ApprovalLink): Promise<boolean> {
  const { rows } = await q.query(
    "SELECT 1 FROM approval_link_uses WHERE approval_id = $1 AND decision = $2 AND recipient = $3",
    [link.approvalId, link.decision, link.recipient.toLowerCase()],
  );
  return rows.length > 0;
}
