/**
 * Pure mapping from the Organization spec (camelCase, operator/crds/schema.ts) to the body of
 * PUT /v1/admin/organizations/{slug} (snake_case, the contract's OrganizationSpecSchema in
 * src/contract/v1/admin.ts). Keys the resource leaves unset are left out of the body.
 *
 * The operator talks to the service over HTTP only: it shares the wire contract, never the
 * service's code, and the compiler catches a body that drifted from the contract.
 */
import type { OrganizationSpec } from "../../crds/schema.js";
import type { OrganizationBody } from "../../governance/client.js";
import { put } from "../shared/mapping.js";

/** Organization spec → PUT /v1/admin/organizations/{slug} body. */
export function organizationBody(spec: OrganizationSpec, owner: string): OrganizationBody {
  const body: OrganizationBody = {
    environment: spec.environment,
    kill_switch: { active: spec.killSwitch.active, reason: spec.killSwitch.reason ?? null },
    pause: { active: spec.pause.active, reason: spec.pause.reason ?? null },
    approval_timeout_hours: spec.approvalTimeoutHours,
    evaluation_mode: spec.evaluationMode,
    api_keys_enabled: spec.apiKeysEnabled,
    managed_by: owner,
  };
  put(body, "display_name", spec.displayName);
  if (spec.runawayLimits) {
    const l = spec.runawayLimits;
    const limits = {};
    put(limits, "max_events", l.maxEvents);
    put(limits, "max_duration_seconds", l.maxDurationSeconds);
    put(limits, "max_tokens", l.maxTokens);
    body.runaway_limits = limits;
  }
  return body;
}
