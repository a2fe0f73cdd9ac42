/**
 * Kubernetes API access for the operator: the @kubernetes/client-node clients it uses for watches
 * and occasional calls, the error helpers, and {@link KubeJson}, a lean plain-JSON client for the
 * calls a reconcile makes (Tollgate resources, their status, Leases, Events, the
 * MutatingWebhookConfiguration). KubeJson takes its credentials from the same KubeConfig but
 * sends over node:https keep-alive connections: client-node's generated API classes, its
 * middleware and undici's fetch cost about 10 ms of operator CPU per reconcile, which is what
 * limited a burst of reconciles on a small node. Plain JSON neither converts timestamps nor drops
 * unknown fields. Patches are JSON Patch; a `test` of metadata.resourceVersion makes writes
 * optimistic.
 */
import { createHash } from "node:crypto";
import http from "node:http";
import https from "node:https";
import {
  ApiException,
  CoreV1Api,
  createConfiguration,
  KubeConfig,
  ServerConfiguration,
} from "@kubernetes/client-node";
import { OperatorConfigError } from "../config.js";

/** The API clients of one operator instance. */
export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  /** The lean JSON client of the hot paths. */
  json: KubeJson;
}

/**
 * Loads the kubeconfig: `kubeconfigPath` when given, else the default chain (KUBECONFIG,
 * ~/.kube/config, in-cluster service account). API calls time out after `requestTimeoutMs`.
 * @throws OperatorConfigError when the kubeconfig cannot be read or parsed.
 */
export function loadKubeClients(kubeconfigPath?: string, requestTimeoutMs = 30_000): KubeClients {
  const kc = new KubeConfig();
  try {
    if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
    else kc.loadFromDefault();
  } catch (err) {
    // One clear line instead of the client library's stack trace.
    const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new OperatorConfigError([
      `KUBECONFIG: cannot load ${kubeconfigPath ?? "the default kubeconfig"} (${why})`,
    ]);
  }
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
  return {
    kc,
    core: new CoreV1Api(config),
    json: new KubeJson(kc, requestTimeoutMs),
  };
}

/** A failed {@link KubeJson} call: the HTTP status and the API server's Status message. */
export class KubeApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = "KubeApiError";
  }
}

/**
 * A plain-JSON client of the API server of `kc`'s current context over node:http(s) keep-alive
 * connections (one pool per TLS identity, so rotated client certificates get a new pool).
 * Credentials (client certificates, bearer tokens, token files, exec plugins) are applied per
 * request by the KubeConfig itself. A kubeconfig `proxy-url` is not supported (the operator runs
 * in-cluster); the constructor refuses one. Requests time out after `timeoutMs`.
 */
export class KubeJson {
  private readonly server: URL;
  private readonly agents = new Map<string, http.Agent>();

  constructor(
    private readonly kc: KubeConfig,
    private readonly timeoutMs = 30_000,
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    if (cluster.proxyUrl) throw new Error("the kubeconfig's proxy-url is not supported by the operator");
    this.server = new URL(cluster.server);
  }

  /**
   * Sends one request; `body` is sent as JSON with `contentType`. Resolves with the parsed JSON
   * response; rejects with a {@link KubeApiError} on an HTTP error, or an Error on a network
   * failure or timeout.
   */
  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<T> {
    const opts: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(opts);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const tls = this.server.protocol === "https:";
    return new Promise<T>((resolve, reject) => {
      const req = (tls ? https : http).request(
        {
          protocol: this.server.protocol,
          hostname: this.server.hostname,
          port: this.server.port,
          path,
          method,
          agent: this.agentFor(opts, tls),
          auth: opts.auth,
          headers: {
            ...opts.headers,
            accept: "application/json",
            "user-agent": "tollgate-operator",
            ...(payload !== undefined && {
              "content-type": contentType,
              "content-length": Buffer.byteLength(payload),
            }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", (err) => {
            clearTimeout(timer);
            reject(err);
          });
          res.on("end", () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString("utf8");
            let json: unknown;
            try {
              json = text ? JSON.parse(text) : {};
            } catch {
              json = undefined;
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300 && json !== undefined) return resolve(json as T);
            const message =
              (json as { message?: string } | undefined)?.message ??
              (text.slice(0, 300) || res.statusMessage);
            reject(new KubeApiError(status, `${method} ${path}: ${message}`));
          });
        },
      );
      const timer = setTimeout(
        () => req.destroy(new Error(`${method} ${path}: timed out after ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      req.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(payload);
    });
  }

  /** The keep-alive pool of the TLS identity in `opts`. */
  private agentFor(opts: https.RequestOptions, tls: boolean): http.Agent {
    const identity = createHash("sha256");
    for (const part of [opts.ca, opts.cert, opts.key, opts.pfx, opts.servername, opts.rejectUnauthorized])
      identity.update(part === undefined ? "\u0000" : String(part)).update("\u0001");
    const key = identity.digest("hex");
    let agent = this.agents.get(key);
    if (!agent) {
      agent = tls
        ? new https.Agent({
            keepAlive: true,
            maxSockets: 64,
            ca: opts.ca,
            cert: opts.cert,
            key: opts.key,
            pfx: opts.pfx,
            passphrase: opts.passphrase,
            servername: opts.servername,
            ...(opts.rejectUnauthorized !== undefined && { rejectUnauthorized: opts.rejectUnauthorized }),
          })
        : new http.Agent({ keepAlive: true, maxSockets: 64 });
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** Closes the keep-alive connections. */
  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
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

/** Plain-JSON CRUD on objects of one resource (cluster-scoped or namespaced; group "" is core/v1). */
export class GroupObjects<T = Record<string, unknown>> {
  private readonly prefix: string;

  constructor(
    private readonly api: KubeJson,
    readonly gr: GroupResource,
    readonly namespaced: boolean,
  ) {
    this.prefix = gr.group ? `/apis/${gr.group}/${gr.version}` : `/api/${gr.version}`;
  }

  /** API path of the collection across all namespaces (for watches). */
  get watchPath(): string {
    return `${this.prefix}/${this.gr.plural}`;
  }

  private collection(namespace?: string): string {
    if (!this.namespaced) return this.watchPath;
    if (!namespace) throw new Error(`${this.gr.plural} are namespaced: a namespace is required`);
    return `${this.prefix}/namespaces/${encodeURIComponent(namespace)}/${this.gr.plural}`;
  }

  private item(name: string, namespace?: string): string {
    return `${this.collection(namespace)}/${encodeURIComponent(name)}`;
  }

  /** Lists all objects (all namespaces for namespaced resources). */
  list(): Promise<{ items: T[]; metadata?: { resourceVersion?: string } }> {
    return this.api.request("GET", this.watchPath);
  }

  /** Reads one object; rejects with a 404 KubeApiError when it does not exist. */
  get(name: string, namespace?: string): Promise<T> {
    return this.api.request("GET", this.item(name, namespace));
  }

  create(body: T, namespace?: string): Promise<T> {
    return this.api.request("POST", this.collection(namespace), body);
  }

  /** Replaces an object; the body's metadata.resourceVersion makes it conditional (409 when stale). */
  replace(name: string, body: T, namespace?: string): Promise<T> {
    return this.api.request("PUT", this.item(name, namespace), body);
  }

  /** Applies a JSON Patch to the object. */
  patch(name: string, patch: JsonPatch, namespace?: string): Promise<T> {
    return this.api.request("PATCH", this.item(name, namespace), patch, "application/json-patch+json");
  }

  /** Applies a JSON Patch through the status subresource. */
  patchStatus(name: string, patch: JsonPatch, namespace?: string): Promise<T> {
    return this.api.request(
      "PATCH",
      `${this.item(name, namespace)}/status`,
      patch,
      "application/json-patch+json",
    );
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
