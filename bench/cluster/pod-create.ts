/**
 * Phase 2 of bench/cluster: what injection adds to pod creation in the real cluster. The same pod
 * is created in the namespace labelled for injection (the API server calls the operator's
 * webhook, which adds the native sidecar; the kubelet starts the agent container only once the
 * sidecar's startup probe passes) and in the plain namespace (the webhook is not called). Per
 * pod: admission = create request → API response, Ready = create request → the Ready condition
 * seen on a watch. `concurrency` clients create pods one after another; each pod is deleted once
 * Ready (not waited for), and a batch waits until all of its pods are gone, so the node's
 * capacity bounds nothing (a sidecar requests 50m CPU).
 */
import { SIDECAR_CONTAINER } from "../../operator/webhook/sidecar.js";
import { TAG } from "../../test/cluster/support.js";
import type { KubeApi, WatchEvent } from "./kube-api.js";

/** One created pod's figures in ms. */
export interface CreateSample {
  admissionMs: number;
  readyMs: number;
}

/** Options of one batch. */
export interface BatchOptions {
  namespace: string;
  /** Pod names are `<prefix>-<i>`; the pods carry the label bench.tollgate.dev/batch=<prefix>. */
  prefix: string;
  pods: number;
  concurrency: number;
  injected: boolean;
  /** Per pod: create → Ready, at most. */
  readyTimeoutMs: number;
}

const LABEL = "bench.tollgate.dev/batch";

/** The pod both namespaces get: an idle agent container, nothing else. */
const podBody = (name: string, batch: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    labels: { app: "bench-create", [LABEL]: batch },
    annotations: { "tollgate.dev/agent-name": "bench-create" },
  },
  spec: {
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "agent",
        image: `ghcr.io/tollgate/tollgate:${TAG}`,
        command: ["sleep", "infinity"],
        resources: { requests: { cpu: "10m", memory: "16Mi" } },
      },
    ],
  },
});

const isReady = (pod: WatchEvent["object"]) =>
  (pod?.status?.conditions ?? []).some(
    (c: { type: string; status: string }) => c.type === "Ready" && c.status === "True",
  );

/** Creates a batch of pods and measures each; throws when one is (not) injected against `injected`. */
export async function createBatch(api: KubeApi, o: BatchOptions): Promise<CreateSample[]> {
  const base = `/api/v1/namespaces/${o.namespace}/pods`;
  const readyAt = new Map<string, number>();
  const waiting = new Map<string, (t: number) => void>();
  const watch = api.watch(
    `${base}?watch=1&labelSelector=${encodeURIComponent(`${LABEL}=${o.prefix}`)}`,
    (e) => {
      const name = e.object?.metadata?.name as string | undefined;
      if (!name || (e.type !== "ADDED" && e.type !== "MODIFIED") || !isReady(e.object) || readyAt.has(name))
        return;
      const t = performance.now();
      readyAt.set(name, t);
      waiting.get(name)?.(t);
    },
  );
  const samples: CreateSample[] = [];
  try {
    await watch.started;
    let next = 0;
    const client = async () => {
      for (let i = next++; i < o.pods; i = next++) {
        const name = `${o.prefix}-${i}`;
        const ready = new Promise<number>((resolve, reject) => {
          waiting.set(name, resolve);
          setTimeout(
            () => reject(new Error(`pod ${o.namespace}/${name} not Ready within ${o.readyTimeoutMs} ms`)),
            o.readyTimeoutMs,
          ).unref();
        });
        ready.catch(() => undefined);
        const t0 = performance.now();
        const r = await api.request("POST", base, podBody(name, o.prefix));
        const admitted = performance.now();
        if (r.status !== 201)
          throw new Error(`create pod ${o.namespace}/${name}: HTTP ${r.status} ${r.body?.message}`);
        const names = [...(r.body.spec.initContainers ?? []), ...r.body.spec.containers].map(
          (c: { name: string }) => c.name,
        );
        if (names.includes(SIDECAR_CONTAINER) !== o.injected)
          throw new Error(`pod ${o.namespace}/${name}: injected=${!o.injected}, expected ${o.injected}`);
        const readyTime = readyAt.get(name) ?? (await ready);
        samples.push({ admissionMs: admitted - t0, readyMs: readyTime - t0 });
        await api.request("DELETE", `${base}/${name}`);
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, client));
  } finally {
    watch.stop();
    await deleteBatch(api, o.namespace, o.prefix);
  }
  return samples;
}

/** Deletes the batch's pods and waits (≤ 120 s) until none is left. */
async function deleteBatch(api: KubeApi, namespace: string, prefix: string): Promise<void> {
  const sel = `labelSelector=${encodeURIComponent(`${LABEL}=${prefix}`)}`;
  await api.request("DELETE", `/api/v1/namespaces/${namespace}/pods?${sel}`);
  for (let i = 0; i < 240; i++) {
    const list = await api.request("GET", `/api/v1/namespaces/${namespace}/pods?${sel}&limit=1`);
    if (list.status === 200 && list.body.items.length === 0) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`pods ${prefix} of ${namespace} not gone after 120 s`);
}
