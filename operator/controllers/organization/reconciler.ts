/**
 * Organization reconciler: PUT/DELETE /v1/admin/organizations/{spec.slug} (mapping: ./mapping.ts).
 * Synced but not Ready while its kill switch or pause is active; of two Organizations claiming one
 * slug the older one wins and the other gets `SlugConflict` without touching the service. Once
 * applied or finalized, its dependents (policies, teams, governed namespaces) are enqueued.
 */
import type { OrganizationSpec } from "../../crds/schema.js";
import type { AdminApiClient } from "../../governance/client.js";
import { Reason, type ReconcileOutcome } from "../runtime/conditions.js";
import type { Context } from "../runtime/reconcile.js";
import { ResourceReconciler, type ResourceReconcilerOptions } from "../runtime/resource-reconciler.js";
import { managedBy } from "../shared/mapping.js";
import type { OrganizationResource } from "../shared/organization-ref.js";
import { organizationBody } from "./mapping.js";

/** Options of {@link OrganizationReconciler}. */
export interface OrganizationReconcilerOptions extends ResourceReconcilerOptions<OrganizationSpec> {
  governance: AdminApiClient;
  /** Enqueues the dependents of an organization (policies, teams, namespaces) that need work. */
  enqueueDependents(org: OrganizationResource): void;
}

/** Reconciles Organization resources into the service's organizations. */
export class OrganizationReconciler extends ResourceReconciler<
  OrganizationSpec,
  OrganizationReconcilerOptions
> {
  protected async apply(
    _ctx: Context,
    obj: OrganizationResource,
    spec: OrganizationSpec,
  ): Promise<ReconcileOutcome> {
    const rival = this.o.informer
      .list()
      .find(
        (o) =>
          o.metadata.name !== obj.metadata.name &&
          !o.metadata.deletionTimestamp &&
          o.spec?.slug === spec.slug &&
          olderThan(o, obj),
      );
    if (rival) {
      return {
        kind: "failed",
        reason: Reason.SlugConflict,
        message: `slug ${spec.slug} is already managed by Organization ${rival.metadata.name}`,
      };
    }
    const res = await this.o.governance.putOrganization(
      spec.slug,
      organizationBody(spec, managedBy(obj.metadata)),
    );
    const message = `Organization ${spec.slug} applied to the governance service (version ${res.version})`;
    const notReady = spec.killSwitch.active
      ? { reason: Reason.KillSwitchActive, message: `Kill switch active: ${spec.killSwitch.reason ?? ""}` }
      : spec.pause.active
        ? { reason: Reason.Paused, message: `Paused: ${spec.pause.reason ?? ""}` }
        : undefined;
    return {
      kind: "synced",
      message,
      notReady,
      fields: { serviceVersion: res.version, organization: spec.slug },
    };
  }

  protected async finalize(_ctx: Context, obj: OrganizationResource): Promise<void> {
    // Only an Organization that synced (status.organization set) owns the service's organization.
    const slug = obj.status?.organization;
    if (slug) await this.o.governance.deleteOrganization(slug);
  }

  protected override afterReconcile(obj: OrganizationResource): void {
    this.o.enqueueDependents(obj);
  }
}

/** Whether `a` was created before `b` (name breaks ties), i.e. `a` owns a shared slug. */
function olderThan(a: OrganizationResource, b: OrganizationResource): boolean {
  const ta = new Date(a.metadata.creationTimestamp ?? 0).getTime();
  const tb = new Date(b.metadata.creationTimestamp ?? 0).getTime();
  return ta !== tb ? ta < tb : a.metadata.name < b.metadata.name;
}
