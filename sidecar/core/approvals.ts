/**
 * The approval waits of the sidecar's chains. Waits outlive their callers: a call that needs
 * approval becomes the chain's ApprovalWait (approval-wait.ts), polled with its own signal; a
 * retry with the same re-attach key (an idempotency key, else the call's fingerprint) joins
 * it, any other call of the chain gets APPROVAL_PENDING naming the approval and its review URL.
 * An outcome nobody has received yet is kept for `reattachWindowMs` after the approval was
 * resolved; an approval granted while no caller waits forwards nothing until a retry attaches,
 * and one nobody retried is reported as not forwarded.
 */
import {
  type ChainConfig,
  type PolicyDecision,
  type ServiceClient,
  waitForApproval,
} from "../../src/sdk/index.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { ErrorCode, GatewayError, invalidArgument } from "../wire/errors.js";
import type { InvokeInput } from "../wire/validate.js";
import {
  ApprovalWait,
  approvalPendingError,
  untilSettledOrAborted,
  type WaitUpdate,
} from "./approval-wait.js";
import type { ChainEntry } from "./chains.js";
import { shuttingDown } from "./drain.js";
import { fingerprintOf } from "./fingerprint.js";
import type { InvokeResult } from "./forwarder.js";
import type { OutcomeReporter } from "./outcome-reporter.js";

/** Where the sidecar's wait URLs point and how long an unclaimed outcome is kept. */
export interface ApprovalWaitOptions {
  /** The dashboard page of an approval (absolute URL). */
  reviewUrl: (approvalId: string) => string;
  /** ms an outcome nobody received yet is kept for a retry after the approval was resolved. */
  reattachWindowMs: number;
}

/** Forwards the call of a wait once its approval is granted (the Forwarder). */
export type Forward = (
  input: InvokeInput,
  decision: PolicyDecision,
  signal: AbortSignal,
) => Promise<InvokeResult>;

/** See the module comment. */
export class ApprovalWaits {
  /** Approval waits alive (pending, or holding an outcome nobody received yet). */
  readonly #waits = new Set<ApprovalWait>();
  readonly #client: ServiceClient;
  readonly #config: ChainConfig;
  readonly #options: ApprovalWaitOptions;
  readonly #outcomes: OutcomeReporter;
  readonly #metrics: Metrics;
  readonly #log: Logger;

  constructor(o: {
    client: ServiceClient;
    config: ChainConfig;
    options: ApprovalWaitOptions;
    outcomes: OutcomeReporter;
    metrics: Metrics;
    log: Logger;
  }) {
    this.#client = o.client;
    this.#config = o.config;
    this.#options = o.options;
    this.#outcomes = o.outcomes;
    this.#metrics = o.metrics;
    this.#log = o.log;
  }

  /** Waits whose approval is still pending. */
  get pending(): number {
    return [...this.#waits].filter((w) => w.pending).length;
  }

  /**
   * Clears the way for a new call of the chain with re-attach key `key`: returns the chain's
   * wait when the call is its retry, else null (a resolved wait nobody received is dropped).
   * @throws GatewayError APPROVAL_PENDING when another call of the chain waits for approval.
   */
  claim(entry: ChainEntry, key: string): ApprovalWait | null {
    const held = entry.wait;
    if (!held) return null;
    if (held.key === key) return held;
    if (held.pending) throw approvalPendingError(held);
    this.#drop(entry, held, "another call of the chain came first");
    return null;
  }

  /** Makes `decision` (require_approval) the chain's ApprovalWait and starts polling for it. */
  start(entry: ChainEntry, input: InvokeInput, key: string, decision: PolicyDecision): ApprovalWait {
    const chainId = input.chainId;
    const w = new ApprovalWait(
      {
        key,
        fingerprint: fingerprintOf(input),
        chainId,
        decision,
        reviewUrl: this.#options.reviewUrl(decision.approval_id!),
        now: Date.now,
      },
      (signal) =>
        waitForApproval(
          this.#client,
          this.#config,
          {
            chainId,
            approvalId: decision.approval_id!,
            eventId: decision.event_id!,
            sequence: decision.sequence ?? null,
            category: decision.category,
          },
          signal,
        ),
    );
    entry.wait = w;
    this.#waits.add(w);
    const observe = (result: string) =>
      this.#metrics.approvalWait.observe({ result }, (Date.now() - w.startedAt) / 1000);
    w.decided.then(
      () => observe("approved"),
      () => observe(w.status === "cancelled" ? "abandoned" : "denied"),
    );
    this.#log.info({ chainId, approvalId: w.approvalId, reviewUrl: w.reviewUrl }, "call waits for approval");
    return w;
  }

  /**
   * Waits with `w` until its outcome, then forwards (once for all its callers, under the wait's
   * own signal, so that a forward started for a caller who then left still finishes for a retry).
   * @throws GatewayError INVALID_ARGUMENT when the key was used for a different call; the
   *   signal's reason when `signal` aborts (the wait stays for a retry); whatever the wait or
   *   the forward throws.
   */
  async attach(
    entry: ChainEntry,
    w: ApprovalWait,
    input: InvokeInput,
    signal: AbortSignal,
    onWait: ((update: WaitUpdate) => void) | undefined,
    forward: Forward,
  ): Promise<InvokeResult> {
    if (w.fingerprint !== fingerprintOf(input))
      throw invalidArgument("idempotency_key", "was already used for a different call of this chain");
    w.attached++;
    const unsubscribe = onWait ? w.subscribe(onWait) : null;
    try {
      const decision = await untilSettledOrAborted(w.decided, signal);
      if (!w.forwarding) {
        if (signal.aborted) throw signal.reason;
        w.forwarding = forward(input, decision, w.signal);
      }
      const result = await untilSettledOrAborted(w.forwarding as Promise<InvokeResult>, signal);
      this.#delivered(entry, w);
      return result;
    } catch (err) {
      if (!(signal.aborted && err === signal.reason)) this.#delivered(entry, w);
      throw err;
    } finally {
      w.attached--;
      unsubscribe?.();
      if (w.attached === 0 && !w.delivered) this.#expireLater(entry, w);
    }
  }

  /**
   * Withdraws the chain's wait with re-attach key `key`: it is never forwarded, its callers get
   * CANCELLED with `reason`. Returns the approval id, or null when there is no such wait or its
   * forward has started.
   */
  withdraw(entry: ChainEntry, key: string, reason: string): string | null {
    const w = entry.wait;
    if (!w || w.key !== key) return null;
    if (!w.withdraw(new GatewayError(ErrorCode.CANCELLED, reason))) return null;
    this.#release(entry, w);
    return w.approvalId;
  }

  /**
   * The chain is being completed: its wait is withdrawn, or, when its forward has started,
   * that forward is awaited.
   */
  async closing(entry: ChainEntry): Promise<void> {
    const w = entry.wait;
    if (!w) return;
    if (w.withdraw(new GatewayError(ErrorCode.CANCELLED, "the chain was completed while the call waited")))
      this.#release(entry, w);
    else if (w.forwarding) await w.forwarding.catch(() => undefined);
  }

  /** Aborts every wait with SHUTTING_DOWN (end of a drain): nothing more is forwarded. */
  abortAll(): void {
    for (const w of this.#waits) w.abort(shuttingDown());
  }

  /** Aborts every wait no caller is attached to (end of a drain). */
  abortDetached(): void {
    for (const w of this.#waits) if (w.attached === 0) w.abort(shuttingDown());
  }

  /** The outcome reached a caller: the chain is free for its next call. */
  #delivered(entry: ChainEntry, w: ApprovalWait): void {
    w.delivered = true;
    this.#release(entry, w);
  }

  #release(entry: ChainEntry, w: ApprovalWait): void {
    if (entry.wait === w) entry.wait = null;
    this.#waits.delete(w);
  }

  /** Drops `w` `reattachWindowMs` after its approval was resolved if nobody received its outcome. */
  #expireLater(entry: ChainEntry, w: ApprovalWait): void {
    void w.decided
      .catch(() => undefined)
      .then(() => {
        const timer = setTimeout(() => {
          if (w.delivered || w.attached > 0 || entry.wait !== w) return;
          this.#drop(entry, w, "nobody retried the call within the re-attach window");
        }, this.#options.reattachWindowMs);
        timer.unref();
      });
  }

  /**
   * Forgets a wait nobody will receive. An approval that was granted but never forwarded gets an
   * outcome saying so (error class NotForwarded), so the receipt shows the call did not run.
   */
  #drop(entry: ChainEntry, w: ApprovalWait, why: string): void {
    this.#release(entry, w);
    if (w.status === "approved" && !w.forwarding) {
      w.withdraw(new GatewayError(ErrorCode.CANCELLED, why));
      this.#log.info({ chainId: w.chainId, approvalId: w.approvalId }, `approved call not forwarded: ${why}`);
      this.#outcomes.report(entry.chainId, w.eventId, {
        status: "error",
        error_class: "NotForwarded",
        duration_ms: 0,
        result_sha256: null,
      });
    }
  }
}
