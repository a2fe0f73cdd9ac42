/**
 * The operator's pino logger: object first, then the message; level from LOG_LEVEL; secrets
 * (API keys, tokens, keys, Secret data) redacted wherever they appear in a logged object.
 */
import pino, { type Logger } from "pino";
import { traceLogFields } from "../src/telemetry/tracing.js";

/** Paths pino redacts in operator logs. */
export const operatorRedactPaths = [
  "*.api_key",
  "*.apiKey",
  "*.token",
  "*.key",
  "*.caKey",
  "*.data",
  "*.authorization",
  "headers.authorization",
];

/** Creates the operator logger (JSON to stdout, or `destination`). */
export function createOperatorLogger(
  opts: { level?: string; destination?: pino.DestinationStream } = {},
): Logger {
  const options = {
    name: "tollgate-operator",
    level: opts.level ?? process.env.LOG_LEVEL ?? "info",
    redact: { paths: operatorRedactPaths, censor: "[REDACTED]" },
    // trace_id and span_id of the active span (a reconcile), while tracing is on
    mixin: traceLogFields,
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
