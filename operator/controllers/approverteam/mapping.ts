/**
 * Pure mapping from the ApproverTeam spec (camelCase, operator/crds/schema.ts) to the body of
 * PUT .../approver-teams/{name} (snake_case, the contract's ApproverTeamSpecSchema in
 * src/contract/v1/admin.ts).
 *
 * The operator talks to the service over HTTP only: it shares the wire contract, never the
 * service's code, and the compiler catches a body that drifted from the contract.
 */
import type { ApproverTeamSpec } from "../../crds/schema.js";
import type { ApproverTeamBody } from "../../governance/client.js";
import { put } from "../shared/mapping.js";

/** ApproverTeam spec → PUT .../approver-teams/{name} body. */
export function approverTeamBody(spec: ApproverTeamSpec, owner: string): ApproverTeamBody {
  return {
    approvers: spec.approvers.map((a) => put({ email: a.email, role: a.role }, "name", a.name)),
    fallback_approvers: spec.fallbackApprovers,
    managed_by: owner,
  };
}
