/**
 * Open-loop load at a fixed rate, with coordinated omission corrected: call i is due at
 * `start + i / rate` whatever happened to the calls before it, and its latency is measured
 * from that intended start (HdrHistogram's "corrected" latency, as wrk2 does), not from when
 * the load generator got round to sending it. A closed loop (next call after the previous
 * answer) or an open loop timed from the actual send hides exactly the stalls a p99 is meant to
 * show: while the system under test stalls, no calls are sent, so none is measured as slow.
 *
 * The scheduler sleeps with setTimeout until the next call is due and, when it wakes late,
 * sends every call that has fallen due at once; the lateness counts in those calls' latency.
 */
import { performance } from "node:perf_hooks";
import type { Histogram } from "hdr-histogram-js";
import { latencyHistogram } from "./stats.js";

/** What runAtRate measured. Histograms in µs; only calls that resolved are recorded. */
export interface RateResult {
  /** From each call's intended start to its answer (coordinated omission corrected). */
  latency: Histogram;
  /** From each call's actual send to its answer (what an uncorrected open loop would report). */
  service: Histogram;
  /** Calls that rejected. */
  errors: number;
  /** The first rejection's reason, if any. */
  firstError: unknown;
  /** Answers per second over the run: count / (last answer − first intended start). */
  achievedRate: number;
  /** Largest delay between a call's intended start and its actual send, in ms. */
  maxSendLagMs: number;
  /** Most calls in flight at once. */
  maxInflight: number;
}

/**
 * Makes `count` calls at `rate` per second (see the module comment) and resolves once every
 * call has settled. `call(i)` starts call i and resolves when its answer is in; a rejection is
 * counted in `errors` and not recorded.
 */
export function runAtRate(opts: {
  rate: number;
  count: number;
  call: (i: number) => Promise<unknown>;
}): Promise<RateResult> {
  const { rate, count, call } = opts;
  if (!(rate > 0) || !Number.isInteger(count) || count < 0) throw new RangeError("rate > 0, count ≥ 0");
  const intervalMs = 1000 / rate;
  const latency = latencyHistogram();
  const service = latencyHistogram();
  let errors = 0;
  let firstError: unknown;
  let next = 0;
  let settled = 0;
  let inflight = 0;
  let maxInflight = 0;
  let maxSendLagMs = 0;
  let lastAnswer = 0;
  const start = performance.now();
  const us = (ms: number) => Math.max(1, Math.round(ms * 1000));

  return new Promise((resolve) => {
    const finish = () =>
      resolve({
        latency,
        service,
        errors,
        firstError,
        achievedRate: count === 0 ? 0 : count / ((lastAnswer - start) / 1000),
        maxSendLagMs,
        maxInflight,
      });
    const send = (i: number, intended: number) => {
      const sent = performance.now();
      maxSendLagMs = Math.max(maxSendLagMs, sent - intended);
      maxInflight = Math.max(maxInflight, ++inflight);
      let pending: Promise<unknown>;
      try {
        pending = call(i);
      } catch (err) {
        pending = Promise.reject(err);
      }
      pending.then(
        () => {
          const end = performance.now();
          latency.recordValue(us(end - intended));
          service.recordValue(us(end - sent));
          done(end);
        },
        (err: unknown) => {
          errors++;
          firstError ??= err;
          done(performance.now());
        },
      );
    };
    const done = (end: number) => {
      inflight--;
      lastAnswer = Math.max(lastAnswer, end);
      if (++settled === count) finish();
    };
    const tick = () => {
      const now = performance.now();
      while (next < count && start + next * intervalMs <= now) {
        send(next, start + next * intervalMs);
        next++;
      }
      if (next < count) setTimeout(tick, Math.max(0, start + next * intervalMs - performance.now()));
    };
    if (count === 0) finish();
    else tick();
  });
}
