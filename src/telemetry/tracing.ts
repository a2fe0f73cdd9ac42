/**
 * OpenTelemetry tracing shared by the service, the sidecar and the operator (README
 * "Operations → Tracing"). Each component calls `startTracing` once at start-up; everything else
 * here is what its wiring uses: `withSpan`, context extraction and injection, and the log mixin
 * that puts trace_id/span_id into log lines.
 *
 * Off by default: without an OTLP endpoint (config.ts) `startTracing` loads none of the SDK
 * packages and every helper returns at its first line (`tracingActive()` is one boolean read), so
 * tracing costs nothing measurable when unset (bench/tracing). On, it registers the global
 * tracer provider (BasicTracerProvider with the sampler, limits and batch settings of the OTEL_*
 * variables), an AsyncLocalStorage context manager, the W3C trace-context and baggage
 * propagators, and an OTLP exporter for the configured protocol behind a BatchSpanProcessor.
 *
 * Attributes never carry secrets or payload values: ids, names, decisions, templates and status
 * codes only (`Attr` lists the project's own).
 */
import {
  type Attributes,
  type Context,
  context,
  type DiagLogger,
  DiagLogLevel,
  diag,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type TextMapGetter,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { VERSION } from "../version.js";
import { OtlpProtocol, type TracingSettings, tracingSettings } from "./config.js";

export { TelemetryConfigError, type TracingSettings, tracingSettings } from "./config.js";

/** Attribute names of Tollgate's own span attributes (OpenTelemetry's where one exists). */
export const Attr = {
  chainId: "tollgate.chain.id",
  eventId: "tollgate.event.id",
  approvalId: "tollgate.approval.id",
  actionType: "tollgate.action.type",
  actionName: "tollgate.action.name",
  agentName: "tollgate.agent.name",
  decision: "tollgate.decision",
  decisionSource: "tollgate.decision.source",
  approvalResult: "tollgate.approval.result",
  upstream: "tollgate.upstream.name",
  upstreamType: "tollgate.upstream.type",
  receiptId: "tollgate.receipt.id",
  receiptNumber: "tollgate.receipt.number",
  chainStatus: "tollgate.chain.status",
  errorCode: "tollgate.error.code",
  surface: "tollgate.surface",
  errorType: "error.type",
} as const;
export type Attr = (typeof Attr)[keyof typeof Attr];

/** Where the component's warnings about export go (its pino logger). */
export interface TracingLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** A started tracing setup. */
export interface Tracing {
  settings: TracingSettings;
  /** Exports what is buffered; resolves when done (or failed: export errors are logged). */
  forceFlush(): Promise<void>;
  /** Flushes and stops exporting; the global API returns to no-ops. Idempotent. */
  shutdown(): Promise<void>;
}

let active = false;

/** True while a component's `startTracing` has tracing on (one boolean read: the off path). */
export const tracingActive = (): boolean => active;

/**
 * Starts tracing for this process from the OTEL_* variables in `env` (config.ts): off without an
 * OTLP endpoint, else exports over `protocol` to it. `serviceName` is the default service.name
 * (OTEL_SERVICE_NAME wins). Logs one line saying which.
 * @throws TelemetryConfigError when an OTEL_* variable is invalid.
 */
export async function startTracing(opts: {
  serviceName: string;
  env?: Record<string, string | undefined>;
  log?: TracingLogger;
}): Promise<Tracing> {
  const settings = tracingSettings(opts.env ?? process.env, opts.serviceName);
  if (!settings.enabled) {
    opts.log?.info({ tracing: "off", reason: settings.reason }, "tracing is off");
    return { settings, forceFlush: async () => {}, shutdown: async () => {} };
  }
  // Loaded only when tracing is on: a process without tracing never loads the SDK.
  const [{ BasicTracerProvider, BatchSpanProcessor }, resources, core, { AsyncLocalStorageContextManager }] =
    await Promise.all([
      import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/core"),
      import("@opentelemetry/context-async-hooks"),
    ]);
  const { OTLPTraceExporter } =
    settings.protocol === OtlpProtocol.grpc
      ? await import("@opentelemetry/exporter-trace-otlp-grpc")
      : settings.protocol === OtlpProtocol.httpJson
        ? await import("@opentelemetry/exporter-trace-otlp-http")
        : await import("@opentelemetry/exporter-trace-otlp-proto");
  if (opts.log) diag.setLogger(diagToLog(opts.log), DiagLogLevel.WARN);
  // service.name and service.version of ours; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({ "service.name": settings.serviceName, "service.version": VERSION }),
    )
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  // The exporter reads the endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*.
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  const propagators = [
    ...(settings.propagators.traceContext ? [new core.W3CTraceContextPropagator()] : []),
    ...(settings.propagators.baggage ? [new core.W3CBaggagePropagator()] : []),
  ];
  propagation.setGlobalPropagator(new core.CompositePropagator({ propagators }));
  active = true;
  opts.log?.info(
    {
      tracing: "on",
      endpoint: settings.endpoint,
      protocol: settings.protocol,
      service_name: settings.serviceName,
    },
    "tracing exports to an OTLP endpoint",
  );
  let stopped: Promise<void> | null = null;
  return {
    settings,
    forceFlush: () => provider.forceFlush(),
    shutdown() {
      stopped ??= (async () => {
        active = false;
        await provider
          .shutdown()
          .catch((err: Error) => opts.log?.warn({ err: err.message }, "trace export at shutdown failed"));
        trace.disable();
        propagation.disable();
        context.disable();
        diag.disable();
      })();
      return stopped;
    },
  };
}

/** The OpenTelemetry diagnostics channel (export failures, dropped spans) into the component's log. */
function diagToLog(log: TracingLogger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) =>
    log.warn(
      { otel: args.map((a) => (a instanceof Error ? a.message : String(a))) },
      `opentelemetry: ${message}`,
    );
  return { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} };
}

/** A tracer of this process (a no-op tracer while tracing is off). */
export const tracer = (name: string): Tracer => trace.getTracer(name, VERSION);

/** The span handed to `withSpan`'s body while tracing is off: every method does nothing. */
const OFF_SPAN: Span = trace.wrapSpanContext({ traceId: "", spanId: "", traceFlags: 0 });

/** Options of withSpan beyond SpanOptions. */
export interface WithSpanOptions extends SpanOptions {
  /** Parent context (default: the active one). */
  parent?: Context;
  /**
   * Whether a thrown error marks the span as failed (default: every error). Expected refusals
   * (a denial, a 4xx) are outcomes, not failures: their `error.type` is still recorded.
   */
  failed?: (err: unknown) => boolean;
  /** The error class to record as `error.type` (default: the error's name). */
  errorType?: (err: unknown) => string;
}

/**
 * Runs `fn` inside a new active span named `name` and ends it when `fn` settles; an error is
 * recorded (`error.type`, status ERROR when `failed` says so; never the message, which may quote
 * input) and rethrown. While tracing is off, runs `fn` with a no-op span and nothing else.
 */
export function withSpan<T>(
  t: Tracer,
  name: string,
  options: WithSpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  if (!active) return fn(OFF_SPAN);
  const { parent, failed, errorType, ...spanOptions } = options;
  return t.startActiveSpan(name, spanOptions, parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markError(span, err, failed?.(err) ?? true, errorType);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Records `err` on `span`: `error.type` always, status ERROR when `failed`. */
export function markError(
  span: Span,
  err: unknown,
  failed: boolean,
  errorType: (err: unknown) => string = (e) => (e instanceof Error ? e.name : "Error"),
): void {
  const type = errorType(err);
  span.setAttribute(Attr.errorType, type);
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** Sets attributes on `span` when tracing is on (skips building them otherwise). */
export function setAttributes(span: Span, attributes: () => Attributes): void {
  if (active && span.isRecording()) span.setAttributes(attributes());
}

/**
 * The context carried by `carrier` (HTTP headers, gRPC metadata, MCP `_meta`): the W3C
 * `traceparent`/`tracestate` (and `baggage`) of the caller, on top of ROOT_CONTEXT. The root
 * context while tracing is off.
 */
export function extractContext<C>(carrier: C, getter?: TextMapGetter<C>): Context {
  if (!active) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier, getter);
}

/** Adds `traceparent`/`tracestate` (and `baggage`) of `ctx` (default: the active context) to `carrier`. */
export function injectContext(carrier: Record<string, unknown>, ctx?: Context): void {
  if (!active) return;
  propagation.inject(ctx ?? context.active(), carrier);
}

/**
 * The W3C trace keys of the active context as a new object (an outgoing request's headers, an
 * MCP request's `_meta`); null while tracing is off.
 */
export function traceCarrier(): Record<string, string> | null {
  if (!active) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `fn` with no active span: background work that must not join the trace it started in. */
export function detached<T>(fn: () => T): T {
  if (!active) return fn();
  return context.with(ROOT_CONTEXT, fn);
}

/**
 * pino `mixin`: `trace_id` and `span_id` of the active span in every log line written while
 * one is active (a fresh object each call: pino merges into it).
 */
export function traceLogFields(): { trace_id?: string; span_id?: string } {
  if (!active) return {};
  const sc = trace.getSpan(context.active())?.spanContext();
  if (!sc || !isSpanContextValid(sc)) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId };
}

export {
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
