/**
 * The controller loop (controller-runtime's pkg/controller): N workers take keys
 * `kind/namespace/name` from the work queue, call the reconciler of that kind with a context whose
 * logger is bound to the request, and act on its Result: `requeue` (or a throw) re-adds the key
 * with per-key exponential backoff, `requeueAfter` re-adds it after that many seconds, anything
 * else forgets its backoff. A periodic resync re-adds every known key so drift in the service is
 * repaired.
 * Each reconcile is one trace (span `reconcile <Kind>`, attributes `k8s.object.kind`,
 * `k8s.namespace.name`, `k8s.object.name`, `tollgate.reconcile.result`), continued by the
 * service's spans of the admin API calls it makes.
 */

import type { Logger } from "pino";
import { SpanKind, tracer, withSpan } from "../../../src/telemetry/tracing.js";
import { type OperatorMetrics, ReconcileResult } from "../../metrics.js";
import { keyOf, parseKey, type Reconciler, type Request, type Result } from "./reconcile.js";
import type { WorkQueue } from "./workqueue.js";

const operatorTracer = tracer("tollgate-operator");

/** Options of {@link Controller}. */
export interface ControllerOptions {
  queue: WorkQueue;
  reconcilers: Reconciler[];
  /** Concurrent workers (different keys only; one key is never processed twice at a time). */
  workers: number;
  /** Period of the full resync in ms; 0 disables it. */
  resyncMs: number;
  metrics: OperatorMetrics;
  log: Logger;
}

/** Drives the reconcilers; see the module comment. */
export class Controller {
  private readonly byKind: Map<string, Reconciler>;
  private workers: Promise<void>[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ControllerOptions) {
    this.byKind = new Map(opts.reconcilers.map((r) => [r.kind, r]));
  }

  /** Adds a request to the queue. */
  enqueue(req: Request): void {
    this.opts.queue.add(keyOf(req));
    this.opts.metrics.queueDepth.set(this.opts.queue.length);
  }

  /** Starts the workers and the resync timer. */
  start(): void {
    for (let i = 0; i < this.opts.workers; i++) this.workers.push(this.work());
    if (this.opts.resyncMs > 0) {
      this.resyncTimer = setInterval(() => this.resync(), this.opts.resyncMs);
      this.resyncTimer.unref();
    }
  }

  /** Re-adds every known object. */
  resync(): void {
    for (const r of this.opts.reconcilers) for (const req of r.requests()) this.enqueue(req);
  }

  /** Stops taking keys and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    clearInterval(this.resyncTimer);
    this.opts.queue.shutDown();
    await Promise.all(this.workers);
    this.workers = [];
  }

  private async work(): Promise<void> {
    const { queue, metrics, log } = this.opts;
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      metrics.queueDepth.set(queue.length);
      let parsed: Request;
      try {
        parsed = parseKey(key);
      } catch {
        queue.done(key);
        continue;
      }
      const reconciler = this.byKind.get(parsed.kind);
      if (!reconciler) {
        queue.done(key);
        continue;
      }
      const end = metrics.reconcileDuration.startTimer({ kind: parsed.kind });
      let result: ReconcileResult = ReconcileResult.success;
      try {
        const reply: Result = await withSpan(
          operatorTracer,
          `reconcile ${parsed.kind}`,
          {
            kind: SpanKind.INTERNAL,
            root: true,
            attributes: {
              "k8s.object.kind": parsed.kind,
              ...(parsed.namespace && { "k8s.namespace.name": parsed.namespace }),
              "k8s.object.name": parsed.name,
            },
          },
          async (span) => {
            const r = await reconciler.reconcile({ log: log.child(parsed) }, parsed);
            span.setAttribute(
              "tollgate.reconcile.result",
              r.requeue || r.requeueAfter !== undefined ? "requeue" : "success",
            );
            return r;
          },
        );
        if (reply.requeueAfter !== undefined) {
          result = ReconcileResult.requeue;
          queue.forget(key);
          queue.addAfter(key, reply.requeueAfter * 1000);
        } else if (reply.requeue) {
          result = ReconcileResult.requeue;
          queue.addRateLimited(key);
        } else {
          queue.forget(key);
        }
      } catch (err) {
        result = ReconcileResult.error;
        const delay = queue.addRateLimited(key);
        log.warn({ key, err: (err as Error).message, retryInMs: delay }, "reconcile failed");
      } finally {
        end();
        metrics.reconciles.inc({ kind: parsed.kind, result });
        queue.done(key);
        metrics.queueDepth.set(queue.length);
      }
    }
  }
}
