/**
 * Tracing settings from the standard OpenTelemetry environment variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/), validated
 * once at start-up with zod. Tracing is on only when an OTLP endpoint is set
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT), OTEL_SDK_DISABLED is not
 * "true" and OTEL_TRACES_EXPORTER does not say "none". Everything else the variables configure
 * (headers, timeout, compression, batch sizes, span limits, resource attributes) is read by the
 * OpenTelemetry SDK packages themselves; the values checked here are those whose mistakes would
 * otherwise only show as a warning on the diagnostics channel, or as silence.
 */
import { z } from "zod";

/** OTLP transports of OTEL_EXPORTER_OTLP_PROTOCOL. */
export const OtlpProtocol = {
  grpc: "grpc",
  httpProtobuf: "http/protobuf",
  httpJson: "http/json",
} as const;
export type OtlpProtocol = (typeof OtlpProtocol)[keyof typeof OtlpProtocol];

const SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;

const optional = (schema: z.ZodType<string>) =>
  z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());

const protocol = optional(
  z.enum([OtlpProtocol.grpc, OtlpProtocol.httpProtobuf, OtlpProtocol.httpJson], {
    error: "must be grpc, http/protobuf or http/json",
  }),
);

/** The variables validated here (others pass through to the SDK untouched). */
export const TelemetryEnvSchema = z.object({
  OTEL_SDK_DISABLED: optional(z.string()),
  OTEL_TRACES_EXPORTER: optional(
    z.string().refine((v) => v.split(",").every((e) => ["otlp", "none"].includes(e.trim())), {
      error: "only otlp and none are supported",
    }),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(
    z.url({ protocol: /^https?$/, error: "must be an http(s) URL, e.g. http://collector:4318" }),
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional(
    z.url({ protocol: /^https?$/, error: "must be an http(s) URL, e.g. http://collector:4318/v1/traces" }),
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: optional(z.string().max(200)),
  OTEL_TRACES_SAMPLER: optional(z.enum(SAMPLERS, { error: `must be one of ${SAMPLERS.join(", ")}` })),
  OTEL_TRACES_SAMPLER_ARG: optional(
    z.string().refine((v) => Number.isFinite(Number(v)) && Number(v) >= 0 && Number(v) <= 1, {
      error: "must be a number from 0 to 1",
    }),
  ),
  OTEL_PROPAGATORS: optional(
    z
      .string()
      .refine((v) => v.split(",").every((p) => ["tracecontext", "baggage", "none"].includes(p.trim())), {
        error: "only tracecontext, baggage and none are supported",
      }),
  ),
});

/** What start-up decided. */
export type TracingSettings =
  | { enabled: false /** Why tracing is off, for the start-up log line. */; reason: string }
  | {
      enabled: true;
      /** The traces endpoint as configured (logged; the exporter derives /v1/traces itself). */
      endpoint: string;
      protocol: OtlpProtocol;
      /** service.name: OTEL_SERVICE_NAME, else the component's own name. */
      serviceName: string;
      /** W3C propagators: tracecontext and/or baggage (default both). */
      propagators: { traceContext: boolean; baggage: boolean };
    };

/** Thrown when an OTEL_* variable is invalid; the message names every variable. */
export class TelemetryConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid tracing configuration: ${issues.join("; ")}`);
    this.name = "TelemetryConfigError";
  }
}

/**
 * Decides from `env` whether and how to trace; `defaultServiceName` names the component
 * (tollgate-service, tollgate-sidecar, tollgate-operator).
 * @throws TelemetryConfigError naming each invalid variable.
 */
export function tracingSettings(
  env: Record<string, string | undefined>,
  defaultServiceName: string,
): TracingSettings {
  const parsed = TelemetryEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new TelemetryConfigError(
      parsed.error.issues.map((i) => `${i.path.join(".") || "(environment)"}: ${i.message}`),
    );
  }
  const e = parsed.data;
  if (e.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true")
    return { enabled: false, reason: "OTEL_SDK_DISABLED=true" };
  const exporters = (e.OTEL_TRACES_EXPORTER ?? "otlp").split(",").map((x) => x.trim());
  if (!exporters.includes("otlp")) return { enabled: false, reason: "OTEL_TRACES_EXPORTER=none" };
  const endpoint = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return { enabled: false, reason: "no OTEL_EXPORTER_OTLP_ENDPOINT is set" };
  const propagators = (e.OTEL_PROPAGATORS ?? "tracecontext,baggage").split(",").map((p) => p.trim());
  return {
    enabled: true,
    endpoint,
    protocol: (e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
      e.OTEL_EXPORTER_OTLP_PROTOCOL ??
      OtlpProtocol.httpProtobuf) as OtlpProtocol,
    serviceName: e.OTEL_SERVICE_NAME ?? defaultServiceName,
    propagators: {
      traceContext: propagators.includes("tracecontext"),
      baggage: propagators.includes("baggage"),
    },
  };
}
