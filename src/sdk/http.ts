/**
 * One HTTP request to the service: global fetch (or an injected one) with a per-request
 * timeout combined with the caller's AbortSignal, JSON in and out, and error mapping:
 * - connection failure, per-request timeout, HTTP 5xx → BackendUnavailableError;
 * - other non-2xx → ServiceApiError with the service's error body (code, message, details);
 * - caller abort → rejects with the signal's reason.
 * Error messages name the route template (`GET /public/v2/verify/{token}`), never the concrete
 * path, so bearer secrets in paths cannot leak into errors.
 */
import type { z } from "zod";
import { BackendUnavailableError, ServiceApiError } from "./exceptions.js";
import { abortReason } from "./sleep.js";

/** What one request needs. */
export interface HttpSettings {
  baseUrl: string;
  /** Bearer secret; omitted from requests made with `auth: false`. */
  apiKey: string | null;
  timeoutMs: number;
  fetch: typeof fetch;
}

/** Options of one request. */
export interface RequestOptions<T> {
  /** Route template used in error messages, e.g. "POST /v1/chains/{chain_id}/actions". */
  route: string;
  body?: unknown;
  signal?: AbortSignal;
  /** Send the Authorization header (default true). */
  auth?: boolean;
  /** Validates a 2xx body. */
  schema: z.ZodType<T>;
  /** The path carries a secret: never attach the low-level error as `cause`. */
  secretPath?: boolean;
}

const networkCode = (err: unknown): string => {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return err instanceof Error ? err.message : "network error";
};

/** Error body fields of the service (`{statusCode, code, error, message, details}`). */
const errorFields = (
  body: unknown,
): { code?: string; message?: string; details?: Record<string, unknown> } => {
  if (typeof body !== "object" || body === null) return {};
  const b = body as Record<string, unknown>;
  return {
    code: typeof b.code === "string" ? b.code : undefined,
    message: typeof b.message === "string" ? b.message : undefined,
    details:
      typeof b.details === "object" && b.details !== null
        ? (b.details as Record<string, unknown>)
        : undefined,
  };
};

/**
 * Performs one request and returns the validated JSON body.
 * @throws BackendUnavailableError (unreachable, timeout, 5xx), ServiceApiError (other non-2xx,
 *   or a 2xx body that fails `schema`), or the caller signal's reason when it aborts.
 */
export async function requestJson<T>(
  http: HttpSettings,
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  opts: RequestOptions<T>,
): Promise<T> {
  // One controller and one timer, both released as soon as the answer is in. The obvious
  // AbortSignal.any([signal, AbortSignal.timeout(ms)]) cost ~65 µs per request on Node 20, and
  // its timer still fired (a DOMException, an abort event) long after the request had ended.
  const caller = opts.signal;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, http.timeoutMs);
  const onAbort = () => controller.abort(caller!.reason);
  if (caller?.aborted) onAbort();
  else caller?.addEventListener("abort", onAbort, { once: true });
  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.auth !== false && http.apiKey) headers.authorization = `Bearer ${http.apiKey}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";

  const unavailable = (err: unknown): never => {
    if (caller?.aborted) throw abortReason(caller);
    if (timedOut) {
      throw new BackendUnavailableError(
        `${opts.route}: no response from the governance service within ${http.timeoutMs / 1000} s`,
        { cause: opts.secretPath ? undefined : err },
      );
    }
    throw new BackendUnavailableError(
      `${opts.route}: cannot reach the governance service at ${http.baseUrl} (${networkCode(err)})`,
      { cause: opts.secretPath ? undefined : err },
    );
  };

  let status: number;
  let text: string;
  try {
    const res = await http.fetch(`${http.baseUrl}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: controller.signal,
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    return unavailable(err);
  } finally {
    clearTimeout(timer);
    caller?.removeEventListener("abort", onAbort);
  }

  let body: unknown = null;
  if (text !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  if (status >= 500) {
    throw new BackendUnavailableError(`${opts.route}: the governance service answered HTTP ${status}`);
  }
  if (status < 200 || status >= 300) {
    const e = errorFields(body);
    throw new ServiceApiError(
      status,
      e.code ?? `TG_ERR_HTTP_${status}`,
      `${opts.route}: ${e.message ?? `HTTP ${status}`}`,
      e.details ?? null,
    );
  }
  const parsed = opts.schema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`).join("; ");
    throw new ServiceApiError(
      status,
      "TG_ERR_BAD_RESPONSE",
      `${opts.route}: unexpected response (${issues})`,
    );
  }
  return parsed.data;
}

/** Whether an error during approval polling is transient (retried on the next tick). */
export const isTransient = (err: unknown): boolean =>
  err instanceof BackendUnavailableError ||
  (err instanceof ServiceApiError && (err.statusCode === 408 || err.statusCode === 429));
