/**
 * Client-side errors of the SDK (spec: "Errors"). The hierarchy is the spec's:
 *
 * ```
 * ServicePolicyError (base for policy denials)
 *   ActionDeniedError
 *   PolicyViolationError
 *   ServiceKillSwitchError
 * Error
 *   BackendUnavailableError
 *   ChainTimeoutError
 *   ChainAutoPausedError
 * ```
 *
 * Plus what the spec's table names without a class of its own: `VerificationError` (the
 * sanitized verification error of verifyPublicToken), `RuntimeError` (McpAdapter.install),
 * `ServiceApiError` for API errors that are not policy outcomes (validation, auth, not found,
 * a completed chain), and `InvalidArgumentError` (a TypeError) for arguments the SDK refuses
 * before anything is sent. No error message or property ever carries the API key, a public token or
 * a payload value.
 */
import type { PolicyDecision } from "./decision.js";

/** Base class of policy denials (spec: ServicePolicyError). */
export class ServicePolicyError extends Error {
  /** The decision that denied, when the backend returned one. */
  readonly decision: PolicyDecision | null;
  constructor(message: string, decision: PolicyDecision | null = null, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.decision = decision;
  }
}

/**
 * The backend's policy denied the action, a reviewer denied it, or the backend marked the
 * approval timed out (spec: ActionDeniedError).
 */
export class ActionDeniedError extends ServicePolicyError {
  /** "backend_evaluation" for policy denials and approval timeouts, "human_approval" for reviewers. */
  readonly decisionSource: string;
  /** Reviewer notes, the timeout text (contains "not resolved within"), or the policy's reason. */
  readonly condition: string;
  /** The matched policy, or null. */
  readonly policyName: string | null;
  constructor(
    decisionSource: string,
    condition: string,
    policyName: string | null,
    decision: PolicyDecision | null,
  ) {
    const by = decisionSource === "human_approval" ? "by a reviewer" : "by policy";
    const what = policyName ? ` (${policyName})` : "";
    super(`Action denied ${by}${what}: ${condition || "no reason given"}`, decision);
    this.decisionSource = decisionSource;
    this.condition = condition;
    this.policyName = policyName;
  }
}

/**
 * A policy condition was violated outside the main evaluation path (spec: PolicyViolationError).
 * Raised when an action is recorded into a chain whose earlier action still awaits approval
 * (service code TG_ERR_APPROVAL_PENDING): the approval gate is still closed.
 */
export class PolicyViolationError extends ServicePolicyError {
  /** The service's error code, e.g. TG_ERR_APPROVAL_PENDING. */
  readonly code: string;
  constructor(message: string, code: string, options?: ErrorOptions) {
    super(message, null, options);
    this.code = code;
  }
}

/** The organization kill switch is active (kill_switch_active true on the decision). */
export class ServiceKillSwitchError extends ServicePolicyError {
  constructor(decision: PolicyDecision) {
    super(
      `The organization kill switch is active: ${decision.decision_reason || "no reason given"}`,
      decision,
    );
  }
}

/** Backend options of {@link BackendUnavailableError}. */
export interface BackendUnavailableDetails {
  /** The action category whose fail mode is deny; null outside action recording. */
  category?: string | null;
  /** The fail_modes key that decided (the category or "default"); null outside action recording. */
  failModeKey?: string | null;
  /** The network error, timeout or HTTP status that made the backend unavailable. */
  cause?: unknown;
}

/**
 * The backend could not be reached and the applicable fail mode is deny (spec:
 * BackendUnavailableError). Nothing is buffered. "Unreachable" means only: connection refused or
 * reset, DNS failure, host/network unreachable, the per-request timeout, or HTTP 502/503/504
 * from a proxy in front of the service. A 500 or any other answer of the service is a
 * ServiceApiError and never reaches the fail modes.
 */
export class BackendUnavailableError extends Error {
  readonly category: string | null;
  readonly failModeKey: string | null;
  constructor(message: string, details: BackendUnavailableDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "BackendUnavailableError";
    this.category = details.category ?? null;
    this.failModeKey = details.failModeKey ?? null;
  }
}

/** The local approval wait window (defaultApprovalTimeoutHours) expired (spec: ChainTimeoutError). */
export class ChainTimeoutError extends Error {
  readonly chainId: string;
  readonly approvalId: string;
  /** The local wait window in hours. */
  readonly timeoutHours: number;
  constructor(chainId: string, approvalId: string, timeoutHours: number) {
    super(
      `Stopped waiting for approval ${approvalId} after ${timeoutHours} h; the approval is still pending on the backend`,
    );
    this.name = "ChainTimeoutError";
    this.chainId = chainId;
    this.approvalId = approvalId;
    this.timeoutHours = timeoutHours;
  }
}

/** The backend halted the chain for a runaway limit (spec: ChainAutoPausedError). */
export class ChainAutoPausedError extends Error {
  readonly chainId: string;
  /** The decision with auto_paused true, or null when the chain had been paused earlier. */
  readonly decision: PolicyDecision | null;
  constructor(chainId: string, reason: string, decision: PolicyDecision | null = null) {
    super(`Chain ${chainId} was auto-paused: ${reason}`);
    this.name = "ChainAutoPausedError";
    this.chainId = chainId;
    this.decision = decision;
  }
}

/**
 * The sanitized verification error of verifyPublicToken: the token is unknown, revoked or
 * otherwise unavailable. It reveals nothing about why and never contains the token.
 */
export class VerificationError extends Error {
  constructor() {
    super("Verification is unavailable for this token");
    this.name = "VerificationError";
  }
}

/** Raised always by McpAdapter.install() (spec: Errors → RuntimeError). */
export class RuntimeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RuntimeError";
  }
}

/**
 * A request to the service failed in transport for a reason that is not unreachability (a TLS
 * or protocol error, a malformed base URL). Not subject to the fail modes: the call fails.
 */
export class ServiceTransportError extends Error {
  /** The network error code (e.g. CERT_HAS_EXPIRED), or null when there is none. */
  readonly code: string | null;
  constructor(message: string, code: string | null, options?: ErrorOptions) {
    super(message, options);
    this.name = "ServiceTransportError";
    this.code = code;
  }
}

/**
 * An API error that is not a policy outcome: every non-2xx answer except 502/503/504 — 4xx
 * validation/auth/not-found/conflict responses, 500 — and malformed responses. Carries the
 * service's error body (`code`, `message`, `details`). Never subject to the fail modes.
 */
export class ServiceApiError extends Error {
  readonly statusCode: number;
  /** Stable service code, e.g. TG_ERR_VALIDATION, TG_ERR_CHAIN_COMPLETED, TG_ERR_NOT_FOUND. */
  readonly code: string;
  readonly details: Record<string, unknown> | null;
  constructor(
    statusCode: number,
    code: string,
    message: string,
    details: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = "ServiceApiError";
    this.statusCode = statusCode;
    this.code = code;
    this.details = details;
  }
}

/** One refused argument of an {@link InvalidArgumentError}. */
export interface ArgumentIssue {
  /**
   * The field as the caller wrote it, dotted from the argument's name, e.g. "action.agentName",
   * "action.agent_name" (an unknown key), "options.signal"; the argument's name alone when the
   * value itself is wrong (e.g. "action" for a string).
   */
  field: string;
  /** What is wrong with it. */
  message: string;
}

/**
 * An SDK call refused its arguments before sending anything (a TypeError, so `instanceof
 * TypeError` still holds); raised by Chain.recordAgentAction (other calls throw a plain TypeError). The message is `operation: field: message` (issues separated by
 * "; "); match on the class and read `operation` and `issues` rather than parsing it.
 */
export class InvalidArgumentError extends TypeError {
  /** The call that refused them: "recordAgentAction". */
  readonly operation: string;
  /** Every refused field, at least one. */
  readonly issues: readonly ArgumentIssue[];
  constructor(operation: string, issues: readonly ArgumentIssue[]) {
    super(`${operation}: ${issues.map((i) => `${i.field}: ${i.message}`).join("; ")}`);
    this.name = "InvalidArgumentError";
    this.operation = operation;
    this.issues = issues;
  }
}
