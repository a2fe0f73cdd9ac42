/**
 * GovernancePolicy reconciler: PUT/DELETE /v1/admin/organizations/{slug}/policies/{namespace}.{name}
 * of the referenced Organization's slug, once that Organization is Synced (mapping: ./mapping.ts).
 */
import type { GovernancePolicySpec } from "../../crds/schema.js";
import { OrganizationScopedReconciler } from "../shared/organization-scoped-reconciler.js";
import { policyBody } from "./mapping.js";

/** Reconciles GovernancePolicy resources into the service's policies. */
export class GovernancePolicyReconciler extends OrganizationScopedReconciler<GovernancePolicySpec> {
  protected readonly serviceKind = "policy";

  protected put(slug: string, name: string, spec: GovernancePolicySpec, owner: string) {
    return this.o.governance.putPolicy(slug, name, policyBody(spec, owner));
  }

  protected remove(slug: string, name: string) {
    return this.o.governance.deletePolicy(slug, name);
  }
}
