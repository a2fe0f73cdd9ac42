/**
 * Time-boxed exceptions (spec: "Time-boxed exception"): granted by an approver when approving,
 * scoped to the original action's agent, action type and destination domain, consulted by the
 * policy engine while recording. All of their SQL.
 */
import { randomUUID } from "node:crypto";
import type { ExceptionDuration } from "../../contract/v1/wire.js";
import type { Action, ActiveException } from "../../policy/schema.js";
import type { Queryable } from "../db/pool.js";

/** End of an exception window that starts at `fromMs` (epoch ms), in epoch ms. */
export function exceptionExpiry(fromMs: number, duration: ExceptionDuration): number {
  if (duration === "1h") return fromMs + 3600_000;
  if (duration === "1d") return fromMs + 86_400_000;
  if (duration === "1w") return fromMs + 7 * 86_400_000;
  const d = new Date(fromMs);
  d.setUTCMonth(d.getUTCMonth() + 1);
  return d.getTime();
}

/** What an exception allows: the approved action's agent, action type and destination domain. */
export interface ExceptionScope {
  agent_name: string;
  action_type: string;
  /** null when the approved action had no destination domain. */
  destination_domain: string | null;
}

/** Grants an exception for `scope` from `nowMs` for `duration`; returns its id. */
export async function grantException(
  q: Queryable,
  opts: {
    orgId: string;
    approvalId: string;
    scope: ExceptionScope;
    duration: ExceptionDuration;
    grantedBy: string;
    nowMs: number;
  },
): Promise<string> {
  const id = randomUUID();
  await q.query(
    `INSERT INTO exceptions (id, org_id, approval_id, agent_name, action_type, destination_domain, duration, granted_by, created_at, expires_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
    [
      id,
      opts.orgId,
      opts.approvalId,
      opts.scope.agent_name,
      opts.scope.action_type,
      opts.scope.destination_domain,
      opts.duration,
      opts.grantedBy,
      new Date(opts.nowMs),
      new Date(exceptionExpiry(opts.nowMs, opts.duration)),
    ],
  );
  return id;
}

/** Active exceptions matching the action's agent and action type (the engine matches the domain). */
export async function activeExceptions(
  q: Queryable,
  orgId: string,
  action: Action,
  nowMs: number,
): Promise<ActiveException[]> {
  const { rows } = await q.query(
    `SELECT id, agent_name, action_type, destination_domain, expires_at FROM exceptions
     WHERE org_id = $1 AND agent_name = $2 AND action_type = $3 AND expires_at > $4 AND revoked_at IS NULL`,
    [orgId, action.agent_name, action.action_type, new Date(nowMs)],
  );
  return rows.map((r) => ({
    exception_id: r.id,
    agent_name: r.agent_name,
    action_type: r.action_type,
    destination_domain: r.destination_domain,
    expires_at_ms: new Date(r.expires_at).getTime(),
  }));
}

/** An exception referenced by an event of a chain (possibly granted in another chain). */
export interface ChainException {
  id: string;
  approval_id: string;
  chain_id: string | null;
  granted_by: string;
  duration: string;
  created_at: Date;
  expires_at: Date;
  agent_name: string;
  action_type: string;
  destination_domain: string | null;
}

/**
 * The exceptions among `ids` that belong to the organization (chain page: which exception
 * authorized which event), by id; an empty map without a query when `ids` is empty.
 */
export async function exceptionsUsed(
  q: Queryable,
  orgId: string,
  ids: string[],
): Promise<Map<string, ChainException>> {
  if (ids.length === 0) return new Map();
  const { rows } = await q.query<ChainException>(
    `SELECT e.id, e.approval_id, a.chain_id, e.granted_by, e.duration, e.created_at, e.expires_at, e.agent_name, e.action_type,
       e.destination_domain
     FROM exceptions e LEFT JOIN approvals a ON a.id = e.approval_id WHERE e.org_id = $1 AND e.id = ANY($2::uuid[])`,
    [orgId, ids],
  );
  return new Map(rows.map((r) => [r.id, r]));
}
