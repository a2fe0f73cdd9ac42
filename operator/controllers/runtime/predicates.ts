/**
 * Event filters of the informers (controller-runtime's pkg/predicate): which add/update events
 * put a Tollgate resource's request on the queue.
 */
import { FINALIZER, type TollgateResource } from "../../crds/schema.js";
import { needsReconcile } from "./conditions.js";

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
