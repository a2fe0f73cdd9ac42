/**
 * The service's logging: the shared logger of src/telemetry/logger.ts (one redaction list for
 * every component), the lazy per-request child logger Fastify uses, and the one request log
 * line per request (OneLineRequestLog).
 */
import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from "fastify";
import type pino from "pino";
import type { Logger } from "../telemetry/logger.js";

export { createLogger, type Logger, redactPaths, safeUrl, serializers } from "../telemetry/logger.js";

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * A request's child logger (bound to its reqId) that pino makes on first use of an enabled
 * level: pino's child() cost ~4 µs on every request (bindings serialized, redaction set up). At
 * the default level (info) Fastify's two request-log lines make it on every request; at warn and
 * above a request that succeeds never makes it.
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

/**
 * Fastify's request logging as one line per request, written when it is answered through the
 * service's root logger: `request completed` at info (`request errored` at error, with `err`)
 * with `reqId`, `req` (method, path, remote address), `res` (statusCode) and `responseTime` in
 * ms. Fastify's default writes two lines ("incoming request" too) through the request's child
 * logger, which makes a pino child for every request at info. Fastify's other lines (stream and
 * header errors) stay as they are.
 */
export class OneLineRequestLog extends LogController {
  constructor(private readonly root: Logger) {
    super();
  }
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, req: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      this.root.error(
        { reqId: req.id, req, res: reply, err: error, responseTime: reply.elapsedTime },
        "request errored",
      );
    } else if (this.root.isLevelEnabled("info")) {
      this.root.info(
        { reqId: req.id, req, res: reply, responseTime: reply.elapsedTime },
        "request completed",
      );
    }
  }
}
