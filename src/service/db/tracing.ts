/**
 * PostgreSQL client spans around every statement the service sends through `pg` (pool.ts), with
 * the OpenTelemetry database conventions: span name = the query summary (the prepared
 * statement's name, else `SELECT chains`, `INSERT chain_events`, `BEGIN`, ...), attributes
 * `db.system.name` = postgresql, `db.operation.name`, `db.collection.name`, `db.query.summary`
 * and `db.query.text` — our statements are parameterized constants, so the text never holds a
 * value; parameter values are never recorded.
 *
 * Manual spans rather than @opentelemetry/instrumentation-pg: that instrumentation patches `pg`
 * through require hooks, which do not see `pg` imported from ESM (tsx, and the esbuild bundles
 * with packages external), and its current versions need Node 22. A statement becomes a span
 * only inside a traced request (a parent span is active): the scheduler's and outbox's polls
 * every second stay out of the traces. Off, `queryTraced` is the plain `pg` call.
 */
import type pg from "pg";
import { context, markError, SpanKind, trace, tracer, tracingActive } from "../../telemetry/tracing.js";

/** A prepared statement (pool.ts). */
interface Statement {
  name: string;
  text: string;
}

/** Anything that runs a query: the pool, or one client inside a transaction. */
interface PgRunner {
  query(config: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult>;
}

const pgTracer = tracer("tollgate-service.pg");

interface Summary {
  summary: string;
  operation: string;
  collection: string | undefined;
}

/** Summaries by statement text: the texts are the service's constants, a few dozen. */
const summaries = new Map<string, Summary>();
const SUMMARY_CACHE_MAX = 1000;

/** The operation and main table of a statement, e.g. {operation: "SELECT", collection: "chains"}. */
export function summarize(text: string, name?: string): Summary {
  const cached = summaries.get(name ?? text);
  if (cached) return cached;
  const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? "QUERY";
  const target =
    operation === "SELECT" || operation === "DELETE"
      ? /\bFROM\s+([\w.]+)/i.exec(text)
      : operation === "INSERT"
        ? /\bINTO\s+([\w.]+)/i.exec(text)
        : operation === "UPDATE"
          ? /^\s*UPDATE\s+([\w.]+)/i.exec(text)
          : null;
  // A statement with subqueries names no one table reliably: no db.collection.name then.
  const collection = /\(\s*SELECT\b/i.test(text) ? undefined : target?.[1];
  const summary = name ?? (collection ? `${operation} ${collection}` : operation);
  const s = { summary, operation, collection };
  if (summaries.size < SUMMARY_CACHE_MAX) summaries.set(name ?? text, s);
  return s;
}

/**
 * Runs one statement on `runner` (pool or transaction client); inside a traced request, as a
 * CLIENT span (see the module comment).
 */
export function queryTraced(
  runner: PgRunner,
  text: string | Statement,
  values?: unknown[],
): Promise<pg.QueryResult> {
  const config = typeof text === "string" ? text : { ...text, values };
  if (!tracingActive()) return runner.query(config, typeof text === "string" ? values : undefined);
  const parent = context.active();
  const parentSpan = trace.getSpan(parent);
  if (!parentSpan?.isRecording()) return runner.query(config, typeof text === "string" ? values : undefined);
  const sqlText = typeof text === "string" ? text : text.text;
  const s = summarize(sqlText, typeof text === "string" ? undefined : text.name);
  const span = pgTracer.startSpan(
    s.summary,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        "db.system.name": "postgresql",
        "db.operation.name": s.operation,
        "db.query.summary": s.summary,
        "db.query.text": sqlText.trim(),
        ...(s.collection && { "db.collection.name": s.collection }),
      },
    },
    parent,
  );
  return context
    .with(trace.setSpan(parent, span), () =>
      runner.query(config, typeof text === "string" ? values : undefined),
    )
    .then(
      (result) => {
        span.end();
        return result;
      },
      (err: unknown) => {
        const code = (err as { code?: unknown }).code;
        markError(span, err, true, () => (typeof code === "string" ? code : "Error"));
        if (typeof code === "string") span.setAttribute("db.response.status_code", code);
        span.end();
        throw err;
      },
    );
}
