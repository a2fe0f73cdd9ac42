/**
 * The reconciler of a namespaced kind that is a named sub-resource of an Organization in the
 * service (GovernancePolicy, ApproverTeam): once the referenced Organization is Synced, PUT the
 * mapped body to `.../{slug}/<collection>/{namespace}.{name}`; on deletion, DELETE it.
 */
import type { TollgateResource } from "../../crds/schema.js";
import type { AdminApiClient } from "../../governance/client.js";
import type { RunningInformer } from "../../kube/informer.js";
import type { ReconcileOutcome } from "../runtime/conditions.js";
import type { Context } from "../runtime/reconcile.js";
import { ResourceReconciler, type ResourceReconcilerOptions } from "../runtime/resource-reconciler.js";
import { managedBy, serviceName } from "./mapping.js";
import { type OrganizationResource, resolveOrganization } from "./organization-ref.js";

/** Options of an {@link OrganizationScopedReconciler}. */
export interface OrganizationScopedReconcilerOptions<Spec> extends ResourceReconcilerOptions<Spec> {
  governance: AdminApiClient;
  organizations: RunningInformer<OrganizationResource>;
}

/** Base of the reconcilers of kinds that reference an Organization; see the module comment. */
export abstract class OrganizationScopedReconciler<
  Spec extends { organizationRef: { name: string } },
> extends ResourceReconciler<Spec, OrganizationScopedReconcilerOptions<Spec>> {
  /** What the status message calls the service-side object ("policy", "approver team"). */
  protected abstract readonly serviceKind: string;

  /** PUTs the mapped spec as `name` of organization `slug`; returns the service's version. */
  protected abstract put(slug: string, name: string, spec: Spec, owner: string): Promise<{ version: string }>;

  /** DELETEs `name` of organization `slug` (idempotent). */
  protected abstract remove(slug: string, name: string): Promise<unknown>;

  protected async apply(_ctx: Context, obj: TollgateResource<Spec>, spec: Spec): Promise<ReconcileOutcome> {
    const org = resolveOrganization(this.o.organizations, spec.organizationRef);
    if ("outcome" in org) return org.outcome;
    const name = serviceName(obj.metadata);
    const res = await this.put(org.slug, name, spec, managedBy(obj.metadata));
    return {
      kind: "synced",
      message: `Applied as ${this.serviceKind} ${name} of organization ${org.slug} (version ${res.version})`,
      fields: { serviceVersion: res.version, organization: org.slug, serviceName: name },
    };
  }

  protected async finalize(_ctx: Context, obj: TollgateResource<Spec>): Promise<void> {
    const slug = obj.status?.organization;
    if (slug) await this.remove(slug, obj.status?.serviceName ?? serviceName(obj.metadata));
  }
}
