/**
 * Background outcome reports, batched (POST /v1/outcomes): the sidecar tells the service what
 * happened to each forwarded call without one request per call. An outcome waits at most
 * `lingerMs` (default 10 ms) for others to join it; at most one batch request is in flight,
 * and outcomes that arrive meanwhile go together in the next one. At 500 calls/s that is one
 * request per ~5 calls instead of one per call, which is what the service's CPU and both
 * processes' system calls pay for; an idle sidecar reports a lone outcome 10 ms after the call
 * was answered. Completing a chain and draining flush at once (`flush`).
 *
 * A report never rejects: a batch the service could not take, or an outcome it refused, is
 * counted and logged here, never surfaced to the call (the caller has its answer already).
 * Reports are tracked per chain: completing a chain first waits for its reports (`settled`), so
 * the receipt shows every outcome the service accepted.
 */
import {
  type EventOutcome,
  MAX_OUTCOMES_PER_BATCH,
  type OutcomeReportResult,
  type ServiceClient,
} from "../../src/sdk/index.js";
import { detached } from "../../src/telemetry/tracing.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";

/** How long an outcome waits for others to share its request, in ms. */
export const DEFAULT_LINGER_MS = 10;

interface Pending {
  chain_id: string;
  event_id: string;
  outcome: EventOutcome;
  settle: () => void;
}

/** See the module comment. */
export class OutcomeReporter {
  readonly #client: ServiceClient;
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #lingerMs: number;
  #queue: Pending[] = [];
  #sending = false;
  /** A flush came while a batch was in flight: send again as soon as it is done. */
  #due = false;
  #timer: NodeJS.Timeout | null = null;
  /** Reports in flight, by chain id. */
  readonly #inFlight = new Map<string, Set<Promise<void>>>();

  constructor(client: ServiceClient, metrics: Metrics, log: Logger, lingerMs = DEFAULT_LINGER_MS) {
    this.#client = client;
    this.#metrics = metrics;
    this.#log = log;
    this.#lingerMs = lingerMs;
  }

  /**
   * Reports the outcome of event `eventId` in the background. `eventId` null (a fail mode allow:
   * nothing was recorded to bind it to) reports nothing.
   */
  report(chainId: string, eventId: string | null, outcome: EventOutcome): void {
    if (!eventId) return;
    const report = this.#queued(chainId, eventId, outcome);
    const reports = this.#inFlight.get(chainId) ?? new Set<Promise<void>>();
    this.#inFlight.set(chainId, reports);
    reports.add(report);
    void report.then(() => {
      reports.delete(report);
      if (reports.size === 0 && this.#inFlight.get(chainId) === reports) this.#inFlight.delete(chainId);
    });
  }

  /** Resolves once every report of `chainId` in flight has settled (sent at once). */
  async settled(chainId: string): Promise<void> {
    const reports = this.#inFlight.get(chainId);
    if (!reports) return;
    this.flush();
    await Promise.all([...reports]);
  }

  /** Resolves once every report in flight has settled (sent at once): the end of a drain. */
  async allSettled(): Promise<void> {
    this.flush();
    await Promise.all([...this.#inFlight.values()].flatMap((reports) => [...reports]));
  }

  /**
   * Queues one outcome; resolves once the service has answered for it (bound or refused) or
   * its batch failed. Never rejects.
   */
  #queued(chainId: string, eventId: string, outcome: EventOutcome): Promise<void> {
    return new Promise<void>((settle) => {
      this.#queue.push({ chain_id: chainId, event_id: eventId, outcome, settle });
      if (this.#queue.length >= MAX_OUTCOMES_PER_BATCH) this.flush();
      // The batch belongs to no one call's trace.
      else this.#timer ??= detached(() => setTimeout(() => this.flush(), this.#lingerMs));
    });
  }

  /** Sends what is queued now rather than after the linger (or once the batch in flight is done). */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#sending) this.#due = true;
    else void this.#send();
  }

  async #send(): Promise<void> {
    if (this.#queue.length === 0) return;
    this.#sending = true;
    const batch = this.#queue.splice(0, MAX_OUTCOMES_PER_BATCH);
    try {
      const results = await this.#client.reportOutcomes(batch);
      for (const r of results) if (!r.recorded) this.#refused(r);
    } catch (err) {
      this.#metrics.errors.inc({ kind: "outcome_report" }, batch.length);
      this.#log.warn(
        { outcomes: batch.length, err: (err as Error).message },
        "could not report a batch of outcomes",
      );
    } finally {
      for (const p of batch) p.settle();
      this.#sending = false;
      if (this.#due) {
        this.#due = false;
        this.flush();
      }
    }
  }

  #refused(r: OutcomeReportResult): void {
    this.#metrics.errors.inc({ kind: "outcome_report" });
    this.#log.warn(
      { chainId: r.chain_id, eventId: r.event_id, code: r.error?.code, err: r.error?.message },
      "the service refused an outcome",
    );
  }
}
