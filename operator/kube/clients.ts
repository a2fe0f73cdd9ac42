/**
 * Kubernetes API access for the operator (@kubernetes/client-node): the clients it uses, the
 * error helpers, and plain-JSON access to objects of named API groups (Tollgate resources,
 * Leases, the MutatingWebhookConfiguration) through CustomObjectsApi, which neither converts
 * timestamps nor drops unknown fields. Patches are JSON Patch (the client's default content
 * type for these calls); a `test` of metadata.resourceVersion makes writes optimistic.
 */
import { createHash } from "node:crypto";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  createConfiguration,
  KubeConfig,
  ServerConfiguration,
} from "./k8s.js";

/** The API clients of one operator instance. */
export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
}

/**
 * Loads the kubeconfig: `kubeconfigPath` when given, else the default chain (KUBECONFIG,
 * ~/.kube/config, in-cluster service account). API calls time out after `requestTimeoutMs`.
 */
export function loadKubeClients(kubeconfigPath?: string, requestTimeoutMs = 30_000): KubeClients {
  const kc = new KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  reuseDispatchers(kc);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  // Like kc.makeApiClient, plus a deadline on every request (the client sets none by default,
  // so a request the server never answers would hold a worker forever). Watches are separate.
  const config = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: async (ctx) => {
          ctx.setHeaderParam("User-Agent", "tollgate-operator");
          if (!ctx.getSignal()) ctx.setSignal(AbortSignal.timeout(requestTimeoutMs));
          return ctx;
        },
        post: async (res) => res,
      },
    ],
  });
  return { kc, core: new CoreV1Api(config), custom: new CustomObjectsApi(config) };
}

/**
 * Makes `kc` reuse one HTTP dispatcher (connection pool) per cluster and TLS identity.
 * client-node 2.0 builds a new undici Agent for every request, i.e. a new TCP connection and TLS
 * handshake per API call; reusing it keeps connections alive between calls. A changed client
 * certificate or CA (e.g. rotated by an exec plugin) gets its own dispatcher.
 */
export function reuseDispatchers(kc: KubeConfig): void {
  type Factory = (
    cluster: { server?: string; proxyUrl?: string } | null,
    options: Record<string, unknown>,
  ) => unknown;
  const target = kc as unknown as { createDispatcher: Factory };
  const original = target.createDispatcher.bind(kc);
  const cache = new Map<string, unknown>();
  target.createDispatcher = (cluster, options) => {
    const identity = createHash("sha256");
    for (const part of [
      cluster?.server,
      cluster?.proxyUrl,
      options.ca,
      options.cert,
      options.key,
      options.pfx,
      options.servername,
    ]) {
      identity.update(part === undefined ? "\u0000" : String(part)).update("\u0001");
    }
    identity.update(String(options.rejectUnauthorized));
    const key = identity.digest("hex");
    if (!cache.has(key)) cache.set(key, original(cluster, options));
    return cache.get(key);
  };
}

/** HTTP status of a failed Kubernetes API call, or undefined for non-HTTP errors. */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const e = err as { statusCode?: number; code?: unknown } | null;
  if (typeof e?.statusCode === "number") return e.statusCode;
  return undefined;
}

export const isNotFound = (err: unknown) => statusOf(err) === 404;
export const isConflict = (err: unknown) => statusOf(err) === 409;
export const isAlreadyExists = isConflict;

/** A short, secret-free description of a Kubernetes API error (the Status message when present). */
export function describeKubeError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as unknown;
    let message: string | undefined;
    if (typeof body === "string") {
      try {
        message = (JSON.parse(body) as { message?: string }).message;
      } catch {
        message = body.slice(0, 300);
      }
    } else if (body && typeof body === "object") {
      message = (body as { message?: string }).message;
    }
    return `HTTP ${err.code}${message ? `: ${message}` : ""}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  const status = statusOf(err);
  return status ? `HTTP ${status}: ${message}` : message;
}

/** Where an object of a named API group lives. `namespace` undefined for cluster-scoped objects. */
export interface GroupResource {
  group: string;
  version: string;
  plural: string;
}

/** A JSON Patch operation. */
export type JsonPatch = Array<{ op: "add" | "replace" | "remove" | "test"; path: string; value?: unknown }>;

/** Plain-JSON CRUD on objects of one named-group resource (cluster-scoped or namespaced). */
export class GroupObjects<T = Record<string, unknown>> {
  constructor(
    private readonly custom: CustomObjectsApi,
    readonly gr: GroupResource,
    readonly namespaced: boolean,
  ) {}

  /** API path of the collection across all namespaces (for watches). */
  get watchPath(): string {
    return `/apis/${this.gr.group}/${this.gr.version}/${this.gr.plural}`;
  }

  private base() {
    return { group: this.gr.group, version: this.gr.version, plural: this.gr.plural };
  }

  /** Lists all objects (all namespaces for namespaced resources). */
  async list(): Promise<{ items: T[]; metadata?: { resourceVersion?: string } }> {
    if (this.namespaced) {
      return this.custom.listCustomObjectForAllNamespaces({
        group: this.gr.group,
        version: this.gr.version,
        resourcePlural: this.gr.plural,
      });
    }
    return this.custom.listClusterCustomObject(this.base());
  }

  /** Reads one object; rejects with a 404 ApiException when it does not exist. */
  async get(name: string, namespace?: string): Promise<T> {
    if (this.namespaced)
      return this.custom.getNamespacedCustomObject({ ...this.base(), namespace: namespace!, name });
    return this.custom.getClusterCustomObject({ ...this.base(), name });
  }

  async create(body: T, namespace?: string): Promise<T> {
    if (this.namespaced)
      return this.custom.createNamespacedCustomObject({ ...this.base(), namespace: namespace!, body });
    return this.custom.createClusterCustomObject({ ...this.base(), body });
  }

  /** Replaces an object; the body's metadata.resourceVersion makes it conditional (409 when stale). */
  async replace(name: string, body: T, namespace?: string): Promise<T> {
    if (this.namespaced) {
      return this.custom.replaceNamespacedCustomObject({ ...this.base(), namespace: namespace!, name, body });
    }
    return this.custom.replaceClusterCustomObject({ ...this.base(), name, body });
  }

  /** Applies a JSON Patch to the object. */
  async patch(name: string, patch: JsonPatch, namespace?: string): Promise<T> {
    if (this.namespaced) {
      return this.custom.patchNamespacedCustomObject({
        ...this.base(),
        namespace: namespace!,
        name,
        body: patch,
      });
    }
    return this.custom.patchClusterCustomObject({ ...this.base(), name, body: patch });
  }

  /** Applies a JSON Patch through the status subresource. */
  async patchStatus(name: string, patch: JsonPatch, namespace?: string): Promise<T> {
    if (this.namespaced) {
      return this.custom.patchNamespacedCustomObjectStatus({
        ...this.base(),
        namespace: namespace!,
        name,
        body: patch,
      });
    }
    return this.custom.patchClusterCustomObjectStatus({ ...this.base(), name, body: patch });
  }
}

/**
 * JSON Patch that sets metadata.finalizers to `finalizers`, only if the object is still at
 * `resourceVersion` (a failed test answers 422 or 409, and the reconcile is retried).
 */
export function finalizersPatch(resourceVersion: string | undefined, finalizers: string[]): JsonPatch {
  const patch: JsonPatch = [];
  if (resourceVersion) patch.push({ op: "test", path: "/metadata/resourceVersion", value: resourceVersion });
  patch.push({ op: "add", path: "/metadata/finalizers", value: finalizers });
  return patch;
}
