/**
 * Database access: PostgreSQL through `pg`, or embedded PGlite served over the PostgreSQL wire
 * protocol on a private unix socket so that the very same `pg` code path runs against it
 * (DESIGN.md "Storage and time"; ../shared/notes/pglite.md).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import v8 from "node:v8";
import pg from "pg";
import { queryTraced } from "./tracing.js";

/**
 * A statement PostgreSQL prepares once per connection and then only binds and executes: for
 * the hot path's fixed statements, whose parse and plan otherwise cost more server CPU than
 * their execution. `name` must be unique per distinct `text`.
 */
export interface PreparedStatement {
  name: string;
  text: string;
  /** "array": each row an array of its columns in select order (no object per row). */
  rowMode?: "array";
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
    return queryTraced(this.pool, text, values) as Promise<pg.QueryResult<R>>;
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const q: Queryable = {
      query: (text, values) => queryTraced(client, text, values) as Promise<never>,
    };
    try {
      await q.query("BEGIN");
      const result = await fn(q);
      await q.query("COMMIT");
      return result;
    } catch (err) {
      await q.query("ROLLBACK").catch(() => {});
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
 * PostgreSQL settings of an embedded database, sized for one service process on a trial:
 * PostgreSQL's default 128 MB of shared buffers alone grow PGlite's WebAssembly heap past what a
 * small pod has (README "Storage": embedded mode and its memory).
 */
export const PGLITE_SETTINGS = ["shared_buffers = 16MB", "maintenance_work_mem = 16MB"];

/**
 * Creates the embedded cluster in `dataDir` (initdb) when there is none yet, in a short-lived
 * child process: initdb peaks at ~700 MiB of RSS, and a process does not give that memory back,
 * so doing it in the service itself left the service at ~800 MiB for its whole life (bench/memory
 * "embedded" row). Opening an existing cluster costs ~150 MiB.
 * @throws Error with the child's stderr when initdb fails.
 */
async function initializePglite(dataDir: string): Promise<void> {
  if (existsSync(path.join(dataDir, "PG_VERSION"))) return;
  // The package's CommonJS entry, resolved from here: the child needs no module resolution of its own.
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const script = `const { PGlite } = require(${JSON.stringify(entry)});
PGlite.create(process.argv[1], { postgresqlconf: ${JSON.stringify(PGLITE_SETTINGS)} }).then((db) => db.close());`;
  // Liftoff-only here too: ~10% lower initdb peak (the child's code is thrown away anyway).
  await promisify(execFile)(process.execPath, ["--liftoff-only", "-e", script, dataDir], {
    timeout: 300_000,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" },
  }).catch((err: Error & { stderr?: string }) => {
    throw new Error(
      `creating the embedded database in ${dataDir} failed: ${err.stderr?.trim() || err.message}`,
    );
  });
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
 *
 * `lowMemory` (the service's embedded mode): V8 compiles PGlite's WebAssembly with its baseline
 * compiler only (`--liftoff-only`, a process-wide flag set before the module is compiled), which
 * keeps ~45 MiB less machine code resident; queries run slower, which a trial does not notice.
 */
export async function openPglite(opts: {
  dataDir: string | null;
  socketDir: string;
  lowMemory?: boolean;
}): Promise<Database> {
  if (opts.lowMemory) v8.setFlagsFromString("--liftoff-only");
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  if (opts.dataDir) {
    await mkdir(opts.dataDir, { recursive: true });
    await initializePglite(opts.dataDir);
  }
  await mkdir(opts.socketDir, { recursive: true });
  const settings = { postgresqlconf: PGLITE_SETTINGS };
  const db = opts.dataDir ? await PGlite.create(opts.dataDir, settings) : await PGlite.create(settings);
  const max = 1;
  const port = 5432;
  const server = new PGLiteSocketServer({
    db,
    path: path.join(opts.socketDir, `.s.PGSQL.${port}`),
    maxConnections: 2,
  });
  await server.start();
  // PGlite is one session: what a connection prepared outlives it. pg's pool closed its idle
  // client after 10 s, and the next connection's named statements then failed with "prepared
  // statement already exists" (a 500 after an idle spell). Keep the one client open, and start any
  // new connection (after an error) from a clean slate.
  const pool = new pg.Pool({
    host: opts.socketDir,
    port,
    user: "postgres",
    database: "postgres",
    max,
    idleTimeoutMillis: 0,
  });
  pool.on("connect", (client) => {
    client.query("DEALLOCATE ALL").catch(() => {});
  });
  pool.on("error", () => {});
  return new PgDatabase(pool, "pglite", async () => {
    await server.stop();
    await db.close();
  });
}
