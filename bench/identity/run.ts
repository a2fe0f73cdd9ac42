/**
 * bench/identity: what verifying a workload token adds to recording an action, once the token's
 * review is cached (issue 27 target: ≤ 0.1 ms p50).
 *
 * Real parts: etcd + kube-apiserver (test/support/controlplane.ts) answer the TokenReviews; the
 * service is built in-process on embedded PGlite with a WorkloadAuthenticator over that API
 * server. Two chains of one organization record the same action through the service's full HTTP
 * handling (Fastify inject: authentication hook, validation, policy, guarded write): one with the
 * organization's client API key (the baseline, served from the API-key cache), one with a token
 * bound to a pod (served from the TokenReview cache after its first use). The two alternate call
 * by call so drift hits both alike; each repeat gives one p50 of each; figures are medians over
 * repeats. Reported: p50 of each, the added p50 (token − key) against the 0.1 ms target, and the
 * TokenReviews sent (1 per token and cache period).
 *
 *   npx tsx bench/identity/run.ts [--calls 3000] [--repeats 3] [--quick]
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { buildService } from "../../src/service/app.js";
import { ManualClock } from "../../src/service/clock.js";
import { migrate } from "../../src/service/db/migrate.js";
import { openPglite } from "../../src/service/db/pool.js";
import {
  type KubeIdentityApi,
  kubeApiServer,
  WorkloadAuthenticator,
} from "../../src/service/identity/token-review.js";
import { startControlPlane } from "../../test/support/controlplane.js";
import { kubectl } from "../../test/support/kubectl.js";
import { progress, report } from "../lib/report.js";
import { infoRow, median, type ResultRow } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    calls: { type: "string" },
    repeats: { type: "string" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const CALLS = Number(args.calls ?? (quick ? 200 : 3000));
const REPEATS = Number(args.repeats ?? (quick ? 1 : 3));
const TARGET_MS = 0.1;

const cp = await startControlPlane();
const k = async (a: string[], input?: string) => {
  const r = await kubectl(cp, a, { input });
  if (r.code !== 0) throw new Error(`kubectl ${a.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
try {
  const objects = [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "bench", labels: { "tollgate.dev/organization": "bench" } },
    },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "agent", namespace: "bench" } },
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "agent-0", namespace: "bench" },
      spec: { serviceAccountName: "agent", containers: [{ name: "agent", image: "agent:bench" }] },
    },
  ];
  await k(["apply", "-f", "-"], objects.map((o) => JSON.stringify(o)).join("\n"));
  const token = (
    await k([
      "create",
      "token",
      "agent",
      "-n",
      "bench",
      "--audience",
      "tollgate",
      "--duration",
      "1h",
      "--bound-object-kind",
      "Pod",
      "--bound-object-name",
      "agent-0",
    ])
  ).trim();

  const api = await kubeApiServer(cp.kubeconfigPath);
  let reviews = 0;
  const counted: KubeIdentityApi = {
    reviewToken: (t, a) => {
      reviews++;
      return api.reviewToken(t, a);
    },
    namespaceLabels: (n) => api.namespaceLabels(n),
  };
  const socketDir = mkdtempSync(path.join(os.tmpdir(), "tg-bench-identity-"));
  const db = await openPglite({ dataDir: null, socketDir });
  await migrate(db);
  const clock = new ManualClock();
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
  const service = await buildService({
    db,
    masterKey: randomBytes(32),
    adminToken,
    clock,
    schedulerIntervalMs: 0,
    defaultMetrics: false,
    workloads: new WorkloadAuthenticator({ api: counted, cacheSeconds: 600 }),
  });
  await service.app.ready();
  const call = async (method: "GET" | "POST" | "PUT", url: string, bearer: string, body?: unknown) => {
    const r = await service.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${bearer}` },
      ...(body !== undefined && { payload: body as Record<string, unknown> }),
    });
    if (r.statusCode >= 300) throw new Error(`${method} ${url}: ${r.statusCode} ${r.body}`);
    return r.json();
  };
  await call("PUT", "/v1/admin/organizations/bench", adminToken, {
    runaway_limits: { max_events: 0 },
  });
  const key = (
    await call("POST", "/v1/admin/organizations/bench/api-keys", adminToken, {
      name: "bench",
      role: "client",
    })
  ).api_key as string;
  const action = {
    agent_name: "bench",
    action_type: "tool_call",
    action_name: "read_record",
    payload: { id: 7 },
  };
  const p50: Record<"key" | "token", number[]> = { key: [], token: [] };
  for (let rep = 0; rep < REPEATS; rep++) {
    const chains = {
      key: (await call("POST", "/v1/chains", key, { name: "bench-key" })).chain_id as string,
      token: (await call("POST", "/v1/chains", token, { name: "bench-token" })).chain_id as string,
    };
    const times: Record<"key" | "token", number[]> = { key: [], token: [] };
    for (let i = 0; i < CALLS + 50; i++) {
      for (const kind of (i % 2 ? ["key", "token"] : ["token", "key"]) as ("key" | "token")[]) {
        const t = performance.now();
        await call("POST", `/v1/chains/${chains[kind]}/actions`, kind === "key" ? key : token, action);
        if (i >= 50) times[kind].push(performance.now() - t);
      }
    }
    for (const kind of ["key", "token"] as const) {
      const sorted = times[kind].sort((a, b) => a - b);
      p50[kind].push(sorted[Math.floor(sorted.length / 2)]!);
    }
    progress(
      `repeat ${rep + 1}: p50 key ${p50.key.at(-1)!.toFixed(3)} ms, token ${p50.token.at(-1)!.toFixed(3)} ms`,
    );
  }
  const added = p50.token.map((t, i) => t - p50.key[i]!);
  const base = (figure: string, values: number[]): ResultRow => infoRow("identity", figure, "ms", values);
  const rows: ResultRow[] = [
    base("record-action p50, API key (cached)", p50.key),
    {
      ...base("record-action p50, workload token (review cached)", p50.token),
      baseline: "API key",
      baselineValue: median(p50.key),
      ratio: median(p50.token) / median(p50.key),
    },
    {
      ...base("identity check added p50 (token − key)", added),
      target: `≤ ${TARGET_MS} ms`,
      met: median(added) <= TARGET_MS,
    },
    { ...base("TokenReviews sent", [reviews]), unit: "requests" },
  ];
  report("identity", rows, { calls: CALLS, repeats: REPEATS });
  await service.close();
  await db.close();
} finally {
  await cp.stop();
}
