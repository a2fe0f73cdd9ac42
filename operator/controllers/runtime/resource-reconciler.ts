/**
 * The reconcile loop shared by the three Tollgate kinds (kubebuilder conventions), as an abstract
 * {@link Reconciler}: not found means done; the finalizer is added before any outside side
 * effect; a deleted object's configuration is removed from the service, then the finalizer; the
 * spec is validated with its zod schema; status (observedGeneration, Ready, Synced) is written
 * through the status subresource only when it changes; Events record failures and recoveries.
 * A kind's reconciler (operator/controllers/<kind>/reconciler.ts) extends it with `apply` and
 * `finalize`: what the spec means for the governance service's admin API.
 */

import type { z } from "zod";
import { ApiErrorCode } from "../../../src/contract/v1/errors.js";
import { FINALIZER, type KindDefinition, type TollgateResource } from "../../crds/schema.js";
import { AdminApiError } from "../../governance/client.js";
import {
  describeKubeError,
  finalizersPatch,
  type GroupObjects,
  isNotFound,
  statusOf,
} from "../../kube/clients.js";
import type { EventRecorder } from "../../kube/events.js";
import type { RunningInformer } from "../../kube/informer.js";
import {
  eventFor,
  isTransient,
  nextStatus,
  Reason,
  type ReconcileOutcome,
  statusChanged,
} from "./conditions.js";
import { AppliedGenerations } from "./predicates.js";
import { type Context, keyOf, type Reconciler, type Request, type Result, requestFor } from "./reconcile.js";

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
  if (err instanceof AdminApiError) {
    if (err.status === 400 || err.status === 422)
      return { reason: Reason.ServiceRejected, message: err.message };
    if (err.status === 404 && err.code === ApiErrorCode.NOT_FOUND)
      return { reason: Reason.OrganizationNotFound, message: err.message };
    return { reason: Reason.ServiceUnavailable, message: err.message };
  }
  throw err;
}

/** What every Tollgate kind's reconciler is built from. */
export interface ResourceReconcilerOptions<Spec> {
  def: KindDefinition;
  objects: GroupObjects<TollgateResource<Spec>>;
  informer: RunningInformer<TollgateResource<Spec>>;
  events: EventRecorder;
  /** Shared with the informer's event filter. */
  applied?: AppliedGenerations;
  now?: () => Date;
}

/**
 * Reconciler of one Tollgate kind; subclasses say what applying and finalizing mean. `Options`
 * lets a subclass carry what it needs beside the common options (e.g. the admin API client).
 */
export abstract class ResourceReconciler<
  Spec,
  Options extends ResourceReconcilerOptions<Spec> = ResourceReconcilerOptions<Spec>,
> implements Reconciler
{
  readonly kind: string;
  private readonly applied: AppliedGenerations;

  constructor(protected readonly o: Options) {
    this.kind = o.def.kind;
    this.applied = o.applied ?? new AppliedGenerations();
  }

  /**
   * Applies the validated spec to the service. Failures it can name are returned as a `failed`
   * outcome; AdminApiError may be thrown (classified by {@link classifyFailure}).
   */
  protected abstract apply(ctx: Context, obj: TollgateResource<Spec>, spec: Spec): Promise<ReconcileOutcome>;

  /** Removes the object's configuration from the service; idempotent. */
  protected abstract finalize(ctx: Context, obj: TollgateResource<Spec>): Promise<void>;

  /** Called after the object was applied or finalized (e.g. to enqueue dependents). */
  protected afterReconcile(_obj: TollgateResource<Spec>): void {}

  requests(): Request[] {
    return this.o.informer.list().map((obj) => requestFor(this.kind, obj));
  }

  async reconcile(ctx: Context, req: Request): Promise<Result> {
    const queueKey = keyOf(req);
    const obj = this.o.informer.get(req.name, req.namespace || undefined);
    this.applied.delete(queueKey);
    if (!obj) return {};
    const generation = obj.metadata.generation ?? 0;
    this.applied.begin(queueKey, generation);
    try {
      return await this.reconcileObject({ ...ctx, log: ctx.log.child({ generation }) }, queueKey, obj);
    } finally {
      this.applied.end(queueKey);
    }
  }

  private async reconcileObject(
    ctx: Context,
    queueKey: string,
    cached: TollgateResource<Spec>,
  ): Promise<Result> {
    let obj = cached;
    const finalizers = obj.metadata.finalizers ?? [];

    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(FINALIZER)) return {};
      try {
        await this.finalize(ctx, obj);
      } catch (err) {
        const { message } = classifyFailure(err);
        await this.writeStatus(ctx, obj, { kind: "failed", reason: Reason.DeleteFailed, message });
        return { requeue: true };
      }
      await this.setFinalizers(
        obj,
        finalizers.filter((f) => f !== FINALIZER),
      );
      ctx.log.info("finalized");
      this.afterReconcile(obj);
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
        outcome = await this.apply(ctx, obj, parsed.data);
      } catch (err) {
        outcome = { kind: "failed", ...classifyFailure(err) };
      }
    }
    await this.writeStatus(ctx, obj, outcome);
    if (outcome.kind === "synced") {
      this.applied.set(queueKey, obj.metadata.generation ?? 0);
      this.afterReconcile(obj);
      return {};
    }
    return isTransient(outcome.reason) ? { requeue: true } : {};
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

  private async writeStatus(
    ctx: Context,
    obj: TollgateResource<Spec>,
    outcome: ReconcileOutcome,
  ): Promise<void> {
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
      const fields = { reason: event.reason, message: event.message };
      if (event.type === "Warning") ctx.log.warn(fields, "not synced");
      else ctx.log.info(fields, "synced");
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
