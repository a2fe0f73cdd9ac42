/**
 * The one logging module of every component (service, sidecar, operator): pino, object first
 * and then the message, level from LOG_LEVEL or the component's configuration, one redaction
 * list, error messages and stacks passed through the secret rules, request URLs without query
 * strings or bearer secrets, the active span's trace_id/span_id on every line, pretty output only
 * on a TTY.
 */
import pino, { type Logger, type LoggerOptions } from "pino";
import { redactText } from "../policy/sanitize.js";
import { traceLogFields } from "./tracing.js";

/**
 * Paths pino redacts in every component: request headers, configuration objects, common secret
 * field names, Secret data and environment maps.
 */
export const redactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "res.headers['set-cookie']",
  "headers.authorization",
  "api_key",
  "apiKey",
  "token",
  "password",
  "secret",
  "authorization",
  "*.api_key",
  "*.apiKey",
  "*.token",
  "*.password",
  "*.secret",
  "*.authorization",
  "*.headers",
  "*.env",
  "*.key",
  "*.caKey",
  "*.data",
  "*.masterKey",
  "*.master_key",
  "*.adminToken",
  "*.databaseUrl",
  "*.signature",
  "*.private_key",
  "*.privateKey",
  "client_secret",
  "access_token",
  "refresh_token",
  "*.client_secret",
  "*.access_token",
  "*.refresh_token",
  "config.masterKey",
  "config.adminToken",
  "config.databaseUrl",
];

/**
 * A request URL as it may be logged: no query string (approval-link signatures, OIDC codes) and
 * no bearer secrets in path segments (public verification tokens and other prefixed secrets).
 */
export function safeUrl(url: string): string {
  const path = url.split("?")[0] ?? "";
  return path
    .replace(/^\/public\/v2\/verify\/[^/]*/, "/public/v2/verify/[REDACTED]")
    .replace(/\/(tgp|tgs|tga|tg)_[A-Za-z0-9_-]+/g, "/$1_[REDACTED]");
}

/** pino serializers for Fastify's request and reply log lines, and for errors. */
export const serializers = {
  /** An error's message and stack can quote input (a database error quotes the value): redacted. */
  err: (err: unknown) => {
    // Callers also log `{ err: error.message }` (a string) or plain objects: redact what is text.
    if (typeof err === "string") return redactText(err);
    if (!(err instanceof Error)) return err;
    const s = pino.stdSerializers.err(err);
    if (typeof s.message === "string") s.message = redactText(s.message);
    if (typeof s.stack === "string") s.stack = redactText(s.stack);
    return s;
  },
  req: (req: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
    method: req.method,
    url: safeUrl(req.url ?? ""),
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
  }),
  res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
};

/**
 * Builds a component's logger: `name` (tollgate, tollgate-sidecar, tollgate-operator), `level`
 * (default LOG_LEVEL or info), JSON to `destination` (default stdout).
 */
export function createLogger(
  opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  const options: LoggerOptions = {
    name: opts.name ?? "tollgate",
    level: opts.level ?? process.env.LOG_LEVEL ?? "info",
    redact: { paths: redactPaths, censor: "[REDACTED]" },
    serializers: { ...pino.stdSerializers, ...serializers },
    // trace_id and span_id of the active span, while tracing is on (README "Operations → Tracing")
    mixin: traceLogFields,
  };
  if (!opts.destination && process.stdout.isTTY && process.env.NODE_ENV !== "test") {
    options.transport = { target: "pino-pretty", options: { colorize: true } };
  }
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
