/**
 * From a Kubernetes TokenReview answer to the verified workload identity (issue 27). Pure: the
 * I/O lives in token-review.ts.
 *
 * A projected service account token bound to a pod authenticates as the user
 * `system:serviceaccount:<namespace>:<name>` with the extras
 * `authentication.kubernetes.io/pod-name` and `.../pod-uid` (Kubernetes "Service account tokens",
 * bound tokens). The SPIFFE form follows kube-agentic-networking's AccessPolicy `Source`:
 * `spiffe://<trust-domain>/ns/<namespace>/sa/<name>`.
 */
import { spiffeIdOf, type WorkloadIdentity } from "../../policy/schema.js";

/** The part of a TokenReview's `status` this module reads (authentication.k8s.io/v1). */
export interface TokenReviewStatus {
  authenticated?: boolean;
  audiences?: string[];
  error?: string;
  user?: { username?: string; uid?: string; extra?: Record<string, string[]> };
}

const SA_PREFIX = "system:serviceaccount:";
/** Extras the API server sets on a pod-bound service account token. */
export const PodExtra = {
  name: "authentication.kubernetes.io/pod-name",
  uid: "authentication.kubernetes.io/pod-uid",
} as const;

/** Why a reviewed token is refused; never contains the token. */
export class TokenRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenRefused";
  }
}

/**
 * The workload identity of an authenticated TokenReview.
 * @param status the TokenReview's status as the API server answered it.
 * @param audience the audience the service requires (default "tollgate").
 * @param trustDomain the SPIFFE trust domain (e.g. "cluster.local").
 * @throws TokenRefused when the token is not authenticated, not for `audience`, not a service
 *   account's token, or not bound to a pod (a long-lived Secret token carries no pod: refused, so
 *   every identity is a running pod's).
 */
export function identityFromReview(
  status: TokenReviewStatus,
  audience: string,
  trustDomain: string,
): WorkloadIdentity {
  if (!status.authenticated)
    throw new TokenRefused("the token is not valid (expired, revoked, or its pod is gone)");
  if (!status.audiences?.includes(audience))
    throw new TokenRefused(`the token is not for the audience "${audience}"`);
  const username = status.user?.username ?? "";
  if (!username.startsWith(SA_PREFIX)) throw new TokenRefused("the token is not a service account's");
  const [namespace, serviceAccount, ...rest] = username.slice(SA_PREFIX.length).split(":");
  if (!namespace || !serviceAccount || rest.length)
    throw new TokenRefused("the token's user name is malformed");
  const podName = status.user?.extra?.[PodExtra.name]?.[0] ?? null;
  const podUid = status.user?.extra?.[PodExtra.uid]?.[0] ?? null;
  if (!podName || !podUid) throw new TokenRefused("the token is not bound to a pod (use a projected token)");
  return {
    namespace,
    service_account: serviceAccount,
    pod_name: podName,
    pod_uid: podUid,
    spiffe_id: spiffeIdOf(trustDomain, namespace, serviceAccount),
  };
}

/** Whether a bearer secret has the shape of a JWT (three base64url parts): a workload token. */
export const looksLikeJwt = (secret: string): boolean =>
  /^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(secret);

/** "ns/name" of an identity's service account (AccessPolicy `serviceAccounts` form). */
export const serviceAccountRef = (id: WorkloadIdentity): string => `${id.namespace}/${id.service_account}`;
