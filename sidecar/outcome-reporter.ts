/**
 * Background outcome reports, batched (POST /v1/outcomes): the sidecar tells the service what
 * happened to each forwarded call without one request per call. At most one batch request is
 * in flight; outcomes that arrive meanwhile wait and go together in the next one (as in a group
 * commit). An idle sidecar therefore reports a lone outcome at once, one event-loop turn after
 * the call was answered, and a busy one sends one request per service round trip instead of
 * one per call — which is what the service's CPU and this process's system calls pay for.
 *
 * A report never rejects: a batch the service could not take, or an outcome it refused, is
 * counted and logged here, never surfaced to the call (the caller has its answer already).
 */
import {
  type EventOutcome,
  MAX_OUTCOMES_PER_BATCH,
  type OutcomeReportResult,
  type ServiceClient,
} from "../src/sdk/index.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";

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
  #queue: Pending[] = [];
  #sending = false;
  #scheduled = false;

  constructor(client: ServiceClient, metrics: Metrics, log: Logger) {
    this.#client = client;
    this.#metrics = metrics;
    this.#log = log;
  }

  /**
   * Queues one outcome; resolves once the service has answered for it (bound or refused) or
   * its batch failed. Never rejects.
   */
  report(chainId: string, eventId: string, outcome: EventOutcome): Promise<void> {
    return new Promise<void>((settle) => {
      this.#queue.push({ chain_id: chainId, event_id: eventId, outcome, settle });
      this.#schedule();
    });
  }

  // setImmediate: the call's answer is written before the report costs any CPU, and the
  // outcomes of calls answered in the same event-loop turn share a batch.
  #schedule(): void {
    if (this.#sending || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      void this.#send();
    });
  }

  async #send(): Promise<void> {
    if (this.#sending || this.#queue.length === 0) return;
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
      this.#schedule();
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
