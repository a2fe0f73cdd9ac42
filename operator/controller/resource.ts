/**
 * The reconcile loop shared by the three Tollgate kinds (kubebuilder conventions): not found
 * means done; the finalizer is added before any outside side effect; a deleted object's
 * configuration is removed from the service, then the finalizer; the spec is validated with its
 * zod schema; status (observedGeneration, Ready, Synced) is written through the status
 * subresource only when it changes; Events record failures and recoveries.
 */

import type { Logger } from "pino";
import type { z } from "zod";
import { ApiErrorCode } from "../../src/contract/v1/errors.js";
import { FINALIZER, type KindDefinition, type TollgateResource } from "../crds/schema.js";
import {
  describeKubeError,
  finalizersPatch,
  type GroupObjects,
  isNotFound,
  statusOf,
} from "../kube/clients.js";
import type { EventRecorder } from "../kube/events.js";
import type { RunningInformer } from "../kube/informer.js";
import { ServiceError } from "../service/client.js";
import {
  eventFor,
  isTransient,
  needsReconcile,
  nextStatus,
  Reason,
  type ReconcileOutcome,
  statusChanged,
} from "./conditions.js";
import type { ReconcileReply, Reconciler } from "./controller.js";
import { keyOf, type ObjectKey } from "./queue.js";

/** The kind-specific part of a reconciler. */
export interface KindHandler<Spec> {
  /** Applies the validated spec to the service; service failures may be thrown as ServiceError. */
  apply(obj: TollgateResource<Spec>, spec: Spec): Promise<ReconcileOutcome>;
  /** Removes the object's configuration from the service; idempotent. */
  finalize(obj: TollgateResource<Spec>): Promise<void>;
  /** Called after the object was applied or finalized (e.g. to enqueue dependents). */
  after?(obj: TollgateResource<Spec>): void;
}

/** Formats zod issues as `spec.a.b[0].c: message; ...` (at most 5). */
export function formatIssues(error: z.ZodError, prefix = "spec"): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.reduce<string>(
        (acc, p) => (typeof p === "number" ? `${acc}[${p}]` : `${acc}.${String(p)}`),
        prefix,
      );
      return `${path}: ${i.message}`;
    })
    .join("; ");
}

/** Maps a failure of `apply` to a condition reason and message. Non-service errors are rethrown. */
export function classifyFailure(err: unknown): { reason: Reason; message: string } {
  if (err instanceof ServiceError) {
    if (err.status === 400 || err.status === 422)
      return { reason: Reason.ServiceRejected, message: err.message };
    if (err.status === 404 && err.code === ApiErrorCode.NOT_FOUND)
      return { reason: Reason.OrganizationNotFound, message: err.message };
    return { reason: Reason.ServiceUnavailable, message: err.message };
  }
  throw err;
}

/**
 * Generations this replica applied successfully, and generations being reconciled right now, by
 * queue key. Informer events about an object whose current generation was already applied, or
 * is being applied at this moment, need no reconcile: they are the echoes of the reconcile's own
 * writes (the finalizer update arrives while the reconcile goes on to the service and the status;
 * re-queueing it doubled the work of every new resource). Deletions always pass; a failed
 * reconcile retries itself; periodic resync still revisits everything.
 */
export class AppliedGenerations {
  private readonly applied = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();

  set(key: string, generation: number): void {
    this.applied.set(key, generation);
  }

  delete(key: string): void {
    this.applied.delete(key);
  }

  /** Marks `generation` of `key` as being reconciled (until {@link end}). */
  begin(key: string, generation: number): void {
    this.inFlight.set(key, generation);
  }

  /** Ends the reconcile {@link begin} announced. */
  end(key: string): void {
    this.inFlight.delete(key);
  }

  /** Informer event filter: whether `obj` (queue key `key`) should be enqueued. */
  wants(key: string, obj: TollgateResource): boolean {
    if (!needsReconcile(obj)) return false;
    if (obj.metadata.deletionTimestamp) return true;
    const generation = obj.metadata.generation ?? 0;
    if (this.inFlight.get(key) === generation) return false;
    if (!obj.metadata.finalizers?.includes(FINALIZER)) return true;
    return this.applied.get(key) !== generation;
  }
}

/** Options of {@link ResourceReconciler}. */
export interface ResourceReconcilerOptions<Spec> {
  def: KindDefinition;
  objects: GroupObjects<TollgateResource<Spec>>;
  informer: RunningInformer<TollgateResource<Spec>>;
  handler: KindHandler<Spec>;
  events: EventRecorder;
  log: Logger;
  /** Shared with the informer's event filter. */
  applied?: AppliedGenerations;
  now?: () => Date;
}

/** Reconciler of one Tollgate kind. */
export class ResourceReconciler<Spec> implements Reconciler {
  readonly kind: string;
  private readonly applied: AppliedGenerations;

  constructor(private readonly o: ResourceReconcilerOptions<Spec>) {
    this.kind = o.def.kind;
    this.applied = o.applied ?? new AppliedGenerations();
  }

  keys(): string[] {
    return this.o.informer
      .list()
      .map((obj) =>
        keyOf({ kind: this.kind, namespace: obj.metadata.namespace ?? "", name: obj.metadata.name }),
      );
  }

  async reconcile(key: ObjectKey): Promise<ReconcileReply> {
    const queueKey = keyOf(key);
    const obj = this.o.informer.get(key.name, key.namespace || undefined);
    this.applied.delete(queueKey);
    if (!obj) return {};
    this.applied.begin(queueKey, obj.metadata.generation ?? 0);
    try {
      return await this.reconcileObject(queueKey, key, obj);
    } finally {
      this.applied.end(queueKey);
    }
  }

  private async reconcileObject(
    queueKey: string,
    key: ObjectKey,
    cached: TollgateResource<Spec>,
  ): Promise<ReconcileReply> {
    let obj = cached;
    const finalizers = obj.metadata.finalizers ?? [];

    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return {};
      try {
        await this.o.handler.finalize(obj);
      } catch (err) {
        const { message } = classifyFailure(err);
        await this.writeStatus(obj, { kind: "failed", reason: Reason.DeleteFailed, message });
        return { retry: true };
      }
      await this.setFinalizers(
        obj,
        finalizers.filter((f) => f !== FINALIZER),
      );
      this.o.log.info({ kind: this.kind, namespace: key.namespace, name: key.name }, "finalized");
      this.o.handler.after?.(obj);
      return {};
    }

    if (!finalizers.includes(FINALIZER)) {
      const updated = await this.setFinalizers(obj, [...finalizers, FINALIZER]);
      if (!updated) return {};
      obj = updated;
    }

    const parsed = (this.o.def.spec as z.ZodType<Spec>).safeParse(obj.spec);
    let outcome: ReconcileOutcome;
    if (!parsed.success) {
      outcome = { kind: "failed", reason: Reason.InvalidSpec, message: formatIssues(parsed.error) };
    } else {
      try {
        outcome = await this.o.handler.apply(obj, parsed.data);
      } catch (err) {
        outcome = { kind: "failed", ...classifyFailure(err) };
      }
    }
    await this.writeStatus(obj, outcome);
    if (outcome.kind === "synced") {
      this.applied.set(queueKey, obj.metadata.generation ?? 0);
      this.o.handler.after?.(obj);
      return {};
    }
    return isTransient(outcome.reason) ? { retry: true } : {};
  }

  /** Sets metadata.finalizers if the object is unchanged since read; returns the updated object. */
  private async setFinalizers(
    obj: TollgateResource<Spec>,
    finalizers: string[],
  ): Promise<TollgateResource<Spec> | undefined> {
    const { name, namespace, resourceVersion } = obj.metadata;
    try {
      return await this.o.objects.patch(name, finalizersPatch(resourceVersion, finalizers), namespace);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      const status = statusOf(err);
      if (status === 409 || status === 422)
        throw new Error(`stale object, retrying: ${describeKubeError(err)}`);
      throw new Error(`cannot update finalizers: ${describeKubeError(err)}`);
    }
  }

  private async writeStatus(obj: TollgateResource<Spec>, outcome: ReconcileOutcome): Promise<void> {
    const now = this.o.now?.() ?? new Date();
    const next = nextStatus(obj.status, obj.metadata.generation ?? 0, outcome, now);
    if (statusChanged(obj.status, next)) {
      try {
        await this.o.objects.patchStatus(
          obj.metadata.name,
          [{ op: "add", path: "/status", value: next }],
          obj.metadata.namespace,
        );
      } catch (err) {
        if (isNotFound(err)) return;
        throw new Error(`cannot write status: ${describeKubeError(err)}`);
      }
    }
    const event = eventFor(obj.status, next);
    // Events are best effort and recorded off the reconcile's critical path.
    if (event) {
      const fields = {
        kind: this.kind,
        namespace: obj.metadata.namespace,
        name: obj.metadata.name,
        reason: event.reason,
        message: event.message,
      };
      if (event.type === "Warning") this.o.log.warn(fields, "not synced");
      else this.o.log.info(fields, "synced");
      void this.o.events.record(
        {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
        },
        event.type,
        event.reason,
        event.message,
      );
    }
  }
}
