/**
 * Abortable waiting. The approval poll loop sleeps through the injected `sleep` of
 * ChainConfig.internals; this is the default (a real timer).
 */

/** The reason an aborted signal rejects with: its own reason, else a DOMException AbortError. */
export const abortReason = (signal: AbortSignal): unknown =>
  signal.reason ?? new DOMException("The operation was aborted", "AbortError");

/** Throws the signal's reason when it is already aborted. */
export const throwIfAborted = (signal: AbortSignal | undefined): void => {
  if (signal?.aborted) throw abortReason(signal);
};

/**
 * Resolves after `ms` milliseconds (setTimeout); rejects with `signal.reason` as soon as the
 * signal aborts, and clears the timer.
 */
export const realSleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
