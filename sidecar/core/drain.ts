/**
 * The calls in flight, for the drain (sidecar.ts): how many there are, waiting until there are
 * none, and failing them all with SHUTTING_DOWN when the drain runs out of time.
 */
import { ErrorCode, GatewayError } from "../wire/errors.js";

/** The error the calls still in flight at the end of a drain fail with. */
export const shuttingDown = (): GatewayError =>
  new GatewayError(ErrorCode.SHUTTING_DOWN, "the sidecar is shutting down");

/** See the module comment. */
export class InflightCalls {
  /** Controllers of in-flight calls; aborted when a drain runs out of time. */
  readonly #controllers = new Set<AbortController>();

  /** Calls in flight. */
  get size(): number {
    return this.#controllers.size;
  }

  /** Runs `fn` as a call in flight, abortable through `controller`. */
  async track<T>(controller: AbortController, fn: () => Promise<T>): Promise<T> {
    this.#controllers.add(controller);
    try {
      return await fn();
    } finally {
      this.#controllers.delete(controller);
    }
  }

  /** Aborts every call in flight with SHUTTING_DOWN. */
  abortAll(): void {
    for (const c of this.#controllers) c.abort(shuttingDown());
  }

  /** Resolves when no call is in flight (polls every `pollMs`). */
  async idle(pollMs = 20): Promise<void> {
    while (this.#controllers.size > 0) await new Promise((r) => setTimeout(r, pollMs));
  }
}
