/**
 * The core of the sidecar, shared by the gRPC server and the MCP face: chains opened through
 * this sidecar, and one governed invocation = record the action through the SDK (the service
 * decides; on require_approval the SDK blocks, polling every 5 s) → forward an allowed call to
 * the upstream → report the outcome to the service in the background.
 *
 * Ordering: the decision phases of one chain run one at a time, in arrival order (the service
 * refuses a new action while an earlier one awaits approval); forwarding runs concurrently.
 *
 * Approval waits (approval-wait.ts) outlive their callers: a call that needs approval becomes the
 * chain's ApprovalWait, polled with its own signal; a retry with the same re-attach key (an
 * idempotency key, else the call's fingerprint) joins it, any other call of the chain gets
 * APPROVAL_PENDING naming the approval and its review URL. An outcome nobody has received yet
 * is kept for `reattachWindowMs` after the approval was resolved; an approval granted while no
 * caller waits forwards nothing until a retry attaches.
 * Outcome reports never delay the caller and go to the service in batches (outcome-reporter.ts);
 * completing a chain first waits for its reports, so the receipt shows every outcome the
 * service accepted.
 */
import { hash } from "node:crypto";
import { performance } from "node:perf_hooks";
import canonicalize from "canonicalize";
import {
  BackendUnavailableError,
  Chain,
  type ChainConfig,
  type CompleteResult,
  decisionFromWire,
  type EventOutcome,
  type PolicyDecision,
  type Receipt,
  ServiceClient,
  waitForApproval,
} from "../../src/sdk/index.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { forwardSpan, markToolError } from "../tracing.js";
import { type Upstream, UpstreamError, type UpstreamResult } from "../upstreams/index.js";
import { ErrorCode, GatewayError, invalidArgument, toGatewayError } from "../wire/errors.js";
import type { JsonObject } from "../wire/struct.js";
import type { InvokeInput } from "../wire/validate.js";
import {
  ApprovalWait,
  approvalPendingError,
  untilSettledOrAborted,
  type WaitUpdate,
} from "./approval-wait.js";
import { OutcomeReporter } from "./outcome-reporter.js";

/** Which surface an invocation came through (metrics label). */
export type Surface = "grpc" | "mcp";

/** A governed invocation that was allowed. */
export interface InvokeResult {
  decision: PolicyDecision;
  chainId: string;
  /** False when no upstream was named. */
  forwarded: boolean;
  /** The upstream's answer; null when not forwarded. */
  result: UpstreamResult | null;
  /** Wall time of the upstream call in ms; 0 when not forwarded. */
  upstreamDurationMs: number;
}

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

/** Where the sidecar's wait URLs point and how long an unclaimed outcome is kept. */
export interface ApprovalWaitOptions {
  /** The dashboard page of an approval (absolute URL). */
  reviewUrl: (approvalId: string) => string;
  /** ms an outcome nobody received yet is kept for a retry after the approval was resolved. */
  reattachWindowMs: number;
}

interface ChainEntry {
  chain: Chain;
  /** The call of this chain that waits for approval, or whose outcome nobody received yet. */
  wait: ApprovalWait | null;
  /** Settles when the last queued decision phase has finished. */
  tail: Promise<void>;
  /** Decision phases queued or running. */
  deciding: number;
  /** Outcome reports in flight. */
  outcomes: Set<Promise<void>>;
}

/** Completed chains remembered so that late calls get CHAIN_COMPLETED rather than NOT_FOUND. */
const COMPLETED_MEMORY = 10_000;

/** See the module comment. */
export class Governor {
  readonly #config: ChainConfig;
  readonly #client: ServiceClient;
  readonly #upstreams: ReadonlyMap<string, Upstream>;
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #outcomes: OutcomeReporter;
  readonly #chains = new Map<string, ChainEntry>();
  readonly #completed = new Set<string>();
  /** Controllers of in-flight calls; aborted when a drain runs out of time. */
  readonly #inflight = new Set<AbortController>();
  /** Approval waits alive (pending, or holding an outcome nobody received yet). */
  readonly #waits = new Set<ApprovalWait>();
  readonly #approvals: ApprovalWaitOptions;

  constructor(opts: {
    sdkConfig: ChainConfig;
    upstreams: ReadonlyMap<string, Upstream>;
    metrics: Metrics;
    log: Logger;
    approvals?: Partial<ApprovalWaitOptions>;
  }) {
    this.#approvals = {
      reviewUrl:
        opts.approvals?.reviewUrl ?? ((id) => `${opts.sdkConfig.backendUrl}/dashboard/approvals#${id}`),
      reattachWindowMs: opts.approvals?.reattachWindowMs ?? 600_000,
    };
    opts.metrics.sources.openChains = () => this.#chains.size;
    opts.metrics.sources.approvalWaits = () => [...this.#waits].filter((w) => w.pending).length;
    this.#config = opts.sdkConfig;
    this.#client = ServiceClient.fromConfig(opts.sdkConfig);
    this.#upstreams = opts.upstreams;
    this.#metrics = opts.metrics;
    this.#log = opts.log;
    this.#outcomes = new OutcomeReporter(this.#client, opts.metrics, opts.log);
  }

  /** Calls in flight (gRPC Invoke and MCP tools/call). */
  get inflight(): number {
    return this.#inflight.size;
  }

  /** Counts an invocation refused for bad input before it reached the service. */
  countInvalid(surface: Surface): void {
    this.#metrics.invocations.inc({ decision: "invalid_argument", surface });
  }

  /** Chains opened here and not yet completed. */
  get openChains(): number {
    return this.#chains.size;
  }

  /**
   * Opens a chain at the service.
   * @throws GatewayError (BACKEND_UNAVAILABLE when the service is unreachable: a chain cannot
   *   exist without it; INVALID_ARGUMENT; INTERNAL).
   */
  async openChain(name: string, metadata: JsonObject, controller: AbortController): Promise<string> {
    return this.#track(controller, async () => {
      const chain = new Chain(name, { metadata, config: this.#config });
      try {
        await chain.enter({ signal: controller.signal });
      } catch (err) {
        throw this.#fail(err, "OpenChain");
      }
      const chainId = chain.chainId!;
      this.#chains.set(chainId, {
        chain,
        wait: null,
        tail: Promise.resolve(),
        deciding: 0,
        outcomes: new Set(),
      });
      return chainId;
    });
  }

  /**
   * One governed invocation (see the module comment). `controller` is the caller's: abort it
   * with a GatewayError reason (DEADLINE_EXCEEDED, CANCELLED) to stop waiting; nothing is
   * forwarded once it is aborted. While the call waits for approval, aborting only detaches
   * the caller (the approval stays pending for a retry with the same key).
   * @throws GatewayError for every way the call can fail (errors.ts); APPROVAL_PENDING (with
   *   the approval id and review URL) when another call of the chain waits for approval;
   *   INVALID_ARGUMENT when the idempotency key was used for a different call.
   */
  async invoke(
    input: InvokeInput,
    controller: AbortController,
    surface: Surface,
    options: InvokeOptions = {},
  ): Promise<InvokeResult> {
    return this.#track(controller, async () => {
      try {
        const result = await this.#invoke(input, controller.signal, options);
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
    const entry = this.#chains.get(chainId);
    const w = entry?.wait;
    if (!entry || !w || w.key !== reattachKey(input, idempotencyKey)) return null;
    const withdrawn = w.withdraw(new GatewayError(ErrorCode.CANCELLED, reason));
    if (!withdrawn) return null;
    this.#release(entry, w);
    return w.approvalId;
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

  /** True while a call of `chainId` waits for a human. */
  waitsForApproval(chainId: string): boolean {
    return this.#chains.get(chainId)?.wait?.pending ?? false;
  }

  async #invoke(input: InvokeInput, signal: AbortSignal, options: InvokeOptions): Promise<InvokeResult> {
    const entry = this.#entry(input.chainId);
    const key = reattachKey(input, options.idempotencyKey ?? null);
    const decided = await this.#decide(entry, input, key, signal);
    if (decided instanceof ApprovalWait) return this.#attach(entry, decided, input, signal, options);
    return this.#forward(entry, input, decided, signal);
  }

  /**
   * Waits with `w` until its outcome, then forwards (once for all its callers, under the wait's
   * own signal, so that a forward started for a caller who then left still finishes for a retry).
   */
  async #attach(
    entry: ChainEntry,
    w: ApprovalWait,
    input: InvokeInput,
    signal: AbortSignal,
    options: InvokeOptions,
  ): Promise<InvokeResult> {
    if (w.fingerprint !== fingerprintOf(input))
      throw invalidArgument("idempotency_key", "was already used for a different call of this chain");
    w.attached++;
    const unsubscribe = options.onWait ? w.subscribe(options.onWait) : null;
    try {
      const decision = await untilSettledOrAborted(w.decided, signal);
      if (!w.forwarding) {
        if (signal.aborted) throw signal.reason;
        w.forwarding = this.#forward(entry, input, decision, w.signal);
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
        }, this.#approvals.reattachWindowMs);
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
      this.#report(
        entry,
        { ...w.requested, event_id: w.eventId },
        {
          status: "error",
          error_class: "NotForwarded",
          duration_ms: 0,
          result_sha256: null,
        },
      );
    }
  }

  /** Forwards an allowed call to its upstream (none named: record only). */
  async #forward(
    entry: ChainEntry,
    input: InvokeInput,
    decision: PolicyDecision,
    signal: AbortSignal,
  ): Promise<InvokeResult> {
    if (input.upstream === null)
      return { decision, chainId: input.chainId, forwarded: false, result: null, upstreamDurationMs: 0 };
    if (signal.aborted) throw signal.reason;
    const upstream = this.#upstreams.get(input.upstream)!;
    const started = performance.now();
    let result: UpstreamResult;
    try {
      result = await forwardSpan(upstream, input.actionName, async (span) => {
        const r = await upstream.call(input.actionName, input.payload, {
          chainId: input.chainId,
          eventId: decision.event_id,
          agentName: input.agentName,
          signal,
        });
        if (r.isError) markToolError(span, r.errorClass);
        return r;
      });
    } catch (err) {
      const ms = performance.now() - started;
      this.#metrics.upstreamDuration.observe({ upstream: upstream.name, result: "failed" }, ms / 1000);
      const failure = err instanceof UpstreamError ? err : null;
      this.#report(entry, decision, {
        status: "error",
        error_class: failure?.errorClass ?? "Error",
        duration_ms: round3(ms),
        result_sha256: null,
      });
      if (failure?.failure === "aborted" && signal.aborted) throw signal.reason;
      if (!failure) this.#log.error({ err, upstream: upstream.name }, "upstream call failed unexpectedly");
      this.#metrics.errors.inc({ kind: "upstream" });
      throw new GatewayError(
        failure?.failure === "timeout" ? ErrorCode.UPSTREAM_TIMEOUT : ErrorCode.UPSTREAM_UNAVAILABLE,
        failure?.message ?? `upstream ${upstream.name}: call failed`,
        decision,
      );
    }
    const ms = performance.now() - started;
    this.#metrics.upstreamDuration.observe(
      { upstream: upstream.name, result: result.isError ? "tool_error" : "ok" },
      ms / 1000,
    );
    this.#report(entry, decision, {
      status: result.isError ? "error" : "success",
      error_class: result.errorClass,
      duration_ms: round3(ms),
      result_sha256: sha256Hex(result.resultJson),
    });
    return { decision, chainId: input.chainId, forwarded: true, result, upstreamDurationMs: ms };
  }

  /**
   * The decision phase, queued behind the chain's earlier ones. Returns the decision of an
   * allowed call, or the ApprovalWait to attach to: a new one when the call needs approval, the
   * chain's existing one when this call is its retry (same re-attach key).
   * @throws APPROVAL_PENDING when another call of the chain waits for approval.
   */
  async #decide(
    entry: ChainEntry,
    input: InvokeInput,
    key: string,
    signal: AbortSignal,
  ): Promise<PolicyDecision | ApprovalWait> {
    const previous = entry.tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The next caller may start only when this phase AND every earlier one have finished; with
    // none queued or running (the common case) there is nothing to wait for or chain onto.
    const waits = entry.deciding > 0;
    entry.tail = waits ? Promise.all([previous, mine]).then(() => undefined) : mine;
    entry.deciding++;
    const started = performance.now();
    try {
      if (waits) await untilAborted(previous, signal);
      else if (signal.aborted) throw signal.reason;
      const held = entry.wait;
      if (held) {
        if (held.key === key) return held;
        if (held.pending) throw approvalPendingError(held);
        this.#drop(entry, held, "another call of the chain came first");
      }
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
        return this.#startWait(entry, input, key, decision);
      this.#metrics.decisionDuration.observe((performance.now() - started) / 1000);
      return decision;
    } finally {
      entry.deciding--;
      release();
    }
  }

  /** Makes `decision` (require_approval) the chain's ApprovalWait and starts polling for it. */
  #startWait(entry: ChainEntry, input: InvokeInput, key: string, decision: PolicyDecision): ApprovalWait {
    const chainId = input.chainId;
    const w = new ApprovalWait(
      {
        key,
        fingerprint: fingerprintOf(input),
        chainId,
        decision,
        reviewUrl: this.#approvals.reviewUrl(decision.approval_id!),
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
            sequence: decision.sequence,
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

  /** Reports an outcome in the background; completion of the chain waits for it. */
  #report(entry: ChainEntry, decision: PolicyDecision, outcome: EventOutcome): void {
    const eventId = decision.event_id;
    if (!eventId) return; // fail mode allow: nothing was recorded to bind it to
    const report = this.#outcomes.report(entry.chain.chainId!, eventId, outcome);
    entry.outcomes.add(report);
    void report.then(() => entry.outcomes.delete(report));
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
    return this.#track(controller, async () => {
      const entry = this.#chains.get(chainId);
      try {
        if (!entry) {
          const r = await this.#client.completeChain(chainId, failure ? { failure } : {}, {
            signal: controller.signal,
          });
          this.#remember(chainId);
          return {
            chain_id: r.chain_id,
            status: r.status,
            receipt_id: r.receipt_id,
            receipt_number: r.receipt_number,
          };
        }
        const w = entry.wait;
        if (w) {
          if (
            w.withdraw(new GatewayError(ErrorCode.CANCELLED, "the chain was completed while the call waited"))
          )
            this.#release(entry, w);
          else if (w.forwarding) await w.forwarding.catch(() => undefined);
        }
        if (entry.outcomes.size > 0) this.#outcomes.flush();
        await Promise.allSettled([...entry.outcomes]);
        const result = await entry.chain.exit(
          failure ? new ChainFailure(failure.mode, failure.message) : undefined,
        );
        this.#chains.delete(chainId);
        this.#remember(chainId);
        if (!result) throw new GatewayError(ErrorCode.CHAIN_COMPLETED, "the chain is already completed");
        return result;
      } catch (err) {
        throw this.#fail(err, "CompleteChain");
      }
    });
  }

  /** The signed receipt of a completed chain, or null before completion. @throws GatewayError */
  async getReceipt(chainId: string, controller: AbortController): Promise<Receipt | null> {
    return this.#track(controller, async () => {
      try {
        return await this.#client.getReceipt(chainId, { signal: controller.signal });
      } catch (err) {
        throw this.#fail(err, "GetReceipt");
      }
    });
  }

  /** The current decision of a recorded event. @throws GatewayError NOT_FOUND and others. */
  async getDecision(chainId: string, eventId: string, controller: AbortController): Promise<PolicyDecision> {
    return this.#track(controller, async () => {
      let events: Awaited<ReturnType<ServiceClient["getChain"]>>["events"];
      try {
        events = (await this.#client.getChain(chainId, { signal: controller.signal })).events;
      } catch (err) {
        throw this.#fail(err, "GetDecision");
      }
      const e = events.find((x) => x.event_id === eventId);
      if (!e) throw new GatewayError(ErrorCode.NOT_FOUND, "event_id: no such event in this chain");
      const raw = e as Record<string, unknown>;
      return decisionFromWire(e.decision, {
        event_id: eventId,
        sequence: typeof raw.sequence === "number" ? raw.sequence : null,
        approval_id: typeof raw.approval_id === "string" ? raw.approval_id : null,
        exception_id: typeof raw.exception_id === "string" ? raw.exception_id : null,
        category: typeof raw.category === "string" ? raw.category : null,
      });
    });
  }

  /**
   * Aborts every call still in flight with SHUTTING_DOWN (end of a drain): waits stop and
   * nothing more is forwarded.
   */
  abortInflight(): void {
    for (const c of this.#inflight) {
      c.abort(new GatewayError(ErrorCode.SHUTTING_DOWN, "the sidecar is shutting down"));
    }
    for (const w of this.#waits)
      w.abort(new GatewayError(ErrorCode.SHUTTING_DOWN, "the sidecar is shutting down"));
  }

  /**
   * Withdraws every approval wait no caller is attached to (end of a drain): they stop polling
   * and nothing is forwarded for them.
   */
  withdrawDetachedWaits(): void {
    for (const w of this.#waits)
      if (w.attached === 0)
        w.abort(new GatewayError(ErrorCode.SHUTTING_DOWN, "the sidecar is shutting down"));
  }

  /** Resolves when every outcome report in flight has settled (drain, before closing). */
  async reportsSettled(): Promise<void> {
    this.#outcomes.flush();
    await Promise.allSettled([...this.#chains.values()].flatMap((e) => [...e.outcomes]));
  }

  /** Resolves when no call is in flight (polls; used by the drain). */
  async idle(pollMs = 20): Promise<void> {
    while (this.#inflight.size > 0) await new Promise((r) => setTimeout(r, pollMs));
  }

  #entry(chainId: string): ChainEntry {
    const entry = this.#chains.get(chainId);
    if (entry) return entry;
    if (this.#completed.has(chainId))
      throw new GatewayError(ErrorCode.CHAIN_COMPLETED, "chain_id: the chain is completed");
    throw new GatewayError(
      ErrorCode.NOT_FOUND,
      "chain_id: unknown chain (open it with OpenChain on this sidecar)",
    );
  }

  #remember(chainId: string): void {
    this.#completed.add(chainId);
    if (this.#completed.size > COMPLETED_MEMORY)
      this.#completed.delete(this.#completed.values().next().value!);
  }

  async #track<T>(controller: AbortController, fn: () => Promise<T>): Promise<T> {
    this.#inflight.add(controller);
    try {
      return await fn();
    } finally {
      this.#inflight.delete(controller);
    }
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

/** Waits for `p`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}

const round3 = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * The call's fingerprint: SHA-256 of the canonical JSON of agent, parent, type, name, payload
 * and upstream. Two calls with the same fingerprint are the same call.
 */
export function fingerprintOf(input: InvokeInput): string {
  return sha256Hex(
    canonicalize({
      agent: input.agentName,
      parent: input.parentAgentName,
      type: input.actionType,
      name: input.actionName,
      payload: input.payload,
      upstream: input.upstream,
    }) ?? "",
  );
}

/** The re-attach key of a call: its idempotency key when given, else its fingerprint. */
export function reattachKey(input: InvokeInput, idempotencyKey: string | null): string {
  return idempotencyKey ? `key:${idempotencyKey}` : `fp:${fingerprintOf(input)}`;
}

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export const sha256Hex = (text: string): string => hash("sha256", text, "hex");
