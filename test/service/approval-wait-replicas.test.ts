/**
 * Long-poll wake-up across replicas (PostgreSQL only; the service-pglite project excludes this
 * file — PGlite serves a single process): a decision on one service process wakes a request
 * held by another through LISTEN/NOTIFY, also after the listener connection was killed. Each
 * answer is checked with how B's hold ended (`tollgate_approval_status_holds_total{ended}` on its
 * /metrics): a lost notification still answers "approved" once the wait elapses, as `elapsed`.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, type ServiceProcess, startServiceProcess } from "../../bench/lib/parts.js";
import { LISTENER_APPLICATION_NAME } from "../../src/service/approvals/listener.js";
import { holdsEndedDuring, poll } from "../support/approval-poll.js";
import { freshDatabase } from "../support/db.js";
import { sample, scrape } from "../support/promtool.js";

// Two replicas are two processes: the in-process wake-up cannot reach the other one, only
// PostgreSQL's NOTIFY can. PGlite serves a single process.
describe("two service processes on one PostgreSQL", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let clientKey: string;
  let adminKey: string;
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;

  beforeAll(async () => {
    database = await freshDatabase();
    const env = { TOLLGATE_ADMIN_TOKEN: adminToken, TOLLGATE_MASTER_KEY: randomBytes(32).toString("hex") };
    a = await startServiceProcess(database.url!, env);
    b = await startServiceProcess(database.url!, env);
    await api(`${a.url}/v1/admin/organizations/replicas`, adminToken, "PUT", {});
    const key = async (role: string) =>
      (
        await api(`${a.url}/v1/admin/organizations/replicas/api-keys`, adminToken, "POST", {
          name: role,
          role,
        })
      ).api_key as string;
    clientKey = await key("client");
    adminKey = await key("admin");
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await database?.close();
  });

  /** Gates a chain on A, holds on B, approves on A; returns B's answer. */
  async function approveOnAWakeB() {
    const chain = await api(`${a.url}/v1/chains`, clientKey, "POST", { name: "replicas" });
    const r = await api(`${a.url}/v1/chains/${chain.chain_id}/actions`, clientKey, "POST", {
      agent_name: "payer",
      action_type: "tool_call",
      action_name: "pay",
      payload: { amount_usd: 7500 },
    });
    expect(r.policy_decision).toBe("require_approval");
    const { value: answer, ended } = await holdsEndedDuring(
      () => scrape(`${b.url}/metrics`),
      async () => {
        const waiting = poll(b.url, clientKey, chain.chain_id, `?approval_id=${r.approval_id}&wait=5`);
        await waitingOn(b);
        await api(`${a.url}/v1/approvals/${r.approval_id}/decision`, adminKey, "POST", {
          decision: "approve",
        });
        return waiting;
      },
    );
    return { answer, ended };
  }

  /** Resolves once `svc` holds a request whose read showed the approval pending. */
  async function waitingOn(svc: ServiceProcess): Promise<void> {
    const deadline = performance.now() + 10_000;
    while (!sample(await scrape(`${svc.url}/metrics`), "tollgate_approval_status_waiting")) {
      if (performance.now() > deadline) throw new Error("the request was not held");
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  /** pids of the LISTEN connections that are listening. */
  async function listeners(): Promise<number[]> {
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    try {
      const { rows } = await c.query(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%' ORDER BY pid",
        [LISTENER_APPLICATION_NAME],
      );
      return rows.map((r) => r.pid as number);
    } finally {
      await c.end();
    }
  }

  it("an approval on A wakes a request held by B", async () => {
    expect(await listeners()).toHaveLength(2);
    const { answer, ended } = await approveOnAWakeB();
    expect(answer.status).toBe(200);
    expect(answer.body.approval.status).toBe("approved");
    // Woken by A's NOTIFY (B has no in-process wake-up of A's decision), not by its wait elapsing.
    expect(ended).toEqual({ woken: 1 });
  });

  it("the listener reconnects after its connection is killed", async () => {
    const before = await listeners();
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    await c.query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [before]);
    await c.end();
    const deadline = performance.now() + 15_000;
    for (;;) {
      const now = await listeners();
      if (now.length === 2 && now.every((pid) => !before.includes(pid))) break;
      if (performance.now() > deadline) throw new Error(`listeners did not come back: ${now}`);
      await new Promise((res) => setTimeout(res, 100));
    }
    const { answer, ended } = await approveOnAWakeB();
    expect(answer.body.approval.status).toBe("approved");
    expect(ended).toEqual({ woken: 1 });
  });
});
