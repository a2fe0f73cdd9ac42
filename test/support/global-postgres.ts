/**
 * vitest globalSetup of the service-postgres project: one real PostgreSQL cluster per run;
 * each test file creates its own database in it (test/support/db.ts). Uses
 * TOLLGATE_TEST_DATABASE_URL instead when set (an existing server).
 */
import type { TestProject } from "vitest/node";
import { startPostgres } from "./postgres.js";

export default async function setup(project: TestProject) {
  if (process.env.TOLLGATE_TEST_DATABASE_URL) {
    project.provide("postgresUrl", process.env.TOLLGATE_TEST_DATABASE_URL);
    return;
  }
  const cluster = await startPostgres();
  project.provide("postgresUrl", cluster.url);
  return async () => cluster.stop();
}

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
