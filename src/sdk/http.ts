/**
 * One HTTP request to the service: global fetch (or an injected one) with a per-request
 * timeout combined with the caller's AbortSignal, JSON in and out, and error mapping:
 * - the backend is unreachable in the spec's sense — connection refused or reset, DNS failure,
 *   host or network unreachable, the per-request timeout, or HTTP 502/503/504 from a proxy in
 *   front — → BackendUnavailableError (the only error the fail modes apply to);
 * - any other non-2xx (400, 401, 403, 404, 409, 500, ...) → ServiceApiError with the service's
 *   error body (code, message, details): a server error never lets a call through;
 * - any other transport failure (TLS, protocol, malformed URL) → ServiceTransportError;
 * - caller abort → rejects with the signal's reason.
 * Error messages name the route template (`GET /public/v2/verify/{token}`), never the concrete
 * path, so bearer secrets in paths cannot leak into errors.
 *
 * Tracing (OpenTelemetry API only; the application registers an SDK or not): inside an active
 * span, each request is a CLIENT span named by its route template, and the request carries the
 * W3C `traceparent`/`tracestate` of that span, so the service's spans join the caller's trace.
 * Without an active span nothing is created; with no OpenTelemetry SDK registered, the API's
 * no-ops cost well under a microsecond per request (bench/tracing).
 */

import {
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import type { z } from "zod";
import { ApiErrorCode } from "../contract/v1/errors.js";
import { BackendUnavailableError, ServiceApiError, ServiceTransportError } from "./exceptions.js";
import { abortReason } from "./sleep.js";

/** What one request needs. */
export interface HttpSettings {
  baseUrl: string;
  /** Bearer secret (or a function returning the current one); omitted from requests made with `auth: false`. */
  apiKey: string | (() => string) | null;
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

/** Tracer of the SDK's spans (requests, approval waits). */
const sdkTracer = trace.getTracer("tollgate-sdk");

/** The error code of a failed fetch (undici puts it on `cause`, node:http on the error itself). */
const networkCode = (err: unknown): string | null => {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  if (typeof e?.cause?.code === "string") return e.cause.code;
  if (typeof e?.code === "string") return e.code;
  return null;
};

/**
 * Network error codes that mean "the backend is unreachable" (spec: BackendUnavailableError):
 * connection refused or reset, DNS failure, host or network unreachable, connect timeout, and
 * the socket closed by the other side before an answer. Anything else is not unreachability.
 */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);

/** HTTP statuses a proxy in front of the service answers when the service cannot be reached. */
export const UNREACHABLE_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

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
 * @throws BackendUnavailableError (unreachable: see UNREACHABLE_CODES, the timeout, HTTP
 *   502/503/504), ServiceApiError (any other non-2xx, 500 included, or a 2xx body that fails
 *   `schema`), ServiceTransportError (another transport failure), or the caller signal's reason
 *   when it aborts.
 */
export async function requestJson<T>(
  http: HttpSettings,
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  opts: RequestOptions<T>,
): Promise<T> {
  const parent = context.active();
  if (trace.getSpan(parent) === undefined) return send(http, method, path, opts, parent, null);
  const span = sdkTracer.startSpan(
    opts.route,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "http.request.method": method,
        "url.template": opts.route.slice(opts.route.indexOf(" ") + 1),
      },
    },
    parent,
  );
  try {
    return await send(http, method, path, opts, trace.setSpan(parent, span), span);
  } catch (err) {
    span.setAttribute("error.type", err instanceof Error ? err.name : "Error");
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/** requestJson without its span: `ctx` travels in the headers, `span` gets the status code. */
async function send<T>(
  http: HttpSettings,
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  opts: RequestOptions<T>,
  ctx: Context,
  span: Span | null,
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
  const bearer = typeof http.apiKey === "function" ? http.apiKey() : http.apiKey;
  if (opts.auth !== false && bearer) headers.authorization = `Bearer ${bearer}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  propagation.inject(ctx, headers);

  const failed = (err: unknown): never => {
    if (caller?.aborted) throw abortReason(caller);
    const cause = opts.secretPath ? undefined : err;
    if (timedOut) {
      throw new BackendUnavailableError(
        `${opts.route}: no response from the governance service within ${http.timeoutMs / 1000} s`,
        { cause },
      );
    }
    const code = networkCode(err);
    if (code !== null && UNREACHABLE_CODES.has(code)) {
      throw new BackendUnavailableError(
        `${opts.route}: cannot reach the governance service at ${http.baseUrl} (${code})`,
        { cause },
      );
    }
    throw new ServiceTransportError(
      `${opts.route}: the request to the governance service at ${http.baseUrl} failed (${code ?? (err instanceof Error ? err.message : "unknown error")})`,
      code,
      { cause },
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
    span?.setAttribute("http.response.status_code", status);
    text = await res.text();
  } catch (err) {
    return failed(err);
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
  if (UNREACHABLE_STATUSES.has(status)) {
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
      ApiErrorCode.BAD_RESPONSE,
      `${opts.route}: unexpected response (${issues})`,
    );
  }
  return parsed.data;
}

/**
 * Whether an error during approval polling is transient (retried on the next tick, spec:
 * "Transient backend errors during approval polling do not fail the approval"). Retrying keeps
 * the caller waiting, so a 5xx here can never turn into an allow.
 */
export const isTransient = (err: unknown): boolean =>
  err instanceof BackendUnavailableError ||
  err instanceof ServiceTransportError ||
  (err instanceof ServiceApiError &&
    (err.statusCode === 408 || err.statusCode === 429 || err.statusCode >= 500));
