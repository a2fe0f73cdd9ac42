/**
 * Tracing configuration from the OTEL_* variables (src/telemetry/config.ts), the off path of the
 * helpers, and the PostgreSQL span summaries (src/service/db/tracing.ts). The spans themselves
 * are tested end to end against a real collector in test/e2e/tracing.test.ts.
 */
import { describe, expect, it } from "vitest";
import { summarize } from "../../src/service/db/tracing.js";
import { TelemetryConfigError, tracingSettings } from "../../src/telemetry/config.js";
import {
  extractContext,
  traceCarrier,
  traceLogFields,
  tracer,
  tracingActive,
  withSpan,
} from "../../src/telemetry/tracing.js";

const ENDPOINT = "http://127.0.0.1:4318";

describe("tracingSettings", () => {
  it.each([
    [{}, "no OTEL_EXPORTER_OTLP_ENDPOINT is set"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "" }, "no OTEL_EXPORTER_OTLP_ENDPOINT is set"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: "TRUE" }, "OTEL_SDK_DISABLED=true"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: "none" }, "OTEL_TRACES_EXPORTER=none"],
  ])("%j → off (%s)", (env, reason) => {
    expect(tracingSettings(env, "tollgate-x")).toEqual({ enabled: false, reason });
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, ENDPOINT, "http/protobuf", "tollgate-x"],
    [
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      },
      `${ENDPOINT}/v1/traces`,
      "http/json",
      "tollgate-x",
    ],
    [
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4317",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc",
        OTEL_SERVICE_NAME: "sidecar-acme",
      },
      "http://127.0.0.1:4317",
      "grpc",
      "sidecar-acme",
    ],
  ])("%j → on", (env, endpoint, protocol, serviceName) => {
    expect(tracingSettings(env, "tollgate-x")).toMatchObject({
      enabled: true,
      endpoint,
      protocol,
      serviceName,
    });
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT"],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "thrift" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, "OTEL_TRACES_SAMPLER"],
    [{ OTEL_TRACES_SAMPLER_ARG: "2" }, "OTEL_TRACES_SAMPLER_ARG"],
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, "OTEL_TRACES_EXPORTER"],
    [{ OTEL_PROPAGATORS: "b3" }, "OTEL_PROPAGATORS"],
  ])("%j is refused naming %s", (env, variable) => {
    expect(() => tracingSettings(env, "tollgate-x")).toThrow(TelemetryConfigError);
    expect(() => tracingSettings(env, "tollgate-x")).toThrow(variable);
  });
});

describe("the off path (no startTracing in this process)", () => {
  it("runs bodies and adds nothing", async () => {
    expect(tracingActive()).toBe(false);
    expect(await withSpan(tracer("t"), "s", {}, async (span) => span.isRecording())).toBe(false);
    expect(traceLogFields()).toEqual({});
    expect(traceCarrier()).toBeNull();
    const ctx = extractContext({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" });
    expect(ctx.getValue(Symbol.for("OpenTelemetry Context Key SPAN"))).toBeUndefined();
  });
});

describe("PostgreSQL span summaries", () => {
  it.each([
    ["SELECT * FROM organizations WHERE id = $1", undefined, "SELECT organizations", "organizations"],
    ["INSERT INTO api_keys (id) VALUES ($1)", undefined, "INSERT api_keys", "api_keys"],
    ["  UPDATE chains SET status = $2 WHERE id = $1", undefined, "UPDATE chains", "chains"],
    ["DELETE FROM jobs WHERE id = $1", undefined, "DELETE jobs", "jobs"],
    ["BEGIN", undefined, "BEGIN", undefined],
    [
      "SELECT c.* FROM chains c WHERE EXISTS (SELECT 1 FROM api_keys k)",
      "tg_read_chain_state",
      "tg_read_chain_state",
      undefined,
    ],
  ])("%s → %s", (text, name, summary, collection) => {
    expect(summarize(text, name)).toMatchObject({ summary, collection });
  });
});
