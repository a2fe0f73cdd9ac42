/**
 * What the kinds that belong to an Organization share: resolving `spec.organizationRef` to the
 * slug of a Synced Organization (or the condition saying why not), and finding the dependents of
 * an Organization that need a reconcile once it changes.
 */
import type { OrganizationSpec, TollgateResource } from "../../crds/schema.js";
import type { RunningInformer } from "../../kube/informer.js";
import { isSynced, needsReconcile, Reason, type ReconcileOutcome } from "../runtime/conditions.js";

/** A cluster-scoped Organization as the informer caches it. */
export type OrganizationResource = TollgateResource<OrganizationSpec>;

/** Resolves the slug of the Organization `ref` names, or the failed outcome saying why not. */
export function resolveOrganization(
  organizations: RunningInformer<OrganizationResource>,
  ref: { name: string },
): { slug: string } | { outcome: ReconcileOutcome } {
  const org = organizations.get(ref.name);
  if (!org) {
    return {
      outcome: {
        kind: "failed",
        reason: Reason.OrganizationNotFound,
        message: `Organization ${ref.name} not found`,
      },
    };
  }
  const slug = org.status?.organization;
  if (org.metadata.deletionTimestamp || !slug || !isSynced(org.status)) {
    return {
      outcome: {
        kind: "failed",
        reason: Reason.OrganizationNotReady,
        message: `Organization ${ref.name} is ${org.metadata.deletionTimestamp ? "being deleted" : "not synced yet"}`,
      },
    };
  }
  return { slug };
}

/** Dependents of `org` among `objects` (by organizationRef) that need a reconcile. */
export function dependentsNeedingWork<T extends TollgateResource<{ organizationRef?: { name: string } }>>(
  org: OrganizationResource,
  objects: ReadonlyArray<T>,
): T[] {
  return objects.filter((o) => o.spec?.organizationRef?.name === org.metadata.name && needsReconcile(o));
}
