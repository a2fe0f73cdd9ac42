/**
 * Helpers shared by the verification, public token, export and withdraw suites: chains with receipts,
 * approvals, user sessions, direct SQL and metric values against the real test service.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { createUserSession, type UserRole } from "../../src/service/auth.js";
import type { TestService } from "../support/service.js";

export type Org = Awaited<ReturnType<TestService["bootstrapOrg"]>>;

/** Opens a chain, records one allowed action, completes it; returns its receipt. */
export async function completedReceipt(t: TestService, org: Org, name = "work") {
  const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name } });
  expect(c.statusCode, c.body).toBe(201);
  const chainId = c.json().chain_id as string;
  const a = await t.call("POST", `/v1/chains/${chainId}/actions`, {
    token: org.clientKey,
    body: {
      agent_name: "reader",
      action_type: "tool_call",
      action_name: "read_file",
      payload: { path: "/x" },
    },
  });
  expect(a.statusCode, a.body).toBe(200);
  const done = await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
  expect(done.statusCode, done.body).toBe(200);
  return {
    chainId,
    receiptId: done.json().receipt_id as string,
    receiptNumber: done.json().receipt_number as string,
  };
}

let payers = 0;

/**
 * Opens a chain and records an action that needs approval; returns the pending approval. Each
 * call uses a new agent name, so an exception granted earlier never covers it.
 */
export async function pendingApproval(t: TestService, org: Org) {
  const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "pay" } });
  const chainId = c.json().chain_id as string;
  const pay = await t.call("POST", `/v1/chains/${chainId}/actions`, {
    token: org.clientKey,
    body: {
      agent_name: `payer-${++payers}`,
      action_type: "tool_call",
      action_name: "pay",
      payload: { amount_usd: 7500 },
    },
  });
  expect(pay.json().policy_decision, pay.body).toBe("require_approval");
  return { chainId, approvalId: pay.json().approval_id as string };
}

/** Decides an approval with `token` (approver, admin user or admin key). */
export async function decide(
  t: TestService,
  token: string,
  approvalId: string,
  body: Record<string, unknown>,
) {
  const d = await t.call("POST", `/v1/approvals/${approvalId}/decision`, { token, body });
  expect(d.statusCode, d.body).toBe(200);
  return d.json();
}

/** Adds `email` to the organization with `roles` and returns a session token for it. */
export async function session(t: TestService, org: Org, email: string, roles: UserRole[]): Promise<string> {
  const m = await t.call("PUT", `/v1/admin/organizations/${org.slug}/members/${email}`, {
    token: org.adminKey,
    body: { roles },
  });
  expect(m.statusCode, m.body).toBeLessThan(300);
  const s = await createUserSession(t.service.ctx.db, { orgId: org.orgId, email, clock: t.clock });
  return s.token;
}

/** Runs SQL directly against the service's database (tamper tests). */
export async function sql(t: TestService, text: string, values: unknown[] = []) {
  return t.service.ctx.db.query(text, values);
}

/** Current value of a counter sample, 0 when absent. */
export async function counterValue(
  t: TestService,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const metric = await t.service.ctx.metrics.registry.getSingleMetric(name)?.get();
  const sample = metric?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return sample?.value ?? 0;
}

/** True when the JSON text contains no raw receipt/approval proof material. */
export function assertNoProofMaterial(text: string): void {
  expect(text).not.toMatch(/hmac-sha256:/);
  expect(text).not.toMatch(/sha256:[0-9a-f]{8}/);
  expect(text).not.toMatch(/previous_receipt_hash|events_summary|signed_payload|"body"/);
  expect(text).not.toMatch(/[A-Za-z0-9_-]{85}[AQgw]/); // an Ed25519 signature
}

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/tollgate.mjs");

/** Runs the `tollgate` CLI as a child process; never throws on a non-zero exit. */
export function tollgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
