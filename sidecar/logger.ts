/**
 * The sidecar's pino logger: object first, then the message; level from LOG_LEVEL (config);
 * secrets redacted wherever they appear; pretty output only on a TTY.
 */
import pino, { type Logger } from "pino";
import { traceLogFields } from "../src/telemetry/tracing.js";

/** Paths pino redacts. */
export const redactPaths = [
  "apiKey",
  "*.apiKey",
  "*.api_key",
  "*.authorization",
  "*.headers",
  "*.token",
  "*.env",
];

/** Builds a logger at `level` writing to `destination` (default stdout). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name: "tollgate-sidecar",
    level,
    redact: { paths: redactPaths, censor: "[REDACTED]" },
    // trace_id and span_id of the active span, while tracing is on
    mixin: traceLogFields,
  };
  if (!destination && process.stdout.isTTY && process.env.NODE_ENV !== "test") {
    options.transport = { target: "pino-pretty", options: { colorize: true } };
  }
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
