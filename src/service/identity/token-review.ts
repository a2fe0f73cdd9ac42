/**
 * Verified workload identity (issue 27; docs "Identity"): an injected sidecar authenticates with
 * its pod's projected service account token (audience `tollgate`, short expiry, rotated by the
 * kubelet); the service verifies it with a TokenReview through the Kubernetes API server and
 * maps the pod's namespace to its organization by the namespace label `tollgate.dev/organization`.
 *
 * Why TokenReview and not issuer discovery + JWKS: the API server checks what a signature alone
 * cannot — that the pod (and service account) the token is bound to still exist with the same
 * UID — so a token taken from a deleted pod is refused at once. The answer is cached by the
 * SHA-256 of the token (never the token) for at most `cacheSeconds` and never past the token's
 * own expiry, so a governed call pays the round trip once per token and cache period.
 *
 * I/O at the edge: the API server through @kubernetes/client-node (in-cluster credentials, or a
 * kubeconfig file); the pure mapping is principal.ts.
 */
import { createHash } from "node:crypto";
import { decodeJwt } from "jose";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import type { WorkloadIdentity } from "../../policy/schema.js";
import type { Queryable } from "../db/pool.js";
import { ApiError, forbidden, unauthorized } from "../errors.js";
import { identityFromReview, TokenRefused, type TokenReviewStatus } from "./principal.js";

/** Namespace label naming the organization that governs it (as the operator and webhook read it). */
export const ORGANIZATION_LABEL = "tollgate.dev/organization";

/** What the service asks the API server. Implemented over a real API server by {@link kubeApiServer}. */
export interface KubeIdentityApi {
  /** POST a TokenReview for `token` with `audiences`; resolves with its status. Rejects on transport errors. */
  reviewToken(token: string, audiences: string[]): Promise<TokenReviewStatus>;
  /** The labels of a namespace; null when it does not exist. Rejects on transport errors. */
  namespaceLabels(name: string): Promise<Record<string, string> | null>;
}

/** A caller authenticated by a verified workload token. */
export interface WorkloadPrincipal {
  kind: "workload";
  orgId: string;
  identity: WorkloadIdentity;
}

/** Settings of {@link WorkloadAuthenticator}. */
export interface WorkloadIdentityOptions {
  api: KubeIdentityApi;
  /** Audience the token must carry; default "tollgate". */
  audience?: string;
  /** SPIFFE trust domain of the identities; default "cluster.local". */
  trustDomain?: string;
  /** Upper bound of how long a reviewed token is remembered, seconds; default 10. */
  cacheSeconds?: number;
  /** Most tokens remembered; default 10 000. */
  capacity?: number;
}

interface Entry {
  principal: WorkloadPrincipal;
  untilMs: number;
}

/** Resolves workload tokens to principals (see the module comment). */
export class WorkloadAuthenticator {
  readonly audience: string;
  readonly trustDomain: string;
  readonly #api: KubeIdentityApi;
  readonly #cacheMs: number;
  readonly #capacity: number;
  readonly #entries = new Map<string, Entry>();
  /** Concurrent first uses of one token share one review. */
  readonly #inflight = new Map<string, Promise<WorkloadPrincipal>>();

  constructor(o: WorkloadIdentityOptions) {
    this.#api = o.api;
    this.audience = o.audience ?? "tollgate";
    this.trustDomain = o.trustDomain ?? "cluster.local";
    this.#cacheMs = (o.cacheSeconds ?? 10) * 1000;
    this.#capacity = o.capacity ?? 10_000;
  }

  /**
   * The principal of a workload token.
   * @throws ApiError 401 TG_ERR_UNAUTHENTICATED when the API server refuses the token (expired,
   *   wrong audience, pod deleted, not a pod-bound service account token); 403 TG_ERR_FORBIDDEN
   *   when its namespace is governed by no organization, or by one this service does not know;
   *   503 TG_ERR_IDENTITY_UNAVAILABLE when the API server cannot be asked.
   */
  async resolve(q: Queryable, token: string, nowMs: number): Promise<WorkloadPrincipal> {
    const key = createHash("sha256").update(token).digest("hex");
    const expMs = tokenExpiryMs(token);
    // Expired by its own claim: refused without asking (the API server would refuse it too).
    if (expMs !== null && expMs <= nowMs)
      throw unauthorized("The workload token was refused: it has expired");
    const hit = this.#entries.get(key);
    if (hit && hit.untilMs > nowMs) return hit.principal;
    this.#entries.delete(key);
    let pending = this.#inflight.get(key);
    if (!pending) {
      pending = this.#review(q, token).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const principal = await pending;
    const untilMs = Math.min(nowMs + this.#cacheMs, expMs ?? nowMs);
    if (untilMs > nowMs) {
      if (this.#entries.size >= this.#capacity)
        this.#entries.delete(this.#entries.keys().next().value as string);
      this.#entries.set(key, { principal, untilMs });
    }
    return principal;
  }

  async #review(q: Queryable, token: string): Promise<WorkloadPrincipal> {
    let status: TokenReviewStatus;
    try {
      status = await this.#api.reviewToken(token, [this.audience]);
    } catch (err) {
      throw unavailable(err);
    }
    let identity: WorkloadIdentity;
    try {
      identity = identityFromReview(status, this.audience, this.trustDomain);
    } catch (err) {
      if (err instanceof TokenRefused) throw unauthorized(`The workload token was refused: ${err.message}`);
      throw err;
    }
    let labels: Record<string, string> | null;
    try {
      labels = await this.#api.namespaceLabels(identity.namespace);
    } catch (err) {
      throw unavailable(err);
    }
    const slug = labels?.[ORGANIZATION_LABEL];
    if (!slug) {
      throw forbidden(
        `Namespace ${identity.namespace} is not governed: it has no ${ORGANIZATION_LABEL} label`,
      );
    }
    const { rows } = await q.query<{ id: string }>("SELECT id FROM organizations WHERE slug = $1", [slug]);
    if (!rows[0])
      throw forbidden(`Namespace ${identity.namespace} names organization "${slug}", which does not exist`);
    return { kind: "workload", orgId: rows[0].id, identity };
  }
}

/** The token's `exp` in epoch ms, or null when it has none or cannot be decoded. */
function tokenExpiryMs(token: string): number | null {
  try {
    const { exp } = decodeJwt(token);
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/** 503 for a failed API server call; names only the HTTP status or error class (a body could echo the token). */
const unavailable = (err: unknown) => {
  const e = err as { code?: unknown; name?: string };
  const what =
    typeof e?.code === "number"
      ? `HTTP ${e.code}`
      : typeof e?.code === "string"
        ? e.code
        : (e?.name ?? "error");
  return new ApiError(
    503,
    ApiErrorCode.IDENTITY_UNAVAILABLE,
    `The workload token could not be reviewed now (Kubernetes API server: ${what}); retry`,
  );
};

/**
 * The {@link KubeIdentityApi} of a real API server: in-cluster credentials (the service's own
 * service account, which needs `create tokenreviews` and `get namespaces`), or `kubeconfigPath`.
 * Loaded lazily so the service needs the Kubernetes client only when identity is on.
 */
export async function kubeApiServer(kubeconfigPath?: string): Promise<KubeIdentityApi> {
  const k8s = await import("@kubernetes/client-node");
  const kc = new k8s.KubeConfig();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromCluster();
  const auth = kc.makeApiClient(k8s.AuthenticationV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  return {
    async reviewToken(token, audiences) {
      const review = await auth.createTokenReview({
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences } },
      });
      return (review.status ?? {}) as TokenReviewStatus;
    },
    async namespaceLabels(name) {
      try {
        const ns = await core.readNamespace({ name });
        return ns.metadata?.labels ?? {};
      } catch (err) {
        if ((err as { code?: number }).code === 404) return null;
        throw new Error(`reading namespace ${name}: HTTP ${(err as { code?: number }).code ?? "error"}`);
      }
    },
  };
}
