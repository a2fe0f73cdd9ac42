/**
 * One approval gate the sidecar waits on, apart from the callers that wait for it
 * (docs: README "How each kind of client waits"; spec: "States and transitions",
 * pending_approval rows).
 *
 * A governed call whose decision is require_approval becomes an ApprovalWait: the sidecar polls
 * the service for the approval (SDK waitForApproval) with its own AbortSignal, so a caller that
 * goes away (gRPC deadline, MCP request timeout, a dropped connection) only detaches; a retry of
 * the same call (same idempotency key, or the same fingerprint) attaches again and gets the
 * final outcome. Callers subscribe to status updates (pending → approved | denied | timed_out |
 * cancelled | failed) for progress notifications and the gRPC WatchInvoke stream.
 *
 * The forward to the upstream happens at most once, and only for an attached caller (or a task,
 * which stays attached): an approval granted while nobody waits is held until a retry attaches
 * or the re-attach window passes (then nothing is forwarded). Withdrawing (MCP tasks/cancel,
 * chain completion, shutdown) aborts the wait; a withdrawn call is never forwarded.
 */
import { ActionDeniedError, ChainTimeoutError, type PolicyDecision } from "../../src/sdk/index.js";
import { ErrorCode, GatewayError, toGatewayError } from "../wire/errors.js";

/** Where an approval wait stands. */
export const WaitStatus = {
  pending: "pending",
  approved: "approved",
  denied: "denied",
  timed_out: "timed_out",
  cancelled: "cancelled",
  failed: "failed",
} as const;
export type WaitStatus = (typeof WaitStatus)[keyof typeof WaitStatus];

/** One status report of a wait (MCP progress message, gRPC ApprovalUpdate). */
export interface WaitUpdate {
  approvalId: string;
  status: WaitStatus;
  /** Absolute URL of the dashboard page where a human decides. */
  reviewUrl: string;
  policyName: string | null;
  /** Why the action needs approval (pending) or how it was resolved. */
  reason: string;
  /** Milliseconds since the wait started. */
  waitedMs: number;
}

/** What identifies the gate and the call behind it. */
export interface WaitInit {
  /** Re-attach key: "key:<idempotency key>" or "fp:<call fingerprint>". */
  key: string;
  /** SHA-256 of the call (agent, type, name, payload, upstream): a key must not change calls. */
  fingerprint: string;
  chainId: string;
  /** The require_approval decision (approval_id and event_id set). */
  decision: PolicyDecision;
  reviewUrl: string;
  /** Clock in ms (injected for tests). */
  now: () => number;
}

/** See the module comment. */
export class ApprovalWait {
  readonly key: string;
  readonly fingerprint: string;
  readonly chainId: string;
  readonly approvalId: string;
  readonly eventId: string;
  readonly reviewUrl: string;
  readonly policyName: string | null;
  readonly requested: PolicyDecision;
  readonly startedAt: number;
  /** Resolves to the approved decision; rejects with a GatewayError carrying the approval context. */
  readonly decided: Promise<PolicyDecision>;
  status: WaitStatus = WaitStatus.pending;
  #reason: string;
  /** The one forward to the upstream, once an attached caller claimed it. */
  forwarding: Promise<unknown> | null = null;
  /** Callers waiting now. */
  attached = 0;
  /** An outcome reached a caller: the wait is done with. */
  delivered = false;
  readonly #controller = new AbortController();
  readonly #listeners = new Set<(u: WaitUpdate) => void>();
  readonly #now: () => number;

  /**
   * @param wait polls the service until the approval is resolved (rejects with the SDK's errors,
   *   or the signal's reason when withdrawn).
   */
  constructor(init: WaitInit, wait: (signal: AbortSignal) => Promise<PolicyDecision>) {
    this.key = init.key;
    this.fingerprint = init.fingerprint;
    this.chainId = init.chainId;
    this.approvalId = init.decision.approval_id!;
    this.eventId = init.decision.event_id!;
    this.reviewUrl = init.reviewUrl;
    this.policyName = init.decision.policy_name;
    this.requested = init.decision;
    this.#reason = init.decision.decision_reason;
    this.#now = init.now;
    this.startedAt = init.now();
    this.decided = wait(this.#controller.signal).then(
      (decision) => {
        this.#settle(WaitStatus.approved, decision.decision_reason || "approved");
        return decision;
      },
      (err: unknown) => {
        const e = toGatewayError(err).withContext(this.context());
        this.#settle(statusOf(err), e.message);
        throw e;
      },
    );
    this.decided.catch(() => undefined); // observed by callers; never an unhandled rejection
  }

  /** Aborted when the wait is withdrawn; a forward started for the wait runs under it. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Still waiting for a human. */
  get pending(): boolean {
    return this.status === WaitStatus.pending;
  }

  /** The approval facts for errors (ErrorInfo metadata, MCP `_meta`). */
  context(): { approvalId: string; reviewUrl: string; policyName: string | null } {
    return { approvalId: this.approvalId, reviewUrl: this.reviewUrl, policyName: this.policyName };
  }

  /** The current status report. */
  update(): WaitUpdate {
    return {
      approvalId: this.approvalId,
      status: this.status,
      reviewUrl: this.reviewUrl,
      policyName: this.policyName,
      reason: this.#reason,
      waitedMs: this.#now() - this.startedAt,
    };
  }

  /** Calls `fn` with the current status now and with every change; returns the unsubscribe. */
  subscribe(fn: (u: WaitUpdate) => void): () => void {
    this.#listeners.add(fn);
    fn(this.update());
    return () => this.#listeners.delete(fn);
  }

  /**
   * Stops waiting: callers get `reason` (a GatewayError, e.g. CANCELLED or SHUTTING_DOWN).
   * Returns false when it is too late: the approval was granted and the forward has started.
   */
  withdraw(reason: GatewayError): boolean {
    if (this.forwarding) return false;
    this.#controller.abort(reason.withContext(this.context()));
    return true;
  }

  /** Shutdown: stops the wait and a forward in progress (the caller is gone for good). */
  abort(reason: GatewayError): void {
    this.#controller.abort(reason.withContext(this.context()));
  }

  #settle(status: WaitStatus, reason: string): void {
    if (this.status !== WaitStatus.pending) return;
    this.status = status;
    this.#reason = reason;
    const u = this.update();
    for (const fn of this.#listeners) fn(u);
  }
}

/** The wait status an error of the wait stands for. */
function statusOf(err: unknown): WaitStatus {
  if (err instanceof ChainTimeoutError) return WaitStatus.timed_out;
  if (err instanceof ActionDeniedError) {
    return err.condition.includes("not resolved within") ? WaitStatus.timed_out : WaitStatus.denied;
  }
  if (
    err instanceof GatewayError &&
    (err.code === ErrorCode.CANCELLED || err.code === ErrorCode.SHUTTING_DOWN)
  )
    return WaitStatus.cancelled;
  return WaitStatus.failed;
}

/**
 * The error of a call refused because another call of the chain waits for approval: names the
 * approval and where to decide it.
 */
export function approvalPendingError(w: ApprovalWait): GatewayError {
  return new GatewayError(
    ErrorCode.APPROVAL_PENDING,
    `another call of this chain waits for approval ${w.approvalId} (review it at ${w.reviewUrl}); ` +
      "retry the same call to wait for it, or call again once it is decided",
    w.requested,
    w.context(),
  );
}

/**
 * Waits for `p`, or rejects with the signal's reason as soon as it aborts (the promise itself
 * goes on: this only detaches the caller).
 */
export function untilSettledOrAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
