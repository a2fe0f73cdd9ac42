/**
 * Organizations and their configuration: the admin API's idempotent upserts (keyed by name,
 * answering with a content version), kill switch and pause, membership, and the effective
 * policy configuration an action is evaluated against.
 */
import { createHash, randomUUID } from "node:crypto";
import type { ApproverTeamSpec, OrganizationSpec, PolicySpec } from "../../contract/v1/admin.js";
import { combinePolicies, mergePolicyConfig } from "../../policy/merge.js";
import {
  configUsesChainActions,
  type OrgState,
  type PolicyConfig,
  PolicyConfigPatchSchema,
  PolicyConfigSchema,
  RunawayLimitsSchema,
} from "../../policy/schema.js";
import type { Database, Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";

/** An organization row as the service uses it. */
export interface Organization {
  id: string;
  slug: string;
  display_name: string | null;
  environment: string;
  kill_switch_active: boolean;
  kill_switch_reason: string | null;
  paused: boolean;
  pause_reason: string | null;
  approval_timeout_hours: number;
  /** Client API keys may record actions (issue 27); off: only verified workload identities. */
  api_keys_enabled: boolean;
  settings: { evaluation_mode?: "enforce" | "shadow"; runaway_limits?: Record<string, number> };
  config_version: string;
  managed_by: string | null;
  /** Head of the receipt log (receipts/store.ts): the last sequence (bigint, as text) and hash. */
  receipt_seq: string | number;
  last_receipt_hash: string | null;
}

const contentHash = (value: unknown): string =>
  createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 16);

/** Organization by slug; throws 404 ApiError when missing. */
export async function orgBySlug(q: Queryable, s: string): Promise<Organization> {
  const { rows } = await q.query<Organization>("SELECT * FROM organizations WHERE slug = $1", [s]);
  if (!rows[0]) throw notFound("Organization");
  return rows[0];
}

/** Organization by id; throws 404 ApiError when missing. */
export async function orgById(q: Queryable, id: string): Promise<Organization> {
  const { rows } = await q.query<Organization>("SELECT * FROM organizations WHERE id = $1", [id]);
  if (!rows[0]) throw notFound("Organization");
  return rows[0];
}

/** The slug of an organization, or undefined when it does not exist. */
export async function orgSlug(q: Queryable, id: string): Promise<string | undefined> {
  const { rows } = await q.query<{ slug: string }>("SELECT slug FROM organizations WHERE id = $1", [id]);
  return rows[0]?.slug;
}

/** The view of an organization the admin API returns. */
export function orgView(o: Organization) {
  return {
    organization: o.slug,
    display_name: o.display_name,
    environment: o.environment,
    kill_switch: { active: o.kill_switch_active, reason: o.kill_switch_reason },
    pause: { active: o.paused, reason: o.pause_reason },
    approval_timeout_hours: o.approval_timeout_hours,
    api_keys_enabled: o.api_keys_enabled,
    evaluation_mode: o.settings.evaluation_mode ?? "enforce",
    runaway_limits: RunawayLimitsSchema.parse(o.settings.runaway_limits ?? {}),
    managed_by: o.managed_by,
    version: o.config_version,
  };
}

/** Recomputes config_version from the organization, its policies and teams. */
async function refreshVersion(q: Queryable, orgId: string, nowMs: number): Promise<string> {
  const org = await q.query(
    "SELECT environment, kill_switch_active, kill_switch_reason, paused, pause_reason, approval_timeout_hours, settings FROM organizations WHERE id = $1",
    [orgId],
  );
  const pol = await q.query("SELECT name, version FROM policies WHERE org_id = $1 ORDER BY name", [orgId]);
  const teams = await q.query("SELECT name, version FROM approver_teams WHERE org_id = $1 ORDER BY name", [
    orgId,
  ]);
  const version = contentHash([org.rows[0]!, pol.rows, teams.rows]);
  await q.query("UPDATE organizations SET config_version = $2, updated_at = $3 WHERE id = $1", [
    orgId,
    version,
    new Date(nowMs),
  ]);
  return version;
}

/** Creates or replaces an organization (idempotent). Returns its view and whether it was created. */
export async function upsertOrganization(db: Database, s: string, spec: OrganizationSpec, nowMs: number) {
  return db.tx(async (q) => {
    const settings = {
      evaluation_mode: spec.evaluation_mode,
      ...(spec.runaway_limits && { runaway_limits: spec.runaway_limits }),
    };
    const now = new Date(nowMs);
    const { rows } = await q.query(
      `INSERT INTO organizations (id, slug, display_name, environment, kill_switch_active, kill_switch_reason, paused,
         pause_reason, approval_timeout_hours, settings, config_version, managed_by, created_at, updated_at,
         api_keys_enabled)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,'',$11,$12,$12,$13)
       ON CONFLICT (slug) DO UPDATE SET display_name = EXCLUDED.display_name, environment = EXCLUDED.environment,
         kill_switch_active = EXCLUDED.kill_switch_active, kill_switch_reason = EXCLUDED.kill_switch_reason,
         paused = EXCLUDED.paused, pause_reason = EXCLUDED.pause_reason,
         approval_timeout_hours = EXCLUDED.approval_timeout_hours, settings = EXCLUDED.settings,
         managed_by = EXCLUDED.managed_by, api_keys_enabled = EXCLUDED.api_keys_enabled
       RETURNING id, (xmax = 0) AS created`,
      [
        randomUUID(),
        s,
        spec.display_name ?? null,
        spec.environment,
        spec.kill_switch.active,
        spec.kill_switch.active ? (spec.kill_switch.reason ?? null) : null,
        spec.pause.active,
        spec.pause.active ? (spec.pause.reason ?? null) : null,
        spec.approval_timeout_hours,
        settings,
        spec.managed_by ?? null,
        now,
        spec.api_keys_enabled,
      ],
    );
    const row = rows[0]!;
    await refreshVersion(q, row.id, nowMs);
    return { created: row.created as boolean, ...orgView(await orgById(q, row.id)) };
  });
}

/** Sets the kill switch or the pause of an organization; returns the new view. */
export async function setOrgToggle(
  db: Database,
  s: string,
  which: "kill_switch" | "pause",
  value: { active: boolean; reason?: string | null },
  nowMs: number,
) {
  return db.tx(async (q) => {
    const org = await orgBySlug(q, s);
    const reason = value.active ? (value.reason ?? null) : null;
    if (which === "kill_switch") {
      await q.query(
        "UPDATE organizations SET kill_switch_active = $2, kill_switch_reason = $3 WHERE id = $1",
        [org.id, value.active, reason],
      );
    } else {
      await q.query("UPDATE organizations SET paused = $2, pause_reason = $3 WHERE id = $1", [
        org.id,
        value.active,
        reason,
      ]);
    }
    await refreshVersion(q, org.id, nowMs);
    return orgView(await orgById(q, org.id));
  });
}

/** Deletes an organization and everything it owns. Idempotent: a missing one is not an error. */
export async function deleteOrganization(db: Database, s: string): Promise<{ deleted: boolean }> {
  const { rowCount } = await db.query("DELETE FROM organizations WHERE slug = $1", [s]);
  return { deleted: (rowCount ?? 0) > 0 };
}

/** Creates or replaces a named policy of an organization (idempotent). */
export async function upsertPolicy(db: Database, s: string, name: string, spec: PolicySpec, nowMs: number) {
  return db.tx(async (q) => {
    const org = await orgBySlug(q, s);
    const version = contentHash([spec.config, spec.policy_version ?? null]);
    await q.query(
      `INSERT INTO policies (org_id, name, config, policy_version, version, managed_by, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7)
       ON CONFLICT (org_id, name) DO UPDATE SET config = EXCLUDED.config, policy_version = EXCLUDED.policy_version,
         version = EXCLUDED.version, managed_by = EXCLUDED.managed_by, updated_at = EXCLUDED.updated_at`,
      [
        org.id,
        name,
        spec.config,
        spec.policy_version ?? null,
        version,
        spec.managed_by ?? null,
        new Date(nowMs),
      ],
    );
    const orgVersion = await refreshVersion(q, org.id, nowMs);
    return {
      organization: s,
      name,
      version,
      policy_version: spec.policy_version ?? null,
      organization_version: orgVersion,
    };
  });
}

/** Deletes a named policy. Idempotent. */
export async function deletePolicy(db: Database, s: string, name: string, nowMs: number) {
  return db.tx(async (q) => {
    const org = await orgBySlug(q, s);
    const { rowCount } = await q.query("DELETE FROM policies WHERE org_id = $1 AND name = $2", [
      org.id,
      name,
    ]);
    await refreshVersion(q, org.id, nowMs);
    return { deleted: (rowCount ?? 0) > 0 };
  });
}

/** Lists the policies of an organization. */
export async function listPolicies(q: Queryable, orgId: string) {
  const { rows } = await q.query(
    "SELECT name, config, policy_version, version, managed_by, updated_at FROM policies WHERE org_id = $1 ORDER BY name",
    [orgId],
  );
  return rows.map((r) => ({
    name: r.name as string,
    config: r.config as Record<string, unknown>,
    policy_version: r.policy_version as string | null,
    version: r.version as string,
    managed_by: r.managed_by as string | null,
    updated_at: new Date(r.updated_at).toISOString(),
  }));
}

/** Creates or replaces a named approver team (idempotent). */
export async function upsertApproverTeam(
  db: Database,
  s: string,
  name: string,
  spec: ApproverTeamSpec,
  nowMs: number,
) {
  return db.tx(async (q) => {
    const org = await orgBySlug(q, s);
    const approvers = spec.approvers.map((a) => ({ ...a, email: a.email.toLowerCase() }));
    const fallback = spec.fallback_approvers.map((e) => e.toLowerCase());
    const version = contentHash([approvers, fallback]);
    await q.query(
      `INSERT INTO approver_teams (org_id, name, approvers, fallback_approvers, version, managed_by, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7)
       ON CONFLICT (org_id, name) DO UPDATE SET approvers = EXCLUDED.approvers,
         fallback_approvers = EXCLUDED.fallback_approvers, version = EXCLUDED.version,
         managed_by = EXCLUDED.managed_by, updated_at = EXCLUDED.updated_at`,
      [
        org.id,
        name,
        JSON.stringify(approvers),
        JSON.stringify(fallback),
        version,
        spec.managed_by ?? null,
        new Date(nowMs),
      ],
    );
    const orgVersion = await refreshVersion(q, org.id, nowMs);
    return { organization: s, name, version, organization_version: orgVersion };
  });
}

/** Deletes a named approver team. Idempotent. */
export async function deleteApproverTeam(db: Database, s: string, name: string, nowMs: number) {
  return db.tx(async (q) => {
    const org = await orgBySlug(q, s);
    const { rowCount } = await q.query("DELETE FROM approver_teams WHERE org_id = $1 AND name = $2", [
      org.id,
      name,
    ]);
    await refreshVersion(q, org.id, nowMs);
    return { deleted: (rowCount ?? 0) > 0 };
  });
}

/** Lists approver teams of an organization. */
export async function listApproverTeams(q: Queryable, orgId: string) {
  const { rows } = await q.query(
    "SELECT name, approvers, fallback_approvers, version, managed_by FROM approver_teams WHERE org_id = $1 ORDER BY name",
    [orgId],
  );
  return rows as {
    name: string;
    approvers: { email: string; role: string; name?: string }[];
    fallback_approvers: string[];
    version: string;
    managed_by: string | null;
  }[];
}

/** Approver and fallback approver e-mail addresses of an organization, deduplicated. */
export async function approverRecipients(
  q: Queryable,
  orgId: string,
): Promise<{ approvers: string[]; fallback: string[] }> {
  const teams = await listApproverTeams(q, orgId);
  const { rows } = await q.query(
    "SELECT email FROM members WHERE org_id = $1 AND 'approver' = ANY(roles) ORDER BY email",
    [orgId],
  );
  const approvers = new Set<string>(rows.map((r) => r.email));
  const fallback = new Set<string>();
  for (const t of teams) {
    for (const a of t.approvers as { email: string }[]) approvers.add(a.email);
    for (const f of t.fallback_approvers as string[]) fallback.add(f);
  }
  return { approvers: [...approvers], fallback: [...fallback].filter((f) => !approvers.has(f)) };
}

/** Creates or replaces a dashboard membership with roles (member, admin, approver). */
export async function upsertMember(
  db: Database,
  s: string,
  email: string,
  body: { roles: string[]; display_name?: string },
  nowMs: number,
) {
  const org = await orgBySlug(db, s);
  await db.query(
    `INSERT INTO members (org_id, email, display_name, roles, created_at) VALUES ($1,$2,$3,$4,$5)
     ON CONFLICT (org_id, email) DO UPDATE SET roles = EXCLUDED.roles, display_name = EXCLUDED.display_name`,
    [org.id, email.toLowerCase(), body.display_name ?? null, body.roles, new Date(nowMs)],
  );
  return { organization: s, email: email.toLowerCase(), roles: body.roles };
}

/** Organization state the engine needs besides the configuration. */
export const orgState = (o: Organization): OrgState => ({
  kill_switch: { active: o.kill_switch_active, reason: o.kill_switch_reason },
  pause: { active: o.paused, reason: o.pause_reason },
  environment: o.environment,
});

interface CompiledOrgConfig {
  version: string;
  config: PolicyConfig;
  policyVersion: string;
  /** chainConfigOf's memo: chain policy_config (as JSON) → the merged configuration. */
  chainConfigs: Map<string, ChainConfig>;
}

/** An organization configuration merged with one chain's policy_config patch. */
export interface ChainConfig {
  config: PolicyConfig;
  /** Whether an expression of `config` reads `chain.actions` (policy configUsesChainActions). */
  usesChainActions: boolean;
}

/** Distinct chain policy_config patches remembered per organization configuration. */
const CHAIN_CONFIGS_PER_ORG = 256;

/**
 * The organization configuration `compiled` merged with a chain's policy_config (as
 * chains/record.ts and replay merge it), memoized per configuration version and patch: merging
 * re-parses the whole configuration (zod), which with 50 custom rules cost more than deciding.
 * Most chains have no patch, so the memo holds few entries; it is bounded all the same.
 * @throws ZodError when the patch does not parse (it was validated when the chain was opened).
 */
export function chainConfigOf(compiled: CompiledOrgConfig, policyConfig: unknown): ChainConfig {
  const key = JSON.stringify(policyConfig ?? {});
  let hit = compiled.chainConfigs.get(key);
  if (hit === undefined) {
    const config = mergePolicyConfig(compiled.config, PolicyConfigPatchSchema.parse(policyConfig ?? {}));
    hit = { config, usesChainActions: configUsesChainActions(config) };
    if (compiled.chainConfigs.size >= CHAIN_CONFIGS_PER_ORG) compiled.chainConfigs.clear();
    compiled.chainConfigs.set(key, hit);
  }
  return hit;
}

/**
 * Caches each organization's effective configuration (defaults ← combined policies ← org
 * settings) by config_version, so the hot path reads policies only after a change.
 */
export class OrgConfigCache {
  private readonly cache = new Map<string, CompiledOrgConfig>();

  /** The organization's effective configuration and its policy_version label. */
  async get(q: Queryable, org: Organization): Promise<CompiledOrgConfig> {
    const hit = this.cache.get(org.id);
    if (hit && hit.version === org.config_version) return hit;
    const rows = await listPolicies(q, org.id);
    const config = effectiveOrgConfig(org, rows);
    const labels = rows.map((r) => `${r.name}@${r.policy_version ?? r.version}`);
    const compiled = {
      version: org.config_version,
      config,
      policyVersion: `${labels.length ? labels.join("+") : "defaults"}#${org.config_version.slice(0, 12)}`,
      chainConfigs: new Map(),
    };
    this.cache.set(org.id, compiled);
    return compiled;
  }
}

/**
 * The organization's effective configuration from its policies (name + stored config patch):
 * defaults ← the policies combined in name order (policy/merge.ts combinePolicies) ← the
 * organization's settings (evaluation_mode, runaway_limits). Pure. What OrgConfigCache serves,
 * and what a replay (replay/replay.ts) builds with a candidate policy in the list.
 * @throws ZodError when a stored or candidate config does not parse (callers validate first).
 */
export function effectiveOrgConfig(
  org: Pick<Organization, "settings">,
  policies: readonly { name: string; config: unknown }[],
): PolicyConfig {
  const combined = combinePolicies(
    policies.map((r) => ({ name: r.name, config: PolicyConfigPatchSchema.parse(r.config) })),
  );
  const orgOverride = {
    evaluation_mode: org.settings.evaluation_mode ?? "enforce",
    ...(org.settings.runaway_limits && {
      runaway_limits: RunawayLimitsSchema.parse(org.settings.runaway_limits),
    }),
  };
  return mergePolicyConfig(PolicyConfigSchema.parse({}), combined, orgOverride);
}

/** A member as stored. */
export interface MemberRow {
  email: string;
  display_name: string | null;
  roles: string[];
}

/** Members of an organization (team page), by e-mail address. */
export async function listMembers(q: Queryable, orgId: string): Promise<MemberRow[]> {
  const { rows } = await q.query<MemberRow>(
    "SELECT email, display_name, roles FROM members WHERE org_id = $1 ORDER BY email",
    [orgId],
  );
  return rows;
}
