/**
 * The kind-specific halves of the three reconcilers: what applying and finalizing an
 * Organization, a GovernancePolicy and an ApproverTeam means for the service admin API.
 * - Organization → PUT/DELETE /v1/admin/organizations/{slug}; not Ready while its kill switch or
 *   pause is active; two Organizations claiming one slug: the older one wins.
 * - GovernancePolicy / ApproverTeam → PUT/DELETE .../policies|approver-teams/{namespace}.{name}
 *   of the referenced Organization's slug, once that Organization is Synced.
 */
import { approverTeamBody, managedBy, organizationBody, policyBody, serviceName } from "../crds/mapping.js";
import type {
  ApproverTeamSpec,
  GovernancePolicySpec,
  OrganizationSpec,
  TollgateResource,
} from "../crds/schema.js";
import type { RunningInformer } from "../kube/informer.js";
import type { AdminApiClient } from "../service/client.js";
import { isSynced, needsReconcile, Reason, type ReconcileOutcome } from "./conditions.js";
import type { KindHandler } from "./resource.js";

export type OrganizationResource = TollgateResource<OrganizationSpec>;

/** What the handlers share: the service, the Organization cache and a way to enqueue keys. */
export interface HandlerDeps {
  service: AdminApiClient;
  organizations: RunningInformer<OrganizationResource>;
  /** Enqueues dependents of an organization (policies, teams, namespaces) that need work. */
  enqueueDependents(org: OrganizationResource): void;
}

/** The Organization handler. */
export function organizationHandler(deps: HandlerDeps): KindHandler<OrganizationSpec> {
  return {
    async apply(obj, spec) {
      const rival = deps.organizations
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
      const res = await deps.service.putOrganization(
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
      } satisfies ReconcileOutcome;
    },
    async finalize(obj) {
      // Only an Organization that synced (status.organization set) owns the service's organization.
      const slug = obj.status?.organization;
      if (slug) await deps.service.deleteOrganization(slug);
    },
    after: (obj) => deps.enqueueDependents(obj),
  };
}

/** Whether `a` was created before `b` (name breaks ties), i.e. `a` owns a shared slug. */
function olderThan(a: OrganizationResource, b: OrganizationResource): boolean {
  const ta = new Date(a.metadata.creationTimestamp ?? 0).getTime();
  const tb = new Date(b.metadata.creationTimestamp ?? 0).getTime();
  return ta !== tb ? ta < tb : a.metadata.name < b.metadata.name;
}

/** Resolves the slug of the Organization a namespaced resource references, or the failure outcome. */
function resolveOrganization(
  deps: HandlerDeps,
  ref: { name: string },
): { slug: string } | { outcome: ReconcileOutcome } {
  const org = deps.organizations.get(ref.name);
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

/** Shared handler of the two namespaced kinds: PUT/DELETE a named sub-resource of an organization. */
function namespacedHandler<Spec extends { organizationRef: { name: string } }>(
  deps: HandlerDeps,
  what: "policy" | "approver team",
  put: (slug: string, name: string, spec: Spec, owner: string) => Promise<{ version: string }>,
  remove: (slug: string, name: string) => Promise<unknown>,
): KindHandler<Spec> {
  return {
    async apply(obj, spec) {
      const org = resolveOrganization(deps, spec.organizationRef);
      if ("outcome" in org) return org.outcome;
      const name = serviceName(obj.metadata);
      const res = await put(org.slug, name, spec, managedBy(obj.metadata));
      return {
        kind: "synced",
        message: `Applied as ${what} ${name} of organization ${org.slug} (version ${res.version})`,
        fields: { serviceVersion: res.version, organization: org.slug, serviceName: name },
      };
    },
    async finalize(obj) {
      const slug = obj.status?.organization;
      if (slug) await remove(slug, obj.status?.serviceName ?? serviceName(obj.metadata));
    },
  };
}

/** The GovernancePolicy handler. */
export const policyHandler = (deps: HandlerDeps): KindHandler<GovernancePolicySpec> =>
  namespacedHandler<GovernancePolicySpec>(
    deps,
    "policy",
    (slug, name, spec, owner) => deps.service.putPolicy(slug, name, policyBody(spec, owner)),
    (slug, name) => deps.service.deletePolicy(slug, name),
  );

/** The ApproverTeam handler. */
export const approverTeamHandler = (deps: HandlerDeps): KindHandler<ApproverTeamSpec> =>
  namespacedHandler<ApproverTeamSpec>(
    deps,
    "approver team",
    (slug, name, spec, owner) => deps.service.putApproverTeam(slug, name, approverTeamBody(spec, owner)),
    (slug, name) => deps.service.deleteApproverTeam(slug, name),
  );

/** Dependents of `org` among `objects` (by organizationRef) that need a reconcile. */
export function dependentsNeedingWork<T extends TollgateResource<{ organizationRef?: { name: string } }>>(
  org: OrganizationResource,
  objects: ReadonlyArray<T>,
): T[] {
  return objects.filter((o) => o.spec?.organizationRef?.name === org.metadata.name && needsReconcile(o));
}
