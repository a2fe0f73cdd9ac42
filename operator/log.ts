/**
 * The operator's logger: the shared logger of src/telemetry/logger.ts (one redaction list for
 * every component: API keys, tokens, keys, Secret data), named tollgate-operator.
 */
import type pino from "pino";
import { createLogger, type Logger } from "../src/telemetry/logger.js";

/** Creates the operator logger (JSON to stdout, or `destination`); level default LOG_LEVEL or info. */
export function createOperatorLogger(
  opts: { level?: string; destination?: pino.DestinationStream } = {},
): Logger {
  return createLogger({ name: "tollgate-operator", ...opts });
}

export type { Logger };
