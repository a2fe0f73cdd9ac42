/**
 * Database access: PostgreSQL through `pg`, or embedded PGlite served over the PostgreSQL wire
 * protocol on a private unix socket so that the very same `pg` code path runs against it
 * (DESIGN.md "Storage and time"; ../shared/notes/pglite.md).
 */
import { mkdir } from "node:fs/promises";
import path from "node:path";
import pg from "pg";

/**
 * A statement PostgreSQL prepares once per connection and then only binds and executes: for
 * the hot path's fixed statements, whose parse and plan otherwise cost more server CPU than
 * their execution. `name` must be unique per distinct `text`.
 */
export interface PreparedStatement {
  name: string;
  text: string;
}

/** A query runner: the pool, or one client inside a transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string | PreparedStatement,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** An open database with transactions. */
export interface Database extends Queryable {
  /** Runs `fn` inside BEGIN/COMMIT on one connection; rolls back and rethrows on error. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /** "postgres" or "pglite". */
  readonly kind: "postgres" | "pglite";
  /** Closes the pool (and the embedded database). */
  close(): Promise<void>;
}

// NUMERIC/BIGINT come back as strings by default; our values fit in doubles.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

class PgDatabase implements Database {
  constructor(
    readonly pool: pg.Pool,
    readonly kind: "postgres" | "pglite",
    private readonly onClose: () => Promise<void> = async () => {},
  ) {}

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string | PreparedStatement,
    values?: unknown[],
  ) {
    return typeof text === "string"
      ? this.pool.query<R>(text, values as unknown[])
      : this.pool.query<R>({ ...text, values: values as unknown[] });
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
    await this.onClose();
  }
}

/** Connects to PostgreSQL at `url` with a pool of `max` connections. */
export async function openPostgres(url: string, max = 10): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000 });
  pool.on("error", () => {}); // idle client errors surface on the next query
  const client = await pool.connect();
  client.release();
  return new PgDatabase(pool, "postgres");
}

/**
 * Opens (creating if needed) an embedded PGlite database in `dataDir` (or in memory when
 * dataDir is null) and serves it on a unix socket inside `socketDir`.
 *
 * The pool holds ONE connection: pglite-socket multiplexes connections message by message, and
 * under concurrent transactions (50 parallel receipt appends) that interleaving stalled. One
 * connection serializes transactions in pg.Pool's queue instead — PGlite executes one query at
 * a time anyway. Code must therefore never use the pool while holding a transaction (it would
 * wait on itself); the service-pglite test project enforces that. See docs/adr/0002.
 */
export async function openPglite(opts: { dataDir: string | null; socketDir: string }): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  if (opts.dataDir) await mkdir(opts.dataDir, { recursive: true });
  await mkdir(opts.socketDir, { recursive: true });
  const db = opts.dataDir ? await PGlite.create(opts.dataDir) : await PGlite.create();
  const max = 1;
  const port = 5432;
  const server = new PGLiteSocketServer({
    db,
    path: path.join(opts.socketDir, `.s.PGSQL.${port}`),
    maxConnections: 2,
  });
  await server.start();
  const pool = new pg.Pool({ host: opts.socketDir, port, user: "postgres", database: "postgres", max });
  pool.on("error", () => {});
  return new PgDatabase(pool, "pglite", async () => {
    await server.stop();
    await db.close();
  });
}
