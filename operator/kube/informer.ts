/**
 * Informers: a list+watch cache of one resource (@kubernetes/client-node ListWatch) that re-lists
 * on HTTP 410 Gone (done by ListWatch), and restarts after any other error with a backoff from
 * 1 s doubling to 30 s. The delay function is injected so tests control time.
 */

import { type KubeConfig, type KubernetesObject, ListWatch, Watch } from "@kubernetes/client-node";
import { describeKubeError } from "./clients.js";

/** Any object with Kubernetes metadata (timestamps may be strings: objects are plain JSON). */
export interface MetaObject {
  metadata?: { name?: string; namespace?: string };
}

import type { Logger } from "pino";

/** Sleeps `ms` milliseconds; injectable for tests. */
export type DelayFn = (ms: number) => Promise<void>;

export const realDelay: DelayFn = (ms) =>
  new Promise((resolve) => {
    setTimeout(resolve, ms).unref?.();
  });

/** First and maximum reconnect delays after an informer error (ms). */
export const INFORMER_BACKOFF = { initialMs: 1_000, maxMs: 30_000 } as const;

/** Next reconnect delay after `current` (ms): doubles up to the maximum. */
export const nextBackoff = (current: number): number => Math.min(current * 2, INFORMER_BACKOFF.maxMs);

/** Options of {@link startInformer}. */
export interface InformerOptions<T extends MetaObject> {
  kc: KubeConfig;
  /** Watch path of the collection, e.g. /api/v1/namespaces or /apis/tollgate.dev/v1alpha1/organizations. */
  path: string;
  /** Lists the collection (items and metadata.resourceVersion). */
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  labelSelector?: string;
  log: Logger;
  delay?: DelayFn;
  onAdd?: (obj: T) => void;
  onUpdate?: (obj: T) => void;
  onDelete?: (obj: T) => void;
}

/** A running informer: its cache and a way to stop it. */
export interface RunningInformer<T extends MetaObject> {
  /** Object by name (and namespace for namespaced resources), from the cache. */
  get(name: string, namespace?: string): T | undefined;
  /** Every cached object. */
  list(): ReadonlyArray<T>;
  /** Resolves once the first list has filled the cache. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

/** Starts an informer; returns at once (see `synced`). */
export function startInformer<T extends MetaObject>(opts: InformerOptions<T>): RunningInformer<T> {
  const delay = opts.delay ?? realDelay;
  let backoff: number = INFORMER_BACKOFF.initialMs;
  let stopped = false;
  let markSynced!: () => void;
  const synced = new Promise<void>((r) => {
    markSynced = r;
  });
  const list = async () => {
    const result = await opts.list();
    backoff = INFORMER_BACKOFF.initialMs;
    return { ...result, items: result.items ?? [] } as {
      items: T[];
      metadata?: { resourceVersion?: string };
    };
  };
  const lw = new ListWatch<T & KubernetesObject>(
    opts.path,
    new Watch(opts.kc),
    // ListWatch only needs items and metadata.resourceVersion.
    list as never,
    false,
    opts.labelSelector,
    undefined,
    { delayFn: delay },
  );
  // A successful list or any event proves the connection: the next failure starts at 1 s again.
  const handle = (cb?: (obj: T) => void) => (obj: T) => {
    backoff = INFORMER_BACKOFF.initialMs;
    cb?.(obj);
  };
  lw.on("add", handle(opts.onAdd));
  lw.on("update", handle(opts.onUpdate));
  lw.on("delete", handle(opts.onDelete));
  lw.on("error", (err: unknown) => {
    if (stopped) return;
    const wait = backoff;
    backoff = nextBackoff(backoff);
    opts.log.warn({ path: opts.path, err: describeKubeError(err), retryInMs: wait }, "informer error");
    void delay(wait).then(() => {
      if (!stopped) void restart();
    });
  });
  const restart = async () => {
    try {
      await lw.start();
      if (lw.latestResourceVersion()) markSynced();
    } catch (err) {
      opts.log.warn({ path: opts.path, err: (err as Error).message }, "informer start failed");
    }
  };
  void restart();
  return {
    get: (name, namespace) => lw.get(name, namespace),
    list: () => lw.list(),
    synced,
    async stop() {
      stopped = true;
      await lw.stop();
    },
  };
}
