/**
 * The one pino logger configuration. Secrets (API keys, tokens, cookies, signatures, keys) are
 * redacted wherever they appear in a logged object; pretty output only on a TTY.
 */
import pino, { type Logger, type LoggerOptions } from "pino";

/** Paths pino redacts; covers request headers, config objects and common secret field names. */
export const redactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "res.headers['set-cookie']",
  "*.api_key",
  "*.apiKey",
  "*.token",
  "*.password",
  "*.secret",
  "*.masterKey",
  "*.master_key",
  "*.adminToken",
  "*.databaseUrl",
  "*.signature",
  "*.private_key",
  "*.privateKey",
  "config.masterKey",
  "config.adminToken",
  "config.databaseUrl",
];

/** Builds the service logger. `level` defaults to LOG_LEVEL or info. */
export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  const options: LoggerOptions = {
    name: opts.name ?? "tollgate",
    level: opts.level ?? process.env.LOG_LEVEL ?? "info",
    redact: { paths: redactPaths, censor: "[REDACTED]" },
  };
  if (!opts.destination && process.stdout.isTTY && process.env.NODE_ENV !== "test") {
    options.transport = { target: "pino-pretty", options: { colorize: true } };
  }
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
