/**
 * The core of the sidecar, shared by the gRPC and MCP faces: one governed invocation = record
 * the action through the SDK (the service decides), in the chain's decision queue → on
 * require_approval, wait for the human (approvals.ts) → forward an allowed call to the upstream
 * (forwarder.ts) → report the outcome to the service in the background (outcome-reporter.ts).
 *
 * The parts, one job each: the chain registry (chains.ts), the per-chain decision queue
 * (decision-queue.ts), the approval waits (approvals.ts, approval-wait.ts), the forwarder, the
 * outcome reports, and the calls in flight for the drain (drain.ts). Completing a chain first
 * waits for its outcome reports, so the receipt shows every outcome the service accepted.
 */
import { performance } from "node:perf_hooks";
import {
  BackendUnavailableError,
  Chain,
  type ChainConfig,
  type CompleteResult,
  type PolicyDecision,
  type Receipt,
  recordedDecision,
  ServiceClient,
} from "../../src/sdk/index.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Upstream } from "../upstreams/index.js";
import { ErrorCode, GatewayError, toGatewayError } from "../wire/errors.js";
import type { JsonObject } from "../wire/struct.js";
import type { InvokeInput } from "../wire/validate.js";
import { ApprovalWait, type WaitUpdate } from "./approval-wait.js";
import { type ApprovalWaitOptions, ApprovalWaits } from "./approvals.js";
import { type ChainEntry, ChainRegistry } from "./chains.js";
import { InflightCalls } from "./drain.js";
import { reattachKey } from "./fingerprint.js";
import { Forwarder, type InvokeResult } from "./forwarder.js";
import { OutcomeReporter } from "./outcome-reporter.js";

export type { ApprovalWaitOptions, InvokeResult };

/** Which surface an invocation came through (metrics label). */
export type Surface = "grpc" | "mcp";

/** Options of one invocation. */
export interface InvokeOptions {
  /**
   * The caller's idempotency key: a retry with the same key re-attaches to the call's pending
   * approval. Without one, the call's fingerprint (agent, type, name, payload, upstream) is the key.
   */
  idempotencyKey?: string | null;
  /** Called with the approval's status now and on every change while the call waits. */
  onWait?: (update: WaitUpdate) => void;
}

/** See the module comment. */
export class Governor {
  readonly #config: ChainConfig;
  readonly #client: ServiceClient;
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #chains = new ChainRegistry();
  readonly #inflight = new InflightCalls();
  readonly #outcomes: OutcomeReporter;
  readonly #forwarder: Forwarder;
  readonly #waits: ApprovalWaits;

  constructor(opts: {
    sdkConfig: ChainConfig;
    upstreams: ReadonlyMap<string, Upstream>;
    metrics: Metrics;
    log: Logger;
    approvals?: Partial<ApprovalWaitOptions>;
  }) {
    this.#config = opts.sdkConfig;
    this.#client = ServiceClient.fromConfig(opts.sdkConfig);
    this.#metrics = opts.metrics;
    this.#log = opts.log;
    this.#outcomes = new OutcomeReporter(this.#client, opts.metrics, opts.log);
    this.#forwarder = new Forwarder(opts.upstreams, this.#outcomes, opts.metrics, opts.log);
    this.#waits = new ApprovalWaits({
      client: this.#client,
      config: opts.sdkConfig,
      options: {
        reviewUrl:
          opts.approvals?.reviewUrl ?? ((id) => `${opts.sdkConfig.backendUrl}/dashboard/approvals#${id}`),
        reattachWindowMs: opts.approvals?.reattachWindowMs ?? 600_000,
      },
      outcomes: this.#outcomes,
      metrics: opts.metrics,
      log: opts.log,
    });
    opts.metrics.sources.openChains = () => this.#chains.size;
    opts.metrics.sources.approvalWaits = () => this.#waits.pending;
  }

  /** Calls in flight (gRPC Invoke and MCP tools/call). */
  get inflight(): number {
    return this.#inflight.size;
  }

  /** Chains opened here and not yet completed. */
  get openChains(): number {
    return this.#chains.size;
  }

  /** Counts an invocation refused for bad input before it reached the service. */
  countInvalid(surface: Surface): void {
    this.#metrics.invocations.inc({ decision: "invalid_argument", surface });
  }

  /**
   * Opens a chain at the service.
   * @throws GatewayError (BACKEND_UNAVAILABLE when the service is unreachable: a chain cannot
   *   exist without it; INVALID_ARGUMENT; INTERNAL).
   */
  async openChain(name: string, metadata: JsonObject, controller: AbortController): Promise<string> {
    return this.#inflight.track(controller, async () => {
      const chain = new Chain(name, { metadata, config: this.#config });
      try {
        await chain.enter({ signal: controller.signal });
      } catch (err) {
        throw this.#fail(err, "OpenChain");
      }
      return this.#chains.add(chain).chainId;
    });
  }

  /**
   * One governed invocation (see the module comment). `controller` is the caller's: abort it
   * with a GatewayError reason (DEADLINE_EXCEEDED, CANCELLED) to stop waiting; nothing is
   * forwarded once it is aborted. While the call waits for approval, aborting only detaches
   * the caller (the approval stays pending for a retry with the same key).
   * @throws GatewayError for every way the call can fail (wire/errors.ts); APPROVAL_PENDING
   *   (with the approval id and review URL) when another call of the chain waits for approval;
   *   INVALID_ARGUMENT when the idempotency key was used for a different call.
   */
  async invoke(
    input: InvokeInput,
    controller: AbortController,
    surface: Surface,
    options: InvokeOptions = {},
  ): Promise<InvokeResult> {
    return this.#counted(controller, surface, () => this.#invoke(input, controller.signal, options));
  }

  /** Runs one invocation in flight, counted by its decision (or refusal) and surface. */
  #counted(
    controller: AbortController,
    surface: Surface,
    run: () => Promise<InvokeResult>,
  ): Promise<InvokeResult> {
    return this.#inflight.track(controller, async () => {
      try {
        const result = await run();
        this.#metrics.invocations.inc({ decision: result.decision.policy_decision, surface });
        return result;
      } catch (err) {
        const e = this.#fail(err, "Invoke");
        this.#metrics.invocations.inc({ decision: e.result, surface });
        throw e;
      }
    });
  }

  /**
   * A retry of the call waiting for approval `approvalId` in chain `chainId`, a chain this
   * process does not hold (opened by another replica of the pod template, or before a restart):
   * checked against the service's record, waited for there, forwarded once (approvals.ts
   * `adopt`). `controller` as for invoke: aborting it detaches the caller.
   * @throws GatewayError as invoke; INVALID_ARGUMENT (requestState) when the approval is another
   *   call's; NOT_FOUND when its call has an outcome already or its chain is completed.
   */
  async adopt(
    chainId: string,
    approvalId: string,
    input: InvokeInput,
    controller: AbortController,
    surface: Surface,
  ): Promise<InvokeResult> {
    const forward = this.#forwarder.forward.bind(this.#forwarder);
    return this.#counted(controller, surface, () =>
      this.#waits.adopt(chainId, approvalId, input, controller.signal, forward),
    );
  }

  /**
   * For a retry of a call whose wait here was resolved while nobody was attached (a modern-era
   * call another replica may have adopted): true when the service shows the call done with (its
   * event has an outcome, or its chain is completed); the wait is then dropped here, nothing
   * forwarded and nothing reported. False otherwise (then the retry re-attaches here).
   * @throws GatewayError BACKEND_UNAVAILABLE and others when the service cannot tell.
   */
  async doneElsewhere(chainId: string, approvalId: string): Promise<boolean> {
    const entry = this.#chains.find(chainId);
    const w = entry?.wait;
    if (!entry || !w || w.approvalId !== approvalId || w.pending || w.forwarding) return false;
    try {
      if (!(await this.#waits.doneAtService(chainId, approvalId))) return false;
    } catch (err) {
      throw this.#fail(err, "GetChain");
    }
    this.#waits.withdraw(entry, w.key, "the call was done with at another replica");
    return true;
  }

  /**
   * The first of `chainIds` that holds the wait of the call `input` (same fingerprint; pending,
   * or resolved with an outcome nobody received yet), or null: that call, made again in that
   * chain, re-attaches to it. `input.chainId` is not part of the fingerprint.
   */
  chainHolding(chainIds: Iterable<string>, input: InvokeInput): string | null {
    const key = reattachKey(input, null);
    for (const chainId of chainIds) if (this.#chains.find(chainId)?.wait?.key === key) return chainId;
    return null;
  }

  /**
   * Withdraws the call of `chainId` with re-attach key `idempotencyKey` (or fingerprint of
   * `input`) that waits for approval: it is never forwarded, its callers get CANCELLED.
   * Returns the id of the approval it waited for, or null when there is no such wait or its
   * forward has started. The approval itself stays pending at the service: see withdrawApproval.
   */
  withdraw(
    chainId: string,
    input: InvokeInput,
    idempotencyKey: string | null,
    reason: string,
  ): string | null {
    const entry = this.#chains.find(chainId);
    return entry ? this.#waits.withdraw(entry, reattachKey(input, idempotencyKey), reason) : null;
  }

  /**
   * Withdraws a pending approval at the service (POST /v1/approvals/{id}/withdraw), so that no
   * reviewer can decide a call nobody waits for any more. Best effort: a failure is logged (the
   * approval then times out as usual; the call was withdrawn here either way).
   */
  async withdrawApproval(approvalId: string, reason: string): Promise<void> {
    try {
      await this.#client.withdrawApproval(approvalId, reason);
    } catch (err) {
      this.#log.warn(
        { approval_id: approvalId, err: (err as Error).message },
        "withdrawing the approval failed",
      );
    }
  }

  /**
   * True while the chain `chainId` holds the wait of approval `approvalId` (pending, or resolved
   * with an outcome nobody received yet): a retry of its call would re-attach, not decide anew.
   */
  holdsWait(chainId: string, approvalId: string): boolean {
    return this.#chains.find(chainId)?.wait?.approvalId === approvalId;
  }

  /** True while a call of `chainId` waits for a human. */
  waitsForApproval(chainId: string): boolean {
    return this.#chains.find(chainId)?.wait?.pending ?? false;
  }

  async #invoke(input: InvokeInput, signal: AbortSignal, options: InvokeOptions): Promise<InvokeResult> {
    const entry = this.#chains.get(input.chainId);
    // The re-attach key (a canonical JSON and a SHA-256 of the payload without an idempotency
    // key) is only read when the chain holds a wait or the call needs approval: computed then.
    let key: string | null = null;
    const keyOf = () => (key ??= reattachKey(input, options.idempotencyKey ?? null));
    const decided = await this.#decide(entry, input, keyOf, signal);
    const forward = this.#forwarder.forward.bind(this.#forwarder);
    if (decided instanceof ApprovalWait)
      return this.#waits.attach(entry, decided, input, signal, options.onWait, forward);
    return forward(input, decided, signal);
  }

  /**
   * The decision phase, queued behind the chain's earlier ones. Returns the decision of an
   * allowed call, or the ApprovalWait to attach to: a new one when the call needs approval, the
   * chain's existing one when this call is its retry (same re-attach key).
   * @throws APPROVAL_PENDING when another call of the chain waits for approval.
   */
  #decide(
    entry: ChainEntry,
    input: InvokeInput,
    keyOf: () => string,
    signal: AbortSignal,
  ): Promise<PolicyDecision | ApprovalWait> {
    const started = performance.now();
    return entry.queue.run(signal, async () => {
      const retried = entry.wait ? this.#waits.claim(entry, keyOf()) : null;
      if (retried) return retried;
      const decision = await entry.chain
        .recordAgentAction(
          {
            agentName: input.agentName,
            actionType: input.actionType,
            actionName: input.actionName,
            payload: input.payload,
            parentAgentName: input.parentAgentName,
          },
          { signal, awaitApproval: false },
        )
        .catch((err: unknown) => {
          // The SDK names the fail_modes key only when a deny fail mode refused the action.
          if (err instanceof BackendUnavailableError && err.failModeKey !== null)
            this.#metrics.failModes.inc({ mode: "deny" });
          throw err;
        });
      if (decision.decision_source === "fail_mode") this.#metrics.failModes.inc({ mode: "allow" });
      if (decision.policy_decision === "require_approval")
        return this.#waits.start(entry, input, keyOf(), decision);
      this.#metrics.decisionDuration.observe((performance.now() - started) / 1000);
      return decision;
    });
  }

  /**
   * Seals a chain (marked with `failure` when given) and returns its receipt facts. Waits for
   * the chain's in-flight outcome reports first. A chain opened elsewhere is completed through
   * the service directly.
   * @throws GatewayError (CHAIN_COMPLETED, NOT_FOUND, BACKEND_UNAVAILABLE, ...).
   */
  async completeChain(
    chainId: string,
    failure: { mode: string; message: string } | null,
    controller: AbortController,
  ): Promise<CompleteResult> {
    return this.#inflight.track(controller, async () => {
      const entry = this.#chains.find(chainId);
      try {
        if (!entry) {
          await this.#outcomes.settled(chainId); // e.g. the outcome of an adopted retry
          const r = await this.#client.completeChain(chainId, failure ? { failure } : {}, {
            signal: controller.signal,
          });
          this.#chains.completed(chainId);
          return {
            chain_id: r.chain_id,
            status: r.status,
            receipt_id: r.receipt_id,
            receipt_number: r.receipt_number,
          };
        }
        await this.#waits.closing(entry);
        await this.#outcomes.settled(chainId);
        const result = await entry.chain.exit(
          failure ? new ChainFailure(failure.mode, failure.message) : undefined,
        );
        this.#chains.completed(chainId);
        if (!result) throw new GatewayError(ErrorCode.CHAIN_COMPLETED, "the chain is already completed");
        return result;
      } catch (err) {
        throw this.#fail(err, "CompleteChain");
      }
    });
  }

  /** The signed receipt of a completed chain, or null before completion. @throws GatewayError */
  async getReceipt(chainId: string, controller: AbortController): Promise<Receipt | null> {
    return this.#inflight.track(controller, async () => {
      try {
        return await this.#client.getReceipt(chainId, { signal: controller.signal });
      } catch (err) {
        throw this.#fail(err, "GetReceipt");
      }
    });
  }

  /** The current decision of a recorded event. @throws GatewayError NOT_FOUND and others. */
  async getDecision(chainId: string, eventId: string, controller: AbortController): Promise<PolicyDecision> {
    return this.#inflight.track(controller, async () => {
      let events: Awaited<ReturnType<ServiceClient["getChain"]>>["events"];
      try {
        events = (await this.#client.getChain(chainId, { signal: controller.signal })).events;
      } catch (err) {
        throw this.#fail(err, "GetDecision");
      }
      const e = events.find((x) => x.event_id === eventId);
      if (!e) throw new GatewayError(ErrorCode.NOT_FOUND, "event_id: no such event in this chain");
      return recordedDecision(e.decision, {
        chain_id: chainId,
        event_id: e.event_id,
        sequence: e.sequence,
        category: e.category,
        approval_id: e.approval_id,
        approval_expires_at: null,
        exception_id: e.exception_id,
      });
    });
  }

  /**
   * Aborts every call still in flight with SHUTTING_DOWN (end of a drain): waits stop and
   * nothing more is forwarded.
   */
  abortInflight(): void {
    this.#inflight.abortAll();
    this.#waits.abortAll();
  }

  /**
   * Withdraws every approval wait no caller is attached to (end of a drain): they stop polling
   * and nothing is forwarded for them.
   */
  withdrawDetachedWaits(): void {
    this.#waits.abortDetached();
  }

  /** Resolves when every outcome report in flight has settled (drain, before closing). */
  reportsSettled(): Promise<void> {
    return this.#outcomes.allSettled();
  }

  /** Resolves when no call is in flight (polls; used by the drain). */
  idle(pollMs = 20): Promise<void> {
    return this.#inflight.idle(pollMs);
  }

  /** Maps an error and logs what deserves it. */
  #fail(err: unknown, op: string): GatewayError {
    const e = toGatewayError(err);
    if (e.code === ErrorCode.INTERNAL) {
      this.#metrics.errors.inc({ kind: "internal" });
      this.#log.error({ err, op }, "unexpected error");
    } else if (e.code === ErrorCode.BACKEND_UNAVAILABLE) {
      this.#metrics.errors.inc({ kind: "backend" });
      this.#log.warn({ op, err: e.message }, "governance service unavailable");
    }
    return e;
  }
}

/** The failure a chain is completed with: the SDK uses the error's name as the failure mode. */
class ChainFailure extends Error {
  constructor(mode: string, message: string) {
    super(message);
    this.name = mode;
  }
}
