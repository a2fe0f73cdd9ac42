/**
 * Pure status computation for Tollgate resources (Kubernetes API conventions): given the previous
 * status, the resource's generation and the outcome of one reconcile, the next status with the
 * `Synced` and `Ready` conditions (type, status, reason, message, lastTransitionTime,
 * observedGeneration), whether it differs from the previous one, and which Event to emit.
 *
 * - Synced: the last reconcile applied the spec to the governance service (or why it did not).
 * - Ready: Synced, and nothing blocks the configuration from being in effect (an organization's
 *   kill switch or pause makes it not Ready with reason KillSwitchActive / Paused).
 * - Replayed (GovernancePolicy with spec.replay): the last replay of the spec, or why it failed.
 *   A reconcile outcome may set such extra conditions or drop them; others are kept.
 * lastTransitionTime changes only when a condition's status changes.
 */
import {
  type Condition,
  type ConditionStatus,
  FINALIZER,
  type ResourceStatus,
  type TollgateResource,
} from "../../crds/schema.js";

/** Condition types written by the operator. */
export const ConditionType = { Ready: "Ready", Synced: "Synced", Replayed: "Replayed" } as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** Stable CamelCase reasons (metav1.Condition.reason). */
export const Reason = {
  Synced: "Synced",
  Ready: "Ready",
  InvalidSpec: "InvalidSpec",
  OrganizationNotFound: "OrganizationNotFound",
  OrganizationNotReady: "OrganizationNotReady",
  ServiceRejected: "ServiceRejected",
  ServiceUnavailable: "ServiceUnavailable",
  KillSwitchActive: "KillSwitchActive",
  Paused: "Paused",
  DeleteFailed: "DeleteFailed",
  SlugConflict: "SlugConflict",
  Replayed: "Replayed",
  ReplayFailed: "ReplayFailed",
  /** spec.replay.enforce is false: replayed, deliberately not applied. */
  NotEnforced: "NotEnforced",
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** Whether a failure with this reason may clear up without a spec change (retried with backoff). */
export const isTransient = (reason: Reason): boolean =>
  reason !== Reason.InvalidSpec &&
  reason !== Reason.ServiceRejected &&
  reason !== Reason.SlugConflict &&
  reason !== Reason.NotEnforced;

/** A condition besides Ready and Synced that an outcome sets (lastTransitionTime and generation are filled in). */
export interface ExtraCondition {
  type: ConditionType;
  status: ConditionStatus;
  reason: Reason;
  message: string;
}

/** What any outcome may add: extra conditions to set, condition types to drop. */
interface OutcomeExtras {
  conditions?: ExtraCondition[];
  dropConditions?: ConditionType[];
}

/** What one reconcile achieved. */
export type ReconcileOutcome =
  | ({
      kind: "synced";
      message: string;
      /** Set when the configuration is applied but not in effect (e.g. kill switch). */
      notReady?: { reason: Reason; message: string };
      /** Extra status fields (serviceVersion, organization, serviceName, replay). */
      fields?: Omit<ResourceStatus, "conditions" | "observedGeneration">;
    } & OutcomeExtras)
  | ({
      kind: "failed";
      reason: Reason;
      message: string;
      /** Status fields set over the kept ones (e.g. replay). */
      fields?: Omit<ResourceStatus, "conditions" | "observedGeneration">;
    } & OutcomeExtras);

const MAX_MESSAGE = 32_768;

function condition(
  type: ConditionType,
  status: ConditionStatus,
  reason: string,
  message: string,
  generation: number,
  previous: Condition[] | undefined,
  now: Date,
): Condition {
  const prev = previous?.find((c) => c.type === type);
  return {
    type,
    status,
    reason,
    message: message.slice(0, MAX_MESSAGE),
    lastTransitionTime:
      prev && prev.status === status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    observedGeneration: generation,
  };
}

/**
 * The next status of a resource at `generation` after `outcome`. Fields of the previous status
 * that the outcome does not mention (serviceVersion, ...) are kept on failure, replaced on success.
 */
export function nextStatus(
  previous: ResourceStatus | undefined,
  generation: number,
  outcome: ReconcileOutcome,
  now: Date,
): ResourceStatus {
  const prevConditions = previous?.conditions;
  const replaced = new Set<string>([
    ConditionType.Ready,
    ConditionType.Synced,
    ...(outcome.conditions ?? []).map((c) => c.type),
    ...(outcome.dropConditions ?? []),
  ]);
  const others = [
    ...(outcome.conditions ?? []).map((c) =>
      condition(c.type, c.status, c.reason, c.message, generation, prevConditions, now),
    ),
    ...(previous?.conditions ?? []).filter((c) => !replaced.has(c.type)),
  ];
  if (outcome.kind === "synced") {
    const ready = outcome.notReady
      ? condition(
          "Ready",
          "False",
          outcome.notReady.reason,
          outcome.notReady.message,
          generation,
          prevConditions,
          now,
        )
      : condition("Ready", "True", Reason.Ready, outcome.message, generation, prevConditions, now);
    return {
      ...outcome.fields,
      observedGeneration: generation,
      conditions: [
        ready,
        condition("Synced", "True", Reason.Synced, outcome.message, generation, prevConditions, now),
        ...others,
      ],
    };
  }
  const { conditions: _c, observedGeneration: _g, ...keep } = previous ?? {};
  return {
    ...keep,
    ...outcome.fields,
    observedGeneration: generation,
    conditions: [
      condition("Ready", "False", outcome.reason, outcome.message, generation, prevConditions, now),
      condition("Synced", "False", outcome.reason, outcome.message, generation, prevConditions, now),
      ...others,
    ],
  };
}

/** Whether a status says the object is Synced (at any generation). */
export const isSynced = (status: ResourceStatus | undefined): boolean =>
  status?.conditions?.some((c) => c.type === ConditionType.Synced && c.status === "True") ?? false;

/** Canonical JSON of a status for comparison (key order independent). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Whether writing `next` would change the stored status (avoids needless status writes). */
export const statusChanged = (previous: ResourceStatus | undefined, next: ResourceStatus): boolean =>
  canonical(previous ?? {}) !== canonical(next);

/** A Kubernetes Event to record about a status change. */
export interface StatusEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/**
 * The Event for a status change, or null: a Warning when Synced becomes False or its reason or
 * message changes while False; a Normal `Synced` when Synced becomes True.
 */
export function eventFor(previous: ResourceStatus | undefined, next: ResourceStatus): StatusEvent | null {
  const before = previous?.conditions?.find((c) => c.type === ConditionType.Synced);
  const after = next.conditions?.find((c) => c.type === ConditionType.Synced);
  if (!after) return null;
  if (after.status === "False") {
    if (before?.status === "False" && before.reason === after.reason && before.message === after.message)
      return null;
    // Holding a policy out of enforcement is the user's choice, not a failure.
    const type = after.reason === Reason.NotEnforced ? "Normal" : "Warning";
    return { type, reason: after.reason, message: after.message };
  }
  if (after.status === "True" && before?.status !== "True") {
    return { type: "Normal", reason: Reason.Synced, message: after.message };
  }
  return null;
}

/**
 * Event filter for informer add/update events: whether the resource may need work. False when
 * it carries the finalizer, is not being deleted and its status says the current generation is
 * Synced (periodic resync still revisits it). Our own status writes therefore cause no reconcile.
 */
export function needsReconcile(obj: TollgateResource): boolean {
  const meta = obj.metadata;
  if (meta.deletionTimestamp) return true;
  if (!meta.finalizers?.includes(FINALIZER)) return true;
  const generation = meta.generation ?? 0;
  if (obj.status?.observedGeneration !== generation) return true;
  const synced = obj.status?.conditions?.find((c) => c.type === ConditionType.Synced);
  return synced?.status !== "True" || synced.observedGeneration !== generation;
}
