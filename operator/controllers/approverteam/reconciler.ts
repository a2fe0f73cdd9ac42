/**
 * ApproverTeam reconciler: PUT/DELETE /v1/admin/organizations/{slug}/approver-teams/{namespace}.{name}
 * of the referenced Organization's slug, once that Organization is Synced (mapping: ./mapping.ts).
 */
import type { ApproverTeamSpec } from "../../crds/schema.js";
import { OrganizationScopedReconciler } from "../shared/organization-scoped-reconciler.js";
import { approverTeamBody } from "./mapping.js";

/** Reconciles ApproverTeam resources into the service's approver teams. */
export class ApproverTeamReconciler extends OrganizationScopedReconciler<ApproverTeamSpec> {
  protected readonly serviceKind = "approver team";

  protected put(slug: string, name: string, spec: ApproverTeamSpec, owner: string) {
    return this.o.governance.putApproverTeam(slug, name, approverTeamBody(spec, owner));
  }

  protected remove(slug: string, name: string) {
    return this.o.governance.deleteApproverTeam(slug, name);
  }
}
