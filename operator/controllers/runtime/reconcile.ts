/**
 * The reconcile contract, in controller-runtime's words (pkg/reconcile): a {@link Reconciler}
 * gets a {@link Context} and a {@link Request} naming one object, brings the world in line with
 * it, and returns a {@link Result} saying whether and when to look at the object again.
 */
import type { Logger } from "pino";

/** The object a reconcile is about (reconcile.Request). `namespace` is "" for cluster-scoped kinds. */
export interface Request {
  kind: string;
  namespace: string;
  name: string;
}

/**
 * What a reconcile asks the controller to do next (reconcile.Result). The empty result means
 * done: the key's backoff is forgotten. Throwing counts as `{ requeue: true }` and is logged.
 */
export interface Result {
  /** Requeue with the key's exponential backoff (a transient failure). */
  requeue?: boolean;
  /** Reconcile again after this many seconds (e.g. waiting for another object); wins over `requeue`. */
  requeueAfter?: number;
}

/**
 * What the controller passes to every reconcile (controller-runtime's ctx): `log` is bound to
 * the request (`kind`, `namespace`, `name`; reconcilers that read the object add `generation`),
 * as `log.FromContext(ctx)` is.
 */
export interface Context {
  log: Logger;
}

/** A reconciler of one kind (reconcile.Reconciler), driven by the controller loop. */
export interface Reconciler {
  /** The kind of the requests it handles (the queue key's first segment). */
  readonly kind: string;
  /** Brings the world in line with the object `req` names. */
  reconcile(ctx: Context, req: Request): Promise<Result>;
  /** Requests for every object the reconciler knows (periodic resync). */
  requests(): Request[];
}

/** Queue key of a request: `kind/namespace/name` (namespace empty for cluster-scoped objects). */
export const keyOf = (r: Request): string => `${r.kind}/${r.namespace}/${r.name}`;

/** Parses a key made by {@link keyOf}. @throws Error on a malformed key. */
export function parseKey(key: string): Request {
  const parts = key.split("/");
  if (parts.length !== 3 || !parts[0] || !parts[2]) throw new Error(`malformed queue key: ${key}`);
  return { kind: parts[0], namespace: parts[1]!, name: parts[2] };
}

/** The request of a Kubernetes object of `kind`. */
export const requestFor = (
  kind: string,
  obj: { metadata?: { name?: string; namespace?: string } },
): Request => ({ kind, namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" });
