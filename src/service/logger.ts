/**
 * The one pino logger configuration. Secrets (API keys, tokens, cookies, signatures, keys) are
 * redacted wherever they appear in a logged object; pretty output only on a TTY.
 */
import type { FastifyBaseLogger } from "fastify";
import pino, { type Logger, type LoggerOptions } from "pino";
import { redactText } from "../policy/sanitize.js";
import { traceLogFields } from "../telemetry/tracing.js";

/** Paths pino redacts; covers request headers, config objects and common secret field names. */
export const redactPaths = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  "res.headers['set-cookie']",
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
  err: (err: Error) => {
    const s = pino.stdSerializers.err(err);
    s.message = redactText(s.message);
    if (s.stack) s.stack = redactText(s.stack);
    return s;
  },
  req: (req: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
    method: req.method,
    url: safeUrl(req.url ?? ""),
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
  }),
  res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
};

/** Builds the service logger. `level` defaults to LOG_LEVEL or info. */
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

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * A request's child logger (bound to its reqId) that pino makes on first use of an enabled
 * level: pino's child() cost ~4 µs on every request (bindings serialized, redaction set up), and
 * a request that succeeds logs nothing of its own at the default levels.
 */
class LazyChildLogger {
  #made: Logger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: pino.Bindings,
  ) {}
  #real(): Logger {
    this.#made ??= this.parent.child(this.bindings);
    return this.#made;
  }
  #log(level: Level, args: unknown[]): void {
    if (this.isLevelEnabled(level)) {
      (this.#real()[level] as (...a: unknown[]) => void)(...args);
    }
  }
  get level(): string {
    return (this.#made ?? this.parent).level;
  }
  set level(level: string) {
    this.#real().level = level;
  }
  isLevelEnabled(level: string): boolean {
    return (this.#made ?? this.parent).isLevelEnabled(level);
  }
  child(bindings: pino.Bindings, opts?: pino.ChildLoggerOptions): Logger {
    return this.#real().child(bindings, opts);
  }
  fatal(...args: unknown[]): void {
    this.#log("fatal", args);
  }
  error(...args: unknown[]): void {
    this.#log("error", args);
  }
  warn(...args: unknown[]): void {
    this.#log("warn", args);
  }
  info(...args: unknown[]): void {
    this.#log("info", args);
  }
  debug(...args: unknown[]): void {
    this.#log("debug", args);
  }
  trace(...args: unknown[]): void {
    this.#log("trace", args);
  }
  silent(): void {}
}

/**
 * Fastify's `childLoggerFactory`: a lazy child (above); a route with its own log level gets a
 * real child at once.
 */
export function lazyChildLogger(
  parent: FastifyBaseLogger,
  bindings: pino.Bindings,
  opts: pino.ChildLoggerOptions = {},
): FastifyBaseLogger {
  if (opts.level !== undefined) return parent.child(bindings, opts);
  return new LazyChildLogger(parent as Logger, bindings) as unknown as FastifyBaseLogger;
}

export type { Logger };
