/**
 * The forwarder: an allowed call goes to its upstream (none named: record only), its duration
 * is measured, and its outcome is reported to the service in the background (outcome-reporter.ts).
 * An upstream failure becomes UPSTREAM_TIMEOUT or UPSTREAM_UNAVAILABLE, carrying the decision.
 */
import { performance } from "node:perf_hooks";
import type { PolicyDecision } from "../../src/sdk/index.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import { forwardSpan, markToolError } from "../tracing.js";
import { type Upstream, UpstreamError, type UpstreamResult } from "../upstreams/index.js";
import { ErrorCode, GatewayError } from "../wire/errors.js";
import type { InvokeInput } from "../wire/validate.js";
import { sha256Hex } from "./fingerprint.js";
import type { OutcomeReporter } from "./outcome-reporter.js";

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

/** See the module comment. */
export class Forwarder {
  readonly #upstreams: ReadonlyMap<string, Upstream>;
  readonly #outcomes: OutcomeReporter;
  readonly #metrics: Metrics;
  readonly #log: Logger;

  constructor(
    upstreams: ReadonlyMap<string, Upstream>,
    outcomes: OutcomeReporter,
    metrics: Metrics,
    log: Logger,
  ) {
    this.#upstreams = upstreams;
    this.#outcomes = outcomes;
    this.#metrics = metrics;
    this.#log = log;
  }

  /**
   * Forwards `input` (allowed by `decision`) unless `signal` has aborted.
   * @throws the signal's reason when it aborts; GatewayError UPSTREAM_TIMEOUT or
   *   UPSTREAM_UNAVAILABLE (with the decision) when the upstream call fails.
   */
  async forward(input: InvokeInput, decision: PolicyDecision, signal: AbortSignal): Promise<InvokeResult> {
    if (input.upstream === null)
      return { decision, chainId: input.chainId, forwarded: false, result: null, upstreamDurationMs: 0 };
    if (signal.aborted) throw signal.reason;
    const upstream = this.#upstreams.get(input.upstream)!;
    const eventId = decision.event_id;
    const started = performance.now();
    let result: UpstreamResult;
    try {
      result = await forwardSpan(upstream, input.actionName, async (span) => {
        const r = await upstream.call(input.actionName, input.payload, {
          chainId: input.chainId,
          eventId,
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
      this.#outcomes.report(input.chainId, eventId, {
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
    this.#outcomes.report(input.chainId, eventId, {
      status: result.isError ? "error" : "success",
      error_class: result.errorClass,
      duration_ms: round3(ms),
      result_sha256: sha256Hex(result.resultJson),
    });
    return { decision, chainId: input.chainId, forwarded: true, result, upstreamDurationMs: ms };
  }
}

const round3 = (ms: number) => Math.round(ms * 1000) / 1000;
