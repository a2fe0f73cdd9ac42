/**
 * The error codes of the service's HTTP API (README "Errors"): every error body is
 * `{ statusCode, code, error, message, details? }` and `code` is one of these. The service raises
 * them, the SDK and the sidecar match on them; nobody writes the strings by hand.
 */

/** `code` of an HTTP API error body, by meaning. */
export const ApiErrorCode = {
  /** 400: a field failed validation; `details.issues` names each one. */
  VALIDATION: "TG_ERR_VALIDATION",
  /** 401: no credentials, or the API key/session is invalid or revoked. */
  UNAUTHENTICATED: "TG_ERR_UNAUTHENTICATED",
  /** 403: the principal may not do this. */
  FORBIDDEN: "TG_ERR_FORBIDDEN",
  /** 403: the dashboard form's CSRF token is missing or wrong. */
  CSRF: "TG_ERR_CSRF",
  /** 404: the resource (or route) does not exist for this principal. */
  NOT_FOUND: "TG_ERR_NOT_FOUND",
  /** 409: the chain is completed or failed and accepts no further actions. */
  CHAIN_COMPLETED: "TG_ERR_CHAIN_COMPLETED",
  /** 409: an earlier action of the chain still awaits approval. */
  APPROVAL_PENDING: "TG_ERR_APPROVAL_PENDING",
  /** 409: the chain was auto-paused by a runaway limit. */
  CHAIN_PAUSED: "TG_ERR_CHAIN_PAUSED",
  /** 409: the approval was already decided, timed out or withdrawn. */
  APPROVAL_RESOLVED: "TG_ERR_APPROVAL_RESOLVED",
  /** 409: the event already has an outcome. */
  OUTCOME_RECORDED: "TG_ERR_OUTCOME_RECORDED",
  /** 409: an outcome for an action that was not allowed. */
  ACTION_NOT_ALLOWED: "TG_ERR_ACTION_NOT_ALLOWED",
  /** 409: the state changed under the write several times in a row (e.g. the organization's policy); retry. */
  CONFLICT: "TG_ERR_CONFLICT",
  /** 409: the resource is managed by the operator (custom resources) and read-only here. */
  MANAGED: "TG_ERR_MANAGED",
  /** 429: too many attempts (public verification). */
  RATE_LIMITED: "TG_ERR_RATE_LIMITED",
  /** 404: the public verification link does not verify (the one sanitized answer, no details). */
  VERIFICATION_UNAVAILABLE: "TG_ERR_VERIFICATION_UNAVAILABLE",
  /** 503: a workload token could not be reviewed now (the Kubernetes API server is unreachable); retry. */
  IDENTITY_UNAVAILABLE: "TG_ERR_IDENTITY_UNAVAILABLE",
  /** 4xx raised by the HTTP framework itself (e.g. an unsupported media type). */
  REQUEST: "TG_ERR_REQUEST",
  /** 5xx: an internal error; the body carries nothing else. */
  INTERNAL: "TG_ERR_INTERNAL",
  /** Raised by the client libraries, never sent by the service: a response broke the contract. */
  BAD_RESPONSE: "TG_ERR_BAD_RESPONSE",
} as const;
export type ApiErrorCode = (typeof ApiErrorCode)[keyof typeof ApiErrorCode];
