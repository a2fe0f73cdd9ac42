/**
 * A fresh, migrated database for one test file: a new database in the run's real PostgreSQL
 * cluster (project service-postgres) or an in-memory PGlite (project service-pglite).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { inject } from "vitest";
import { migrate } from "../../src/service/db/migrate.js";
import { type Database, openPglite, openPostgres } from "../../src/service/db/pool.js";

/** Which backend this project runs against. */
export const backend = (): "postgres" | "pglite" => {
  const b = process.env.TOLLGATE_TEST_DB;
  if (b !== "postgres" && b !== "pglite")
    throw new Error("TOLLGATE_TEST_DB must be postgres or pglite (set by vitest.config.ts)");
  return b;
};

/** Opens a fresh migrated database; `close` drops it. */
export async function freshDatabase(
  opts: { poolMax?: number } = {},
): Promise<{ db: Database; url?: string; close(): Promise<void> }> {
  if (backend() === "pglite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-pglite-"));
    const db = await openPglite({ dataDir: null, socketDir: dir });
    await migrate(db);
    return {
      db,
      async close() {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const adminUrl = inject("postgresUrl");
  const name = `t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  const db = await openPostgres(url, opts.poolMax ?? 10);
  await migrate(db);
  return {
    db,
    url,
    async close() {
      await db.close();
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
