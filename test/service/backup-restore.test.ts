/**
 * Backup and restore with PostgreSQL's own tools (docs/operations/backups.md): an organization's
 * chains, approvals (decided and pending), receipts and checkpoints are recorded on a real
 * PostgreSQL; `pg_dump --format=custom` takes two backups; each is restored with `pg_restore`
 * into a fresh database and the service (buildService, as main.ts builds it after migrate) is
 * started on it with the same master key.
 *
 * From the newest backup: every receipt, approval and checkpoint verifies (v2 routes and the
 * offline `tollgate verify --checkpoint` on a fresh export), the pending approval can be decided,
 * an open chain's next event takes the next sequence, and the next receipt number follows the
 * last without a gap. From the older backup: the checkpoint published after it is reported as
 * truncation, online and offline, and as a fork once the restored log reuses the lost numbers. With another master key, the restored receipts do not verify.
 *
 * PostgreSQL only (pg_dump/pg_restore of the run's cluster); excluded from service-pglite.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { main } from "../../src/cli/main.js";
import type { ExportReport } from "../../src/cli/verify-export.js";
import { parseReceiptNumber } from "../../src/receipts/number.js";
import { buildService, type Service } from "../../src/service/app.js";
import { migrate } from "../../src/service/db/migrate.js";
import { type Database, openPostgres } from "../../src/service/db/pool.js";
import { postgresBinDir } from "../support/postgres.js";
import { startTestService, type TestService } from "../support/service.js";
import { decide, type Org, pendingApproval } from "./verification-helpers.js";

let t: TestService;
let org: Org;
let dir: string;
const restored: { db: Database; name: string; service: Service }[] = [];

/** Runs a PostgreSQL client tool (pg_dump, pg_restore) of the server's version; throws with its stderr. */
function pgTool(tool: string, args: string[]): void {
  const r = spawnSync(path.join(postgresBinDir(), tool), args, { encoding: "utf8", timeout: 120_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${tool} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
}

/** `pg_dump --format=custom` of the service's database into `file`. */
function backup(file: string): void {
  pgTool("pg_dump", ["--format=custom", `--file=${file}`, `--dbname=${t.databaseUrl}`]);
}

/**
 * Restores `file` into a new database with pg_restore, migrates (a no-op: the dump has the
 * schema and its migration records) and builds the service on it with `masterKey`.
 */
async function restore(file: string, masterKey: Buffer): Promise<{ service: Service; applied: number }> {
  const adminUrl = inject("postgresUrl");
  const name = `r_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = adminUrl.replace(/\/[^/]*$/, `/${name}`);
  pgTool("pg_restore", ["--exit-on-error", "--no-owner", `--dbname=${url}`, file]);
  const db = await openPostgres(url, 5);
  const applied = await migrate(db);
  const service = await buildService({
    db,
    masterKey,
    adminToken: t.adminToken,
    clock: t.clock,
    schedulerIntervalMs: 0,
    defaultMetrics: false,
  });
  await service.app.ready();
  restored.push({ db, name, service });
  return { service, applied: applied.length };
}

const call = async (s: Service, method: string, url: string, token: string, body?: unknown) => {
  const r = await s.app.inject({
    method: method as "GET",
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(body !== undefined && { payload: body as Record<string, unknown> }),
  });
  return { status: r.statusCode, json: r.body ? r.json() : null, body: r.body };
};

/** Records one action on `chainId` through `s`; returns the decision. */
async function act(s: Service, chainId: string, action_name: string, payload: Record<string, unknown>) {
  const r = await call(s, "POST", `/v1/chains/${chainId}/actions`, org.clientKey, {
    agent_name: "worker",
    action_type: "tool_call",
    action_name,
    payload,
  });
  expect(r.status, r.body).toBe(200);
  return r.json;
}

async function complete(s: Service, chainId: string) {
  const r = await call(s, "POST", `/v1/chains/${chainId}/complete`, org.clientKey, {});
  expect(r.status, r.body).toBe(200);
  return r.json as { receipt_id: string; receipt_number: string; checkpoint: Record<string, unknown> };
}

async function openChain(s: Service, name: string): Promise<string> {
  const r = await call(s, "POST", "/v1/chains", org.clientKey, { name });
  expect(r.status, r.body).toBe(201);
  return r.json.chain_id;
}

/** The organization's published checkpoint (GET /v1/receipts/checkpoint). */
async function checkpoint(s: Service): Promise<Record<string, unknown>> {
  const r = await call(s, "GET", "/v1/receipts/checkpoint", org.adminKey);
  expect(r.status, r.body).toBe(200);
  return r.json;
}

const verifyReceipt = async (s: Service, id: string) =>
  (await call(s, "GET", `/v1/verification/v2/receipts/${id}`, org.adminKey)).json;
const verifyApproval = async (s: Service, id: string) =>
  (await call(s, "GET", `/v1/verification/v2/approvals/${id}`, org.adminKey)).json;
const verifyCheckpoint = async (s: Service, cp: unknown) => {
  const r = await call(s, "POST", "/v1/verification/v2/checkpoints", org.adminKey, cp);
  expect(r.status, r.body).toBe(200);
  return r.json;
};

/** `tollgate verify <export> --jwks … --approval-jwks … [--checkpoint …] --json`, in-process, on a fresh export from `s`. */
async function offline(s: Service, cp?: unknown): Promise<{ code: number; report: ExportReport }> {
  const file = (name: string, value: unknown) => {
    const f = path.join(dir, `${name}-${randomBytes(4).toString("hex")}.json`);
    writeFileSync(f, JSON.stringify(value));
    return f;
  };
  const exp = await call(s, "GET", "/v1/receipts/export", org.adminKey);
  expect(exp.status, exp.body).toBe(200);
  const keys = async (p: string) => (await s.app.inject({ method: "GET", url: p })).json();
  const argv = [
    "verify",
    file("export", exp.json),
    "--jwks",
    file("receipt-keys", await keys("/.well-known/tollgate/receipt-keys.json")),
    "--approval-jwks",
    file("approval-keys", await keys("/.well-known/tollgate/approval-keys.json")),
    ...(cp ? ["--checkpoint", file("checkpoint", cp)] : []),
    "--json",
  ];
  let out = "";
  const code = await main(argv, {
    stdout: (x) => {
      out += x;
    },
    stderr: (x) => {
      out += x;
    },
    readStdin: async () => "",
    fetch: (...a) => fetch(...a),
  });
  return { code, report: JSON.parse(out) };
}

// What the original service recorded, in order.
const receipts: { id: string; number: string }[] = [];
const approvals = { decided: "", pendingAtBackup: "" };
let openChainId = "";
let openChainLastSequence = 0;
let published: { first: Record<string, unknown>; second: Record<string, unknown> };
let dumps: { older: string; newer: string };

beforeAll(async () => {
  t = await startTestService();
  if (!t.databaseUrl) throw new Error("backup-restore needs real PostgreSQL (project service-postgres)");
  dir = mkdtempSync(path.join(os.tmpdir(), "tg-backup-"));
  org = await t.bootstrapOrg("backup-org");
  const s = t.service;

  // Before the first backup: a plain receipt, a receipt covering an approved payment, and a
  // payment left pending across both backups.
  const plain = await openChain(s, "plain");
  await act(s, plain, "read_file", { path: "/a" });
  const r1 = await complete(s, plain);
  receipts.push({ id: r1.receipt_id, number: r1.receipt_number });
  const paid = await pendingApproval(t, org);
  await decide(t, org.adminKey, paid.approvalId, { decision: "approve", notes: "checked" });
  approvals.decided = paid.approvalId;
  const r2 = await complete(s, paid.chainId);
  receipts.push({ id: r2.receipt_id, number: r2.receipt_number });
  approvals.pendingAtBackup = (await pendingApproval(t, org)).approvalId;
  published = { first: await checkpoint(s), second: {} };
  dumps = { older: path.join(dir, "older.dump"), newer: path.join(dir, "newer.dump") };
  backup(dumps.older);

  // After it: one more receipt (published in the second checkpoint) and a chain left open.
  t.clock.advance(60_000);
  const later = await openChain(s, "later");
  await act(s, later, "read_file", { path: "/b" });
  const r3 = await complete(s, later);
  receipts.push({ id: r3.receipt_id, number: r3.receipt_number });
  openChainId = await openChain(s, "open-across-backup");
  await act(s, openChainId, "read_file", { path: "/c" });
  openChainLastSequence = (await act(s, openChainId, "list_dir", { path: "/" })).sequence;
  published.second = await checkpoint(s);
  backup(dumps.newer);
});

afterAll(async () => {
  for (const r of restored) {
    await r.service.close();
    await r.db.close();
  }
  if (restored.length) {
    const admin = new pg.Client({ connectionString: inject("postgresUrl") });
    await admin.connect();
    for (const r of restored) await admin.query(`DROP DATABASE IF EXISTS ${r.name} WITH (FORCE)`);
    await admin.end();
  }
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("backup with pg_dump, restore with pg_restore", () => {
  it("the recorded history is what the restores are checked against", () => {
    expect(receipts.map((r) => parseReceiptNumber(r.number)?.sequence)).toEqual([1, 2, 3]);
    expect(published.first).toMatchObject({ sequence: 2, receipt_number: receipts[1]!.number });
    expect(published.second).toMatchObject({ sequence: 3, receipt_number: receipts[2]!.number });
    expect(openChainLastSequence).toBe(2);
  });

  it("the newest backup restores: migrations are already applied, every receipt, approval and checkpoint verifies", async () => {
    const { service: s, applied } = await restore(dumps.newer, t.service.ctx.masterKey);
    expect(applied).toBe(0);
    for (const r of receipts) {
      const v = await verifyReceipt(s, r.id);
      expect(v.overall_status, `${r.number}: ${JSON.stringify(v.problems)}`).toBe("valid");
    }
    expect((await verifyApproval(s, approvals.decided)).overall_status).toBe("valid");
    expect((await verifyApproval(s, approvals.pendingAtBackup)).overall_status).toBe("pending");
    for (const cp of [published.first, published.second]) {
      const v = await verifyCheckpoint(s, cp);
      expect(v, JSON.stringify(v.problems)).toMatchObject({
        overall_status: "valid",
        log: { status: "extended" },
      });
    }
    const off = await offline(s, published.second);
    expect(off.code, JSON.stringify(off.report.problems)).toBe(0);
    expect(off.report).toMatchObject({ overall_status: "valid", receipt_count: 3 });
    expect(off.report.checkpoint).toMatchObject({ signature: "valid", log: "extended" });
  });

  it("on the restore, work continues: the pending approval is decided, sequences and receipt numbers follow without gaps", async () => {
    const s = restored[0]!.service;
    const decided = await call(
      s,
      "POST",
      `/v1/approvals/${approvals.pendingAtBackup}/decision`,
      org.adminKey,
      {
        decision: "deny",
        notes: "after the restore",
      },
    );
    expect(decided.status, decided.body).toBe(200);
    expect((await verifyApproval(s, approvals.pendingAtBackup)).overall_status).toBe("valid");

    const next = await act(s, openChainId, "read_file", { path: "/d" });
    expect(next.sequence).toBe(openChainLastSequence + 1);
    const r4 = await complete(s, openChainId);
    expect(parseReceiptNumber(r4.receipt_number)?.sequence).toBe(4);
    expect(r4.checkpoint).toMatchObject({ sequence: 4, receipt_number: r4.receipt_number });
    expect((await verifyReceipt(s, r4.receipt_id)).overall_status).toBe("valid");

    const off = await offline(s, published.second);
    expect(off.code, JSON.stringify(off.report.problems)).toBe(0);
    expect(off.report).toMatchObject({ overall_status: "valid", receipt_count: 4, to_sequence: 4 });
  });

  it("a restore older than a published checkpoint is detected as truncation, online and offline", async () => {
    const { service: s } = await restore(dumps.older, t.service.ctx.masterKey);
    // The older backup itself is sound and extends what was published before it...
    for (const r of receipts.slice(0, 2)) expect((await verifyReceipt(s, r.id)).overall_status).toBe("valid");
    expect((await verifyCheckpoint(s, published.first)).overall_status).toBe("valid");
    // ...but not the checkpoint published after it.
    const v = await verifyCheckpoint(s, published.second);
    expect(v).toMatchObject({
      overall_status: "invalid",
      signature: { status: "valid" },
      log: { status: "truncated", latest_sequence: 2 },
    });
    expect(v.problems.join(" ")).toMatch(/the log ends at sequence 2, before .* \(sequence 3\)/);
    const off = await offline(s, published.second);
    expect(off.code).toBe(1);
    expect(off.report.checkpoint).toMatchObject({ signature: "valid", log: "truncated" });

    // Once the restored service issues receipts again, the lost sequence 3 is taken by another
    // receipt: the kept checkpoint now reports a fork, never "extended".
    const again = await openChain(s, "after-the-old-restore");
    await act(s, again, "read_file", { path: "/e" });
    const r = await complete(s, again);
    expect(parseReceiptNumber(r.receipt_number)?.sequence).toBe(3);
    expect(await verifyCheckpoint(s, published.second)).toMatchObject({
      overall_status: "invalid",
      log: { status: "forked", latest_sequence: 3 },
    });
  });

  it("restored without its master key: integrity checks fail and nothing new can be signed (back the key up separately)", async () => {
    const { service: s } = await restore(dumps.newer, randomBytes(32));
    const v = await verifyReceipt(s, receipts[0]!.id);
    // The Ed25519 signature is public-key material and still verifies; the service's own
    // integrity check (HMAC under a key derived from the master key) does not.
    expect(v).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "invalid" },
      signature: { status: "valid" },
    });
    // The sealed signing keys cannot be unsealed: completing the open chain fails (alert
    // TollgateReceiptFailures).
    const chain = await openChain(s, "after-wrong-key");
    const done = await call(s, "POST", `/v1/chains/${chain}/complete`, org.clientKey, {});
    expect(done.status).toBe(500);
    expect(done.body).not.toContain(t.service.ctx.masterKey.toString("hex"));
  });
});
