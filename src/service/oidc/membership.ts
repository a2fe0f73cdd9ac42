/**
 * Who a signed-in person is in Tollgate (spec: "Authentication" 2). Roles come from the
 * service, never from the identity provider:
 * - the membership table (`members`, managed through the admin API) gives member, admin,
 *   approver per organization;
 * - ApproverTeam approvers count as approvers of their organization (team role admin also
 *   grants admin), and fallback approvers count as approvers too, because the spec lets them
 *   decide once escalated. A person listed only in a team may sign in with those roles.
 * The organization is the one named by the `tollgate_org` claim (a slug), or the single
 * membership; a person with several memberships and no claim chooses on a page.
 */
import { randomUUID } from "node:crypto";
import { createUserSession, SESSION_PREFIX, type UserRole } from "../auth.js";
import type { Clock } from "../clock.js";
import type { Database, Queryable } from "../db/pool.js";
import { hashSecret, newSecret } from "../secrets.js";

/** Dashboard session lifetime, seconds (also the cookie's Max-Age). */
export const SESSION_TTL_SECONDS = 8 * 3600;

/** One organization a person belongs to, with the union of roles from all sources. */
export interface Membership {
  orgId: string;
  slug: string;
  displayName: string | null;
  roles: UserRole[];
  /** True when the person has a row in the membership table. */
  member: boolean;
  /** ApproverTeams that list the person (as approver or fallback approver). */
  teams: string[];
  personName: string | null;
}

const roleOrder: UserRole[] = ["member", "approver", "admin"];
const sortRoles = (r: Iterable<UserRole>) =>
  [...new Set(r)].sort((a, b) => roleOrder.indexOf(a) - roleOrder.indexOf(b));

/** All memberships of `email` (lowercased), by organization slug. */
export async function membershipsOf(q: Queryable, email: string): Promise<Membership[]> {
  const e = email.toLowerCase();
  const byOrg = new Map<string, Membership & { roleSet: Set<UserRole> }>();
  const entry = (orgId: string, slug: string, displayName: string | null) => {
    let m = byOrg.get(orgId);
    if (!m) {
      m = {
        orgId,
        slug,
        displayName,
        roles: [],
        member: false,
        teams: [],
        personName: null,
        roleSet: new Set(),
      };
      byOrg.set(orgId, m);
    }
    return m;
  };
  const members = await q.query(
    `SELECT m.org_id, o.slug, o.display_name AS org_name, m.roles, m.display_name
     FROM members m JOIN organizations o ON o.id = m.org_id WHERE m.email = $1`,
    [e],
  );
  for (const r of members.rows) {
    const m = entry(r.org_id, r.slug, r.org_name);
    m.member = true;
    m.personName = r.display_name;
    for (const role of r.roles as UserRole[]) m.roleSet.add(role);
  }
  const teams = await q.query(
    `SELECT t.org_id, o.slug, o.display_name AS org_name, t.name, t.approvers, t.fallback_approvers
     FROM approver_teams t JOIN organizations o ON o.id = t.org_id
     WHERE t.approvers @> $1::jsonb OR t.fallback_approvers @> $2::jsonb`,
    [JSON.stringify([{ email: e }]), JSON.stringify([e])],
  );
  for (const r of teams.rows) {
    const m = entry(r.org_id, r.slug, r.org_name);
    m.teams.push(r.name);
    m.roleSet.add("approver");
    const listed = (r.approvers as { email: string; role?: string; name?: string }[]).find(
      (a) => a.email === e,
    );
    if (listed?.role === "admin") m.roleSet.add("admin");
    m.personName ??= listed?.name ?? null;
  }
  return [...byOrg.values()]
    .map(({ roleSet, ...m }) => ({ ...m, roles: sortRoles(roleSet), teams: m.teams.sort() }))
    .sort((a, b) => a.slug.localeCompare(b.slug));
}

/** Outcome of choosing the organization for a sign-in. */
export type OrgChoice =
  | { kind: "chosen"; membership: Membership }
  | { kind: "choose"; options: Membership[] }
  | { kind: "refused"; reason: string };

/** Picks the organization from the `tollgate_org` claim or the single membership. */
export function chooseOrganization(memberships: Membership[], claim: unknown): OrgChoice {
  if (memberships.length === 0) {
    return {
      kind: "refused",
      reason: "You are not a member of any organization in Tollgate. Ask an organization admin to add you.",
    };
  }
  if (typeof claim === "string" && claim !== "") {
    const m = memberships.find((x) => x.slug === claim);
    return m
      ? { kind: "chosen", membership: m }
      : { kind: "refused", reason: "Your identity provider named an organization you are not a member of." };
  }
  if (memberships.length === 1) return { kind: "chosen", membership: memberships[0]! };
  return { kind: "choose", options: memberships };
}

/**
 * Creates the dashboard session of `email` in the membership's organization. Members go
 * through createUserSession (auth.ts); roles granted by ApproverTeams are added to the
 * session. A person listed only in ApproverTeams gets a session with those roles.
 * Returns the bearer secret once.
 */
export async function startDashboardSession(
  db: Database,
  opts: { membership: Membership; email: string; clock: Clock },
): Promise<{ sessionId: string; token: string; roles: UserRole[] }> {
  const email = opts.email.toLowerCase();
  const { membership } = opts;
  if (membership.member) {
    const s = await createUserSession(db, {
      orgId: membership.orgId,
      email,
      clock: opts.clock,
      ttlSeconds: SESSION_TTL_SECONDS,
    });
    const roles = sortRoles([...s.roles, ...membership.roles]);
    if (roles.length !== s.roles.length) {
      await db.query("UPDATE user_sessions SET roles = $2 WHERE id = $1", [s.session_id, roles]);
    }
    return { sessionId: s.session_id, token: s.token, roles };
  }
  const token = newSecret(SESSION_PREFIX);
  const id = randomUUID();
  const now = opts.clock.nowMs();
  await db.query(
    `INSERT INTO user_sessions (id, token_hash, org_id, email, display_name, roles, created_at, expires_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
    [
      id,
      hashSecret(token),
      membership.orgId,
      email,
      membership.personName,
      membership.roles,
      new Date(now),
      new Date(now + SESSION_TTL_SECONDS * 1000),
    ],
  );
  return { sessionId: id, token, roles: membership.roles };
}

/** Revokes a dashboard session (sign-out). Idempotent. */
export async function endDashboardSession(q: Queryable, sessionId: string, nowMs: number): Promise<void> {
  await q.query("UPDATE user_sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1", [
    sessionId,
    new Date(nowMs),
  ]);
}
