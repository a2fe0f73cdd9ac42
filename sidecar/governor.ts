/**
 * The core of the sidecar, shared by the gRPC server and the MCP face: chains opened through
 * this sidecar, and one governed invocation = record the action through the SDK (the service
 * decides; on require_approval the SDK blocks, polling every 5 s) → forward an allowed call to
 * the upstream → report the outcome to the service in the background.
 *
 * Ordering: the decision phases of one chain run one at a time, in arrival order (the service
 * refuses a new action while an earlier one awaits approval); forwarding runs concurrently.
 * Outcome reports never delay the caller and go to the service in batches (outcome-reporter.ts);
 * completing a chain first waits for its reports, so the receipt shows every outcome the
 * service accepted.
 */
import { hash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { fromWire } from "../src/sdk/decision.js";
import {
  Chain,
  type ChainConfig,
  type EventOutcome,
  type PolicyDecision,
  type Receipt,
  ServiceClient,
} from "../src/sdk/index.js";
import { ErrorCode, GatewayError, toGatewayError } from "./errors.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";
import { OutcomeReporter } from "./outcome-reporter.js";
import type { JsonObject } from "./struct.js";
import { type Upstream, UpstreamError, type UpstreamResult } from "./upstreams/index.js";
import type { InvokeInput } from "./validate.js";

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

interface ChainEntry {
  chain: Chain;
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

  constructor(opts: {
    sdkConfig: ChainConfig;
    upstreams: ReadonlyMap<string, Upstream>;
    metrics: Metrics;
    log: Logger;
  }) {
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
      this.#chains.set(chainId, { chain, tail: Promise.resolve(), deciding: 0, outcomes: new Set() });
      return chainId;
    });
  }

  /**
   * One governed invocation (see the module comment). `controller` is the caller's: abort it
   * with a GatewayError reason (DEADLINE_EXCEEDED, CANCELLED) to stop waiting; nothing is
   * forwarded once it is aborted.
   * @throws GatewayError for every way the call can fail (errors.ts).
   */
  async invoke(input: InvokeInput, controller: AbortController, surface: Surface): Promise<InvokeResult> {
    return this.#track(controller, async () => {
      try {
        const result = await this.#invoke(input, controller.signal);
        this.#metrics.invocations.inc({ decision: result.decision.policyDecision, surface });
        return result;
      } catch (err) {
        const e = this.#fail(err, "Invoke");
        this.#metrics.invocations.inc({ decision: e.result, surface });
        throw e;
      }
    });
  }

  async #invoke(input: InvokeInput, signal: AbortSignal): Promise<InvokeResult> {
    const entry = this.#entry(input.chainId);
    const decision = await this.#decide(entry, input, signal);
    if (input.upstream === null)
      return { decision, chainId: input.chainId, forwarded: false, result: null, upstreamDurationMs: 0 };
    if (signal.aborted) throw signal.reason;
    const upstream = this.#upstreams.get(input.upstream)!;
    const started = performance.now();
    let result: UpstreamResult;
    try {
      result = await upstream.call(input.actionName, input.payload, {
        chainId: input.chainId,
        eventId: decision.eventId,
        agentName: input.agentName,
        signal,
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

  /** The decision phase, queued behind the chain's earlier ones. */
  async #decide(entry: ChainEntry, input: InvokeInput, signal: AbortSignal): Promise<PolicyDecision> {
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
      const decision = await entry.chain.recordAgentAction(
        input.agentName,
        input.actionType,
        input.actionName,
        input.payload,
        input.parentAgentName,
        { signal },
      );
      const seconds = (performance.now() - started) / 1000;
      if (decision.approvalId && decision.decisionSource === "human_approval") {
        this.#metrics.approvalWait.observe({ result: "approved" }, seconds);
      } else {
        this.#metrics.decisionDuration.observe(seconds);
      }
      return decision;
    } catch (err) {
      const decision = (err as { decision?: PolicyDecision | null }).decision;
      if (decision?.approvalId && decision.decisionSource === "human_approval") {
        this.#metrics.approvalWait.observe({ result: "denied" }, (performance.now() - started) / 1000);
      }
      throw err;
    } finally {
      entry.deciding--;
      release();
    }
  }

  /** Reports an outcome in the background; completion of the chain waits for it. */
  #report(entry: ChainEntry, decision: PolicyDecision, outcome: EventOutcome): void {
    const eventId = decision.eventId;
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
  ): Promise<{ chainId: string; status: string; receiptId: string; receiptNumber: string }> {
    return this.#track(controller, async () => {
      const entry = this.#chains.get(chainId);
      try {
        if (!entry) {
          const r = await this.#client.completeChain(chainId, failure ? { failure } : {}, {
            signal: controller.signal,
          });
          this.#remember(chainId);
          return {
            chainId: r.chain_id,
            status: r.status,
            receiptId: r.receipt_id,
            receiptNumber: r.receipt_number,
          };
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
      return fromWire(e.decision, {
        eventId,
        sequence: typeof raw.sequence === "number" ? raw.sequence : null,
        approvalId: typeof raw.approval_id === "string" ? raw.approval_id : null,
        exceptionId: typeof raw.exception_id === "string" ? raw.exception_id : null,
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

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export const sha256Hex = (text: string): string => hash("sha256", text, "hex");
