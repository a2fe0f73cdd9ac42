/**
 * The sidecar's logger: the shared logger of src/telemetry/logger.ts (one redaction list for
 * every component), named tollgate-sidecar, at the configured level.
 */
import type pino from "pino";
import { createLogger as createSharedLogger, type Logger } from "../src/telemetry/logger.js";

/** Builds a logger at `level` writing to `destination` (default stdout). */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return createSharedLogger({ name: "tollgate-sidecar", level, destination });
}

export type { Logger };
