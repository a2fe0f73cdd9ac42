import { defineConfig } from "vitest/config";

/**
 * One run, several projects:
 * - unit: pure modules (policy, receipts, sdk helpers), no I/O.
 * - service-postgres / service-pglite: the same service suite against real PostgreSQL
 *   (a throwaway cluster started by test/support/global-postgres.ts) and embedded PGlite.
 * - kube, e2e, browser: real control plane, full stack, Chromium.
 * - cluster: a kind cluster with real pods (scripts/kind-up.sh): the chart with images built from
 *   the Dockerfile, the operator, the injected sidecar governing calls to real MCP servers.
 * A test that needs a real part fails when the part is missing; nothing skips silently.
 */
const serviceSuites = ["test/service/**/*.test.ts", "test/sdk/**/*.test.ts"];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: "forks",
    projects: [
      // Project options are not inherited from the root: the unit project's own timeout (vitest's
      // default 5 s failed test/unit/boundaries.test.ts, one Biome run per case, on a loaded machine).
      { test: { name: "unit", include: ["test/unit/**/*.test.ts"], testTimeout: 30_000 } },
      {
        test: {
          name: "service-postgres",
          include: serviceSuites,
          env: { TOLLGATE_TEST_DB: "postgres" },
          globalSetup: ["test/support/global-postgres.ts"],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "service-pglite",
          include: serviceSuites,
          // Several service processes on one database need PostgreSQL (LISTEN/NOTIFY).
          // backup-restore: pg_dump / pg_restore of the real PostgreSQL cluster.
          exclude: ["test/service/approval-wait-replicas.test.ts", "test/service/backup-restore.test.ts"],
          env: { TOLLGATE_TEST_DB: "pglite" },
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          env: { TOLLGATE_TEST_DB: "postgres" },
          globalSetup: ["test/support/global-postgres.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          poolOptions: { forks: { singleFork: true } },
        },
      },
      {
        test: {
          name: "sidecar",
          include: ["test/sidecar/**/*.test.ts"],
          env: { TOLLGATE_TEST_DB: "postgres" },
          globalSetup: ["test/support/global-postgres.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "kube",
          include: ["test/kube/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          poolOptions: { forks: { singleFork: true } },
        },
      },
      {
        test: {
          name: "cluster",
          include: ["test/cluster/**/*.test.ts"],
          globalSetup: ["test/cluster/global-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 600_000,
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
