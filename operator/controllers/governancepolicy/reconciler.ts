/**
 * GovernancePolicy reconciler: PUT/DELETE /v1/admin/organizations/{slug}/policies/{namespace}.{name}
 * of the referenced Organization's slug, once that Organization is Synced (mapping: ./mapping.ts).
 *
 * Replay before enforce (./replay.ts): with `spec.replay`, each new generation is first replayed
 * over the organization's recorded events (once per generation: the summary in `status.replay`
 * says which generation it is of), the summary goes into `status.replay` and the `Replayed`
 * condition, and while `spec.replay.enforce` is false nothing is applied (Synced=False, reason
 * NotEnforced): the service keeps enforcing what it had. A replay that fails applies nothing.
 */
import type { GovernancePolicySpec, TollgateResource } from "../../crds/schema.js";
import { AdminApiError } from "../../governance/client.js";
import { ConditionType, type ExtraCondition, Reason, type ReconcileOutcome } from "../runtime/conditions.js";
import type { Context } from "../runtime/reconcile.js";
import { classifyFailure } from "../runtime/resource-reconciler.js";
import { managedBy, serviceName } from "../shared/mapping.js";
import { resolveOrganization } from "../shared/organization-ref.js";
import { OrganizationScopedReconciler } from "../shared/organization-scoped-reconciler.js";
import { policyBody } from "./mapping.js";
import { replayMessage, replayRequest, replayStatus } from "./replay.js";

/** Reconciles GovernancePolicy resources into the service's policies. */
export class GovernancePolicyReconciler extends OrganizationScopedReconciler<GovernancePolicySpec> {
  protected readonly serviceKind = "policy";

  protected put(slug: string, name: string, spec: GovernancePolicySpec, owner: string) {
    return this.o.governance.putPolicy(slug, name, policyBody(spec, owner));
  }

  protected remove(slug: string, name: string) {
    return this.o.governance.deletePolicy(slug, name);
  }

  protected override async apply(
    ctx: Context,
    obj: TollgateResource<GovernancePolicySpec>,
    spec: GovernancePolicySpec,
  ): Promise<ReconcileOutcome> {
    const replay = spec.replay;
    if (!replay) {
      const applied = await super.apply(ctx, obj, spec);
      return { ...applied, dropConditions: [ConditionType.Replayed] };
    }
    const org = resolveOrganization(this.o.organizations, spec.organizationRef);
    if ("outcome" in org) return org.outcome;
    const generation = obj.metadata.generation ?? 0;
    let summary = obj.status?.replay;
    if (summary?.observedGeneration !== generation) {
      try {
        summary = replayStatus(await this.replay(obj, spec, org.slug), generation);
      } catch (err) {
        const failure = classifyFailure(err);
        return {
          kind: "failed",
          reason: failure.reason,
          message: `Not applied: the replay failed: ${failure.message}`,
          conditions: [
            {
              type: ConditionType.Replayed,
              status: "False",
              reason: Reason.ReplayFailed,
              message: failure.message,
            },
          ],
        };
      }
      ctx.log.info({ changed: summary.changed, events: summary.eventsReplayed }, "replayed");
    }
    const replayed: ExtraCondition = {
      type: ConditionType.Replayed,
      status: "True",
      reason: Reason.Replayed,
      message: replayMessage(summary, replay.window),
    };
    if (!replay.enforce) {
      return {
        kind: "failed",
        reason: Reason.NotEnforced,
        message:
          "Replayed, not applied: spec.replay.enforce is false (status.replay has the summary; set it to true to enforce this generation)",
        fields: { replay: summary },
        conditions: [replayed],
      };
    }
    const applied = await super.apply(ctx, obj, spec);
    return {
      ...applied,
      fields: { ...("fields" in applied && applied.fields), replay: summary },
      conditions: [replayed],
    };
  }

  /**
   * Replays the spec as candidate: it replaces the service's policy when the status says this
   * object was applied before, else it is added under its name; when the service disagrees
   * (the policy exists, or does not), once more the other way.
   */
  private async replay(
    obj: TollgateResource<GovernancePolicySpec>,
    spec: GovernancePolicySpec,
    slug: string,
  ) {
    const name = serviceName(obj.metadata);
    const candidate = policyBody(spec, managedBy(obj.metadata)).config;
    const now = this.o.now?.() ?? new Date();
    const exists = obj.status?.serviceName === name && obj.status.serviceVersion !== undefined;
    try {
      return await this.o.governance.replayPolicy(
        slug,
        replayRequest(spec.replay!, candidate, name, exists, now),
      );
    } catch (err) {
      const other = exists
        ? /body\.replace: the organization has no policy named/
        : /body\.name: a policy named .* exists/;
      if (!(err instanceof AdminApiError && err.status === 400 && other.test(err.message))) throw err;
      return this.o.governance.replayPolicy(slug, replayRequest(spec.replay!, candidate, name, !exists, now));
    }
  }
}
