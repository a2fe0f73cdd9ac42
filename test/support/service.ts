/**
 * Runs the real governance service for a test file: a fresh database (real PostgreSQL or
 * PGlite, see db.ts), a manual clock, the scheduler off (tests run due jobs explicitly), and
 * helpers to bootstrap organizations and call the API.
 */
import { randomBytes } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { buildService, type Service } from "../../src/service/app.js";
import { ManualClock } from "../../src/service/clock.js";
import type { WorkloadAuthenticator } from "../../src/service/identity/token-review.js";
import { runDueJobs } from "../../src/service/jobs.js";
import { freshDatabase } from "./db.js";

export interface TestService {
  service: Service;
  clock: ManualClock;
  adminToken: string;
  /** Base URL when started with listen: true. */
  url: string;
  /** Connection string of the test database (real PostgreSQL only; undefined on PGlite). */
  databaseUrl: string | undefined;
  /** Calls the API in-process; `token` is a bearer secret (default: none). */
  call(
    method: string,
    url: string,
    opts?: { token?: string; body?: unknown },
  ): Promise<LightMyRequestResponse>;
  /** Creates an organization with a client and an admin API key. */
  bootstrapOrg(
    slug: string,
    spec?: Record<string, unknown>,
  ): Promise<{ slug: string; orgId: string; clientKey: string; adminKey: string }>;
  /** Runs durable jobs that are due at the clock's current time. */
  runJobs(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts a test service; `listen` also serves it on a loopback port for real HTTP clients;
 * `notify` (PostgreSQL only; ignored on PGlite) gives it the approval LISTEN connection that a
 * deployed service has (src/service/approvals/listener.ts), so wake-ups sent by NOTIFY at COMMIT
 * reach its held requests.
 */
export async function startTestService(
  opts: { listen?: boolean; notify?: boolean; poolMax?: number; workloads?: WorkloadAuthenticator } = {},
): Promise<TestService> {
  const database = await freshDatabase({ poolMax: opts.poolMax });
  const clock = new ManualClock();
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
  const service = await buildService({
    db: database.db,
    masterKey: randomBytes(32),
    adminToken,
    clock,
    schedulerIntervalMs: 0,
    defaultMetrics: false,
    workloads: opts.workloads,
    ...(opts.notify && database.url !== undefined && { databaseUrl: database.url }),
  });
  let url = "";
  if (opts.listen) url = await service.app.listen({ port: 0, host: "127.0.0.1" });
  else await service.app.ready();
  const call: TestService["call"] = (method, path, o = {}) =>
    service.app.inject({
      method: method as "GET",
      url: path,
      headers: o.token ? { authorization: `Bearer ${o.token}` } : {},
      ...(o.body !== undefined && { payload: o.body as Record<string, unknown> }),
    });
  return {
    service,
    clock,
    adminToken,
    url,
    databaseUrl: database.url,
    call,
    async bootstrapOrg(slug, spec = {}) {
      const org = await call("PUT", `/v1/admin/organizations/${slug}`, { token: adminToken, body: spec });
      if (org.statusCode >= 300) throw new Error(`create org failed: ${org.body}`);
      const mk = async (role: string) => {
        const r = await call("POST", `/v1/admin/organizations/${slug}/api-keys`, {
          token: adminToken,
          body: { name: `${role}-key`, role },
        });
        if (r.statusCode !== 201) throw new Error(`create key failed: ${r.body}`);
        return r.json().api_key as string;
      };
      const { rows } = await database.db.query("SELECT id FROM organizations WHERE slug = $1", [slug]);
      return { slug, orgId: rows[0]!.id, clientKey: await mk("client"), adminKey: await mk("admin") };
    },
    runJobs: () => runDueJobs(database.db, { clock, handlers: service.jobHandlers }),
    async close() {
      await service.close();
      await database.close();
    },
  };
}
