/**
 * The approval waits of the sidecar's chains. Waits outlive their callers: a call that needs
 * approval becomes the chain's ApprovalWait (approval-wait.ts), polled with its own signal; a
 * retry with the same re-attach key (an idempotency key, else the call's fingerprint) joins
 * it, any other call of the chain gets APPROVAL_PENDING naming the approval and its review URL.
 * An outcome nobody has received yet is kept for `reattachWindowMs` after the approval was
 * resolved; an approval granted while no caller waits forwards nothing until a retry attaches,
 * and one nobody retried is reported as not forwarded.
 *
 * A retry can also name the approval of a chain this process does not hold (an MCP
 * `requestState` issued by another replica, or before a restart): `adopt` checks the call
 * against the service's record of the approval's event, waits for the approval at the service
 * and forwards once for all the retries that adopted it here.
 */
import {
  type ChainConfig,
  type ChainEvent,
  type ChainView,
  type PendingApproval,
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
  /** Approvals of chains held elsewhere that retries adopted here, by approval id. */
  readonly #adopted = new Map<string, Adopted>();
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

  /**
   * A retry of the call whose approval `approvalId` belongs to chain `chainId`, which this
   * process does not hold (opened by another replica, or before a restart). The service's record
   * of the approval's event must be this call (agent, parent, type, name, payload) and have no
   * outcome yet, in a chain not completed; then the approval is waited for at the service and,
   * granted, forwarded once for every retry that adopted it here.
   * @throws GatewayError INVALID_ARGUMENT (field requestState) when the event is another call;
   *   NOT_FOUND when the approval is unknown, its call already has an outcome or its chain is
   *   completed; the signal's reason when `signal` aborts (the adoption stays for a retry within
   *   the re-attach window); whatever the wait or the forward throws.
   */
  async adopt(
    chainId: string,
    approvalId: string,
    input: InvokeInput,
    signal: AbortSignal,
    forward: Forward,
  ): Promise<InvokeResult> {
    let a = this.#adopted.get(approvalId);
    if (!a) {
      const controller = new AbortController();
      a = {
        controller,
        decided: this.#gateOf(chainId, approvalId, input, controller.signal).then((gate) =>
          waitForApproval(this.#client, this.#config, gate, controller.signal),
        ),
        forwarding: null,
        attached: 0,
      };
      a.decided.catch(() => undefined);
      this.#adopted.set(approvalId, a);
    }
    const adopted = a;
    adopted.attached++;
    try {
      const decision = await untilSettledOrAborted(adopted.decided, signal);
      if (!adopted.forwarding) {
        if (signal.aborted) throw signal.reason;
        adopted.forwarding = forward(input, decision, adopted.controller.signal);
      }
      const result = await untilSettledOrAborted(adopted.forwarding, signal);
      this.#adopted.delete(approvalId);
      return result;
    } catch (err) {
      if (!(signal.aborted && err === signal.reason)) this.#adopted.delete(approvalId);
      throw err;
    } finally {
      adopted.attached--;
      if (adopted.attached === 0 && this.#adopted.get(approvalId) === adopted) {
        const timer = setTimeout(() => {
          if (adopted.attached > 0 || adopted.forwarding) return;
          adopted.controller.abort(new GatewayError(ErrorCode.CANCELLED, "nobody retried the call"));
          this.#adopted.delete(approvalId);
        }, this.#options.reattachWindowMs);
        timer.unref();
      }
    }
  }

  /** The approval gate of an adopted retry, checked against the service's record (see adopt). */
  async #gateOf(
    chainId: string,
    approvalId: string,
    input: InvokeInput,
    signal: AbortSignal,
  ): Promise<PendingApproval> {
    const gone = (why: string) =>
      new GatewayError(
        ErrorCode.NOT_FOUND,
        `requestState: approval ${approvalId} ${why}; call again to ask anew`,
      );
    const chain = await this.#client.getChain(chainId, { signal });
    const event = chain.events.find((e) => e.approval_id === approvalId);
    if (!event) throw gone("is not in its chain");
    const recorded: InvokeInput = {
      ...input,
      agentName: event.agent_name,
      parentAgentName: event.parent_agent_name,
      actionType: event.action_type,
      actionName: event.action_name,
      payload: event.payload as InvokeInput["payload"],
      upstream: typeof chain.metadata.upstream === "string" ? chain.metadata.upstream : null,
    };
    if (fingerprintOf(recorded) !== fingerprintOf(input))
      throw invalidArgument("requestState", "names the approval of another call");
    if (isDone(chain, event))
      throw gone("has no wait any more (its call has an outcome, or its chain is completed)");
    return {
      chainId,
      approvalId,
      eventId: event.event_id,
      sequence: event.sequence,
      category: event.category,
    };
  }

  /**
   * True when the service shows the call of approval `approvalId` done with: its event has an
   * outcome or its chain is completed (e.g. another replica adopted and forwarded it).
   * @throws the service client's errors
   */
  async doneAtService(chainId: string, approvalId: string): Promise<boolean> {
    const chain = await this.#client.getChain(chainId);
    const event = chain.events.find((e) => e.approval_id === approvalId);
    return !event || isDone(chain, event);
  }

  /** Aborts every wait with SHUTTING_DOWN (end of a drain): nothing more is forwarded. */
  abortAll(): void {
    for (const w of this.#waits) w.abort(shuttingDown());
    for (const a of this.#adopted.values()) a.controller.abort(shuttingDown());
  }

  /** Aborts every wait no caller is attached to (end of a drain). */
  abortDetached(): void {
    for (const w of this.#waits) if (w.attached === 0) w.abort(shuttingDown());
    for (const a of this.#adopted.values()) if (a.attached === 0) a.controller.abort(shuttingDown());
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

/** An approval of a chain held elsewhere, adopted by retries here. */
interface Adopted {
  /** Aborts the wait (and a forward started for it) when nobody retries or at shutdown. */
  controller: AbortController;
  decided: Promise<PolicyDecision>;
  /** The one forward, once an attached retry claimed it. */
  forwarding: Promise<InvokeResult> | null;
  /** Retries waiting now. */
  attached: number;
}

/** The service's record shows the event's call done with: an outcome, or its chain completed. */
const isDone = (chain: ChainView, event: ChainEvent): boolean =>
  event.outcome != null || chain.status === "completed" || chain.status === "failed";
