/**
 * Versioned migrations: `migrations/NNN_name.sql`, applied in order inside one transaction each,
 * under an advisory lock so that several replicas starting together apply each once.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "./pool.js";

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "migrations");
const LOCK_ID = 7_401_202_611; // arbitrary, constant: "tollgate migrations"

/** Applies pending migrations; returns the versions applied by this call. */
export async function migrate(db: Database): Promise<number[]> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{3}_.+\.sql$/.test(f)).sort();
  return db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock($1)", [LOCK_ID]);
    await q.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const done = new Set(
      (await q.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map(
        (r) => r.version,
      ),
    );
    const applied: number[] = [];
    for (const file of files) {
      const version = Number(file.slice(0, 3));
      if (done.has(version)) continue;
      await q.query(await readFile(path.join(migrationsDir, file), "utf8"));
      await q.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [version, file]);
      applied.push(version);
    }
    return applied;
  });
}
