/**
 * The per-chain decision queue: the decision phases of one chain run one at a time, in arrival
 * order (the service refuses a new action while an earlier one awaits approval), while
 * forwarding, outside the queue, runs concurrently.
 */

/** See the module comment. One per open chain. */
export class DecisionQueue {
  /** Settles when the last queued phase has finished. */
  #tail: Promise<void> = Promise.resolve();
  /** Phases queued or running. */
  #running = 0;

  /**
   * Runs `phase` once every earlier phase of the chain has finished.
   * @throws the signal's reason when `signal` aborts while the phase waits its turn; whatever
   *   `phase` throws.
   */
  async run<T>(signal: AbortSignal, phase: () => Promise<T>): Promise<T> {
    const previous = this.#tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The next caller may start only when this phase AND every earlier one have finished; with
    // none queued or running (the common case) there is nothing to wait for or chain onto.
    const waits = this.#running > 0;
    this.#tail = waits ? Promise.all([previous, mine]).then(() => undefined) : mine;
    this.#running++;
    try {
      if (waits) await untilAborted(previous, signal);
      else if (signal.aborted) throw signal.reason;
      return await phase();
    } finally {
      this.#running--;
      release();
    }
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
