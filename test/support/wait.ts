/**
 * Polling shared by the suites' helpers (test/kube/helpers.ts, test/cluster/support.ts), each
 * with its own default timeout and interval.
 */

/**
 * Polls `fn` every `intervalMs` until it returns a truthy value (returned); after `timeoutMs`
 * throws naming `what` and the last error `fn` threw.
 */
export async function pollUntil<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs: number,
  intervalMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last error: ${last instanceof Error ? last.message : String(last)})` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
