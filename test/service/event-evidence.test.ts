/**
 * Every recorded event is covered by the evidence (issue 18 §2), on the real database: each
 * kind of tampering done with direct SQL — alter a receipt field, delete or reorder receipts,
 * alter, delete, insert or reorder an event, alter or delete an approval, truncate the tail
 * (with and without re-appending) — is detected by v2 verification (receipts, approvals,
 * checkpoints) AND by the offline `tollgate verify` on a fresh export, which name what changed.
 * An untouched organization verifies valid everywhere; GET /v1/chains/{id} and the dashboard
 * chain page say whether the stored events match their receipt.
 *
 * Receipts issued before the event hash chain (signed here exactly as the service did before
 * 793c0af) still verify — signature, links, numbers — with their events and approvals
 * not_evaluated, in a log that continues with new receipts; a new receipt stripped of its
 * event_chain does not. A chain completed while an approval's timeout was only applied on read
 * (unsigned, its job not run yet) gets a receipt whose approvals all verify.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Io, main } from "../../src/cli/main.js";
import type { ExportReport } from "../../src/cli/verify-export.js";
import { canonicalJson } from "../../src/receipts/canonical.js";
import { ed25519Sign } from "../../src/receipts/ed25519.js";
import { formatReceiptNumber } from "../../src/receipts/number.js";
import { PreEventChainReceiptBodySchema } from "../../src/receipts/schema.js";
import { hmacSignature, receiptHash, signingInput } from "../../src/receipts/sign.js";
import { approvalStatus } from "../../src/service/approvals/views.js";
import { getChain } from "../../src/service/chains/store.js";
import { cumulativeMetrics } from "../../src/service/chains/views.js";
import { orgById } from "../../src/service/orgs/orgs.js";
import { deriveKey } from "../../src/service/secrets.js";
import { get, sessionFor } from "../browser/support/dashboard.js";
import { startTestService, type TestService } from "../support/service.js";
import { assertNoProofMaterial, decide, type Org, pendingApproval, sql } from "./verification-helpers.js";

let t: TestService;
let dir: string;
let files = 0;

beforeAll(async () => {
  t = await startTestService();
  dir = mkdtempSync(path.join(os.tmpdir(), "tg-evidence-"));
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const write = (value: unknown) => {
  const file = path.join(dir, `f${++files}.json`);
  writeFileSync(file, JSON.stringify(value));
  return file;
};

interface Completed {
  chainId: string;
  receiptId: string;
  receiptNumber: string;
  checkpoint: Record<string, unknown>;
}

/** An organization with three receipts; the middle one covers an allowed action with an outcome, an approved payment and a denied action. */
interface Scenario {
  org: Org;
  receipts: Completed[];
  rich: Completed;
  /** event sequence → event id of the rich chain. */
  events: { read: string; pay: string; secret: string };
  approvalId: string;
}

async function complete(org: Org, chainId: string): Promise<Completed> {
  const done = await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
  expect(done.statusCode, done.body).toBe(200);
  const body = done.json();
  return {
    chainId,
    receiptId: body.receipt_id,
    receiptNumber: body.receipt_number,
    checkpoint: body.checkpoint,
  };
}

async function record(org: Org, chainId: string, action: Record<string, unknown>) {
  const r = await t.call("POST", `/v1/chains/${chainId}/actions`, { token: org.clientKey, body: action });
  expect(r.statusCode, r.body).toBe(200);
  return r.json();
}

async function simpleChain(
  org: Org,
  name: string,
  finish: (org: Org, chainId: string) => Promise<Completed> = complete,
): Promise<Completed> {
  const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name } });
  const chainId = c.json().chain_id as string;
  await record(org, chainId, {
    agent_name: "reader",
    action_type: "tool_call",
    action_name: "read_file",
    payload: { path: "/x" },
  });
  return finish(org, chainId);
}

/** An organization whose policy denies read_secret_store (the rich chain's third action). */
async function orgWithPolicy(slug: string): Promise<Org> {
  const org = await t.bootstrapOrg(slug);
  const policy = await t.call("PUT", `/v1/admin/organizations/${slug}/policies/secrets`, {
    token: t.adminToken,
    body: {
      config: {
        custom_rules: [
          {
            name: "no-secrets",
            match: { action_name: "read_secret_store" },
            outcome: "deny",
            reason: "never",
          },
        ],
      },
    },
  });
  expect(policy.statusCode, policy.body).toBeLessThan(300);
  return org;
}

/** Records the rich chain (not completed): an action with an outcome, an approved payment, a denied action. */
async function richChain(org: Org) {
  const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "rich" } });
  const chainId = c.json().chain_id as string;
  const read = await record(org, chainId, {
    agent_name: "reader",
    action_type: "tool_call",
    action_name: "read_invoice",
    payload: { id: "INV-7" },
  });
  const outcome = await t.call("POST", `/v1/chains/${chainId}/events/${read.event_id}/outcome`, {
    token: org.clientKey,
    body: { status: "success", error_class: null, duration_ms: 12, result_sha256: "ab".repeat(32) },
  });
  expect(outcome.statusCode, outcome.body).toBe(200);
  const pay = await record(org, chainId, {
    agent_name: "payer",
    parent_agent_name: "planner",
    action_type: "tool_call",
    action_name: "pay_invoice",
    payload: { amount_usd: 7500 },
  });
  expect(pay.policy_decision).toBe("require_approval");
  await decide(t, org.adminKey, pay.approval_id, { decision: "approve", notes: "invoice checked" });
  const secret = await record(org, chainId, {
    agent_name: "reader",
    action_type: "tool_call",
    action_name: "read_secret_store",
    payload: { path: "/vault/prod" },
  });
  expect(secret.policy_decision).toBe("deny");
  return {
    chainId,
    events: { read: read.event_id as string, pay: pay.event_id as string, secret: secret.event_id as string },
    approvalId: pay.approval_id as string,
  };
}

async function scenario(slug: string): Promise<Scenario> {
  const org = await orgWithPolicy(slug);
  const first = await simpleChain(org, "first");
  const recorded = await richChain(org);
  const rich = await complete(org, recorded.chainId);
  const last = await simpleChain(org, "last");
  return {
    org,
    receipts: [first, rich, last],
    rich,
    events: recorded.events,
    approvalId: recorded.approvalId,
  };
}

/** GET /v1/verification/v2/receipts/{id} (no proof material in the answer). */
async function v2(org: Org, receiptId: string) {
  const r = await t.call("GET", `/v1/verification/v2/receipts/${receiptId}`, { token: org.adminKey });
  expect(r.statusCode, r.body).toBe(200);
  assertNoProofMaterial(r.body);
  return r.json();
}

/** POST /v1/verification/v2/checkpoints. */
async function v2Checkpoint(org: Org, checkpoint: unknown) {
  const r = await t.call("POST", "/v1/verification/v2/checkpoints", {
    token: org.adminKey,
    body: checkpoint,
  });
  expect(r.statusCode, r.body).toBe(200);
  assertNoProofMaterial(r.body);
  return r.json();
}

/** A fresh export verified by `tollgate verify` (in-process) with the service's published keys. */
async function cli(
  org: Org,
  extra: string[] = [],
): Promise<{ code: number; report: ExportReport; text: string }> {
  const exp = await t.call("GET", "/v1/receipts/export", { token: org.adminKey });
  expect(exp.statusCode, exp.body).toBe(200);
  const receiptKeys = write((await t.call("GET", "/.well-known/tollgate/receipt-keys.json")).json());
  const approvalKeys = write((await t.call("GET", "/.well-known/tollgate/approval-keys.json")).json());
  const args = [
    "verify",
    write(exp.json()),
    "--jwks",
    receiptKeys,
    "--approval-jwks",
    approvalKeys,
    ...extra,
  ];
  const run = async (argv: string[]) => {
    let stdout = "";
    const io: Io = {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stdout += s;
      },
      readStdin: async () => "",
      fetch: (...a) => fetch(...a),
    };
    return { code: await main(argv, io), stdout };
  };
  const json = await run([...args, "--json"]);
  const text = await run(args);
  expect(text.code).toBe(json.code);
  return { code: json.code, report: JSON.parse(json.stdout), text: text.stdout };
}

const receiptReport = (report: ExportReport, number: string) =>
  report.receipts.find((r) => r.receipt_number === number)!;

describe("an untouched organization", () => {
  it("verifies valid everywhere: v2 receipts with their events and approvals, checkpoints, the CLI, the chain view", async () => {
    const s = await scenario("ev-clean");
    for (const r of s.receipts) {
      const v = await v2(s.org, r.receiptId);
      expect(v, r.receiptNumber).toMatchObject({
        overall_status: "valid",
        events: { status: "valid", mismatched_sequences: [] },
        approvals: { status: "valid", mismatched_approval_ids: [] },
      });
    }
    expect((await v2(s.org, s.rich.receiptId)).events.event_count).toBe(3);
    expect((await v2(s.org, s.rich.receiptId)).approvals.approval_count).toBe(1);

    // the receipt commits to each event and the head of the chain
    const receipt = (
      await t.call("GET", `/v1/receipts/${s.rich.receiptId}`, { token: s.org.clientKey })
    ).json();
    expect(receipt.event_chain).toMatchObject({ format: "tollgate.event-chain.v1", event_count: 3 });
    expect(receipt.event_chain.head_hash).toBe(receipt.events_summary[2].event_hash);
    expect(receipt.events_summary.map((e: { event_hash: string }) => e.event_hash)).toHaveLength(3);

    // completion's checkpoint and the published one
    expect(s.receipts[2]!.checkpoint).toMatchObject({
      format: "tollgate.receipt-checkpoint.v1",
      organization: "ev-clean",
      sequence: 3,
      receipt_number: s.receipts[2]!.receiptNumber,
    });
    const published = await t.call("GET", "/v1/receipts/checkpoint", { token: s.org.adminKey });
    expect(published.statusCode, published.body).toBe(200);
    expect(published.json()).toMatchObject({
      sequence: 3,
      receipt_hash: s.receipts[2]!.checkpoint.receipt_hash,
    });
    expect((await t.call("GET", "/v1/receipts/checkpoint", { token: s.org.clientKey })).statusCode).toBe(403);
    for (const cp of [s.receipts[0]!.checkpoint, s.receipts[2]!.checkpoint, published.json()]) {
      expect(await v2Checkpoint(s.org, cp)).toMatchObject({
        artifact_type: "checkpoint",
        overall_status: "valid",
        signature: { status: "valid", key_status: "trusted" },
        log: { status: "extended", latest_sequence: 3 },
      });
    }

    const { code, report } = await cli(s.org, ["--checkpoint", write(s.receipts[2]!.checkpoint)]);
    expect(code, JSON.stringify(report.problems)).toBe(0);
    expect(report).toMatchObject({ overall_status: "valid", event_count: 5, approval_count: 1 });
    expect(report.checkpoint).toMatchObject({ signature: "valid", log: "extended" });

    const chain = await t.call("GET", `/v1/chains/${s.rich.chainId}`, { token: s.org.clientKey });
    expect(chain.json().evidence).toMatchObject({
      status: "valid",
      receipt_number: s.rich.receiptNumber,
      events: { status: "valid", event_count: 3 },
      approvals: { status: "valid" },
      problems: [],
    });
    const open = (
      await t.call("POST", "/v1/chains", { token: s.org.clientKey, body: { name: "open" } })
    ).json();
    const openView = await t.call("GET", `/v1/chains/${open.chain_id}`, { token: s.org.clientKey });
    expect(openView.json().evidence).toMatchObject({ status: "no_receipt", receipt_id: null });
  });

  it("a checkpoint of another organization answers 404, an edited one fails its signature", async () => {
    const a = await scenario("ev-cp-a");
    const b = await scenario("ev-cp-b");
    const foreign = await t.call("POST", "/v1/verification/v2/checkpoints", {
      token: a.org.adminKey,
      body: b.receipts[2]!.checkpoint,
    });
    expect(foreign.statusCode).toBe(404);
    const edited = { ...a.receipts[1]!.checkpoint, issued_at: "2030-01-01T00:00:00.000Z" };
    expect(await v2Checkpoint(a.org, edited)).toMatchObject({
      overall_status: "invalid",
      signature: { status: "invalid" },
      log: { status: "extended" },
    });
    const bad = await t.call("POST", "/v1/verification/v2/checkpoints", {
      token: a.org.adminKey,
      body: { sequence: 1 },
    });
    expect(bad.statusCode).toBe(400);
    expect(
      (await t.call("POST", "/v1/verification/v2/checkpoints", { body: { sequence: 1 } })).statusCode,
    ).toBe(401);
    const client = await t.call("POST", "/v1/verification/v2/checkpoints", {
      token: a.org.clientKey,
      body: a.receipts[0]!.checkpoint,
    });
    expect(client.statusCode).toBe(403);
  });
});

/** One kind of tampering: the SQL, then what v2 and the CLI must report. */
interface TamperCase {
  name: string;
  tamper: (s: Scenario) => Promise<void>;
  v2: (s: Scenario) => Promise<void>;
  cli: (s: Scenario, r: ExportReport, text: string) => void;
  cliArgs?: (s: Scenario) => string[];
}

/** Asserts the rich receipt's v2 result reports these event sequences, with its own signatures intact. */
async function expectEventsInvalid(s: Scenario, sequences: number[], problem: string) {
  const v = await v2(s.org, s.rich.receiptId);
  expect(v).toMatchObject({
    overall_status: "invalid",
    integrity: { status: "valid" },
    signature: { status: "valid" },
    events: { status: "invalid", mismatched_sequences: sequences },
    approvals: { status: "valid" },
  });
  expect(v.problems.join(" ")).toContain(problem);
  for (const other of [s.receipts[0]!, s.receipts[2]!]) {
    expect((await v2(s.org, other.receiptId)).overall_status).toBe("valid");
  }
  const chain = (await t.call("GET", `/v1/chains/${s.rich.chainId}`, { token: s.org.clientKey })).json();
  expect(chain.evidence).toMatchObject({
    status: "invalid",
    events: { status: "invalid", mismatched_sequences: sequences },
  });
}

function expectCliEvents(s: Scenario, r: ExportReport, sequences: number[], problem: string) {
  const rich = receiptReport(r, s.rich.receiptNumber);
  expect(rich).toMatchObject({
    overall_status: "invalid",
    signature: "valid",
    events: "invalid",
    mismatched_events: sequences,
    approvals: "valid",
  });
  expect(rich.problems.join(" ")).toContain(problem);
  expect(receiptReport(r, s.receipts[0]!.receiptNumber).overall_status).toBe("valid");
  expect(receiptReport(r, s.receipts[2]!.receiptNumber).overall_status).toBe("valid");
}

const cases: TamperCase[] = [
  {
    name: "alter a receipt field",
    tamper: async (s) => {
      const res = await sql(
        t,
        `UPDATE receipts SET body = replace(body, '"chain_name":"rich"', '"chain_name":"payroll"') WHERE id = $1`,
        [s.rich.receiptId],
      );
      expect(res.rowCount).toBe(1);
    },
    v2: async (s) => {
      expect(await v2(s.org, s.rich.receiptId)).toMatchObject({
        overall_status: "invalid",
        integrity: { status: "invalid" },
        signature: { status: "invalid" },
      });
      expect(await v2(s.org, s.receipts[2]!.receiptId)).toMatchObject({
        overall_status: "invalid",
        chain: { status: "broken" },
      });
    },
    cli: (s, r) => {
      expect(receiptReport(r, s.rich.receiptNumber).signature).toBe("invalid");
      expect(receiptReport(r, s.receipts[2]!.receiptNumber).link).toBe("broken");
    },
  },
  {
    name: "delete a receipt",
    tamper: async (s) => {
      await sql(t, "DELETE FROM receipts WHERE id = $1", [s.rich.receiptId]);
    },
    v2: async (s) => {
      expect(await v2(s.org, s.receipts[2]!.receiptId)).toMatchObject({
        overall_status: "invalid",
        chain: { status: "gap" },
      });
      const chain = (await t.call("GET", `/v1/chains/${s.rich.chainId}`, { token: s.org.clientKey })).json();
      expect(chain.evidence).toMatchObject({
        status: "invalid",
        problems: ["the chain's receipt is missing: it was deleted"],
      });
    },
    cli: (s, r) => {
      expect(receiptReport(r, s.receipts[2]!.receiptNumber).link).toBe("gap");
      expect(r.problems.join(" ")).toContain("holds 2");
    },
  },
  {
    name: "reorder receipts",
    tamper: async (s) => {
      const [a, b] = [s.rich, s.receipts[2]!];
      await sql(t, "UPDATE receipts SET sequence = -sequence WHERE id = ANY($1::uuid[])", [
        [a.receiptId, b.receiptId],
      ]);
      await sql(
        t,
        `UPDATE receipts SET sequence = CASE WHEN id = $1 THEN 3 ELSE 2 END,
           receipt_number = CASE WHEN id = $1 THEN $4 ELSE $3 END WHERE id IN ($1, $2)`,
        [a.receiptId, b.receiptId, a.receiptNumber, b.receiptNumber],
      );
    },
    v2: async (s) => {
      for (const r of [s.rich, s.receipts[2]!]) {
        const v = await v2(s.org, r.receiptId);
        expect(v.overall_status).toBe("invalid");
        expect(v.problems.join(" ")).toContain("does not match its body");
      }
    },
    cli: (s, r) => {
      expect(r.receipts.map((x) => x.receipt_number)).toEqual([
        s.receipts[0]!.receiptNumber,
        s.receipts[2]!.receiptNumber,
        s.rich.receiptNumber,
      ]);
      expect(r.receipts.slice(1).map((x) => x.link)).not.toContain("valid");
    },
  },
  {
    name: "alter an event: decision deny → allow",
    tamper: async (s) => {
      const res = await sql(
        t,
        `UPDATE chain_events SET decision = jsonb_set(decision, '{policy_decision}', '"allow"') WHERE id = $1`,
        [s.events.secret],
      );
      expect(res.rowCount).toBe(1);
    },
    v2: (s) =>
      expectEventsInvalid(s, [3], `event #3 (${s.events.secret}) of ${s.rich.receiptNumber} was altered`),
    cli: (s, r) => expectCliEvents(s, r, [3], `event #3 (${s.events.secret})`),
  },
  {
    name: "alter an event: amount 7500 → 75",
    tamper: async (s) => {
      await sql(t, `UPDATE chain_events SET payload = '{"amount_usd": 75}' WHERE id = $1`, [s.events.pay]);
    },
    v2: (s) => expectEventsInvalid(s, [2], `event #2 (${s.events.pay})`),
    cli: (s, r) => expectCliEvents(s, r, [2], "was altered"),
  },
  {
    name: "alter an event: action renamed",
    tamper: async (s) => {
      await sql(t, "UPDATE chain_events SET action_name = 'read_public_page' WHERE id = $1", [
        s.events.secret,
      ]);
    },
    v2: (s) => expectEventsInvalid(s, [3], "was altered"),
    cli: (s, r) => expectCliEvents(s, r, [3], "was altered"),
  },
  {
    name: "alter an event: its outcome",
    tamper: async (s) => {
      await sql(
        t,
        `UPDATE chain_events SET outcome = jsonb_set(outcome, '{status}', '"error"') WHERE id = $1`,
        [s.events.read],
      );
    },
    v2: (s) => expectEventsInvalid(s, [1], "was altered"),
    cli: (s, r) => expectCliEvents(s, r, [1], "was altered"),
  },
  {
    name: "delete an event",
    tamper: async (s) => {
      await sql(t, "DELETE FROM chain_events WHERE id = $1", [s.events.secret]);
    },
    v2: (s) =>
      expectEventsInvalid(s, [3], `event #3 (${s.events.secret}) of ${s.rich.receiptNumber} is missing`),
    cli: (s, r) => expectCliEvents(s, r, [3], "is missing: it was deleted"),
  },
  {
    name: "insert an event",
    tamper: async (s) => {
      await sql(
        t,
        `INSERT INTO chain_events (id, chain_id, org_id, sequence, agent_name, parent_agent_name, action_type, action_name,
           payload, category, facts, decision, triggers, exception_id, approval_id, recorded_at, outcome)
         SELECT gen_random_uuid(), chain_id, org_id, 4, agent_name, parent_agent_name, action_type, 'wire_funds',
           payload, category, facts, decision, triggers, exception_id, NULL, recorded_at, outcome
         FROM chain_events WHERE id = $1`,
        [s.events.read],
      );
    },
    v2: (s) => expectEventsInvalid(s, [4], "is not in the receipt: it was inserted"),
    cli: (s, r) => expectCliEvents(s, r, [4], "it was inserted"),
  },
  {
    name: "reorder events",
    tamper: async (s) => {
      await sql(t, "UPDATE chain_events SET sequence = -sequence WHERE id IN ($1, $2)", [
        s.events.read,
        s.events.pay,
      ]);
      await sql(
        t,
        "UPDATE chain_events SET sequence = CASE WHEN id = $1 THEN 2 ELSE 1 END WHERE id IN ($1, $2)",
        [s.events.read, s.events.pay],
      );
    },
    v2: (s) => expectEventsInvalid(s, [1, 2], "is not the event the receipt committed to"),
    cli: (s, r) => expectCliEvents(s, r, [1, 2], "replaced or reordered"),
  },
  {
    name: "alter an approval",
    tamper: async (s) => {
      await sql(
        t,
        "UPDATE approvals SET notes = 'rubber-stamped', decided_by = 'mallory@example.com' WHERE id = $1",
        [s.approvalId],
      );
    },
    v2: async (s) => {
      const v = await v2(s.org, s.rich.receiptId);
      expect(v).toMatchObject({
        overall_status: "invalid",
        integrity: { status: "valid" },
        events: { status: "valid" },
        approvals: { status: "invalid", mismatched_approval_ids: [s.approvalId] },
      });
      expect(v.problems.join(" ")).toContain(`approval ${s.approvalId} of ${s.rich.receiptNumber}`);
      const a = await t.call("GET", `/v1/verification/v2/approvals/${s.approvalId}`, {
        token: s.org.adminKey,
      });
      expect(a.json()).toMatchObject({ overall_status: "invalid", signature: { status: "invalid" } });
    },
    cli: (s, r) => {
      expect(receiptReport(r, s.rich.receiptNumber)).toMatchObject({
        events: "valid",
        approvals: "invalid",
        mismatched_approvals: [s.approvalId],
      });
      expect(r.problems.join(" ")).toContain("differs from the receipt (decided_by, notes)");
    },
  },
  {
    name: "delete an approval",
    tamper: async (s) => {
      await sql(t, "DELETE FROM approvals WHERE id = $1", [s.approvalId]);
    },
    v2: async (s) => {
      expect(await v2(s.org, s.rich.receiptId)).toMatchObject({
        overall_status: "invalid",
        approvals: { status: "invalid", approval_count: 0, mismatched_approval_ids: [s.approvalId] },
      });
    },
    cli: (s, r) => {
      expect(receiptReport(r, s.rich.receiptNumber).approvals).toBe("invalid");
      expect(r.problems.join(" ")).toContain(
        `approval ${s.approvalId} of ${s.rich.receiptNumber} is missing`,
      );
    },
  },
  {
    name: "truncate the tail (delete the newest receipts, rewind the counters)",
    tamper: async (s) => {
      await truncateTo(s, 1);
    },
    v2: async (s) => {
      const v = await v2Checkpoint(s.org, s.receipts[2]!.checkpoint);
      expect(v).toMatchObject({
        overall_status: "invalid",
        signature: { status: "valid" },
        log: { status: "truncated", latest_sequence: 1 },
      });
      expect(v.problems.join(" ")).toContain("the log ends at sequence 1");
      // the receipt left verifies on its own: only a checkpoint can tell
      expect((await v2(s.org, s.receipts[0]!.receiptId)).overall_status).toBe("valid");
      const published = (await t.call("GET", "/v1/receipts/checkpoint", { token: s.org.adminKey })).json();
      expect(published.sequence).toBe(1);
    },
    cliArgs: (s) => ["--checkpoint", write(s.receipts[2]!.checkpoint)],
    cli: (_s, r, text) => {
      expect(r.checkpoint).toMatchObject({ signature: "valid", log: "truncated", sequence: 3 });
      expect(r.receipts.every((x) => x.overall_status === "valid")).toBe(true);
      expect(text).toContain("log truncated");
    },
  },
  {
    name: "truncate the tail and append new receipts over it (fork)",
    tamper: async (s) => {
      await truncateTo(s, 1);
      await simpleChain(s.org, "replacement-2");
      await simpleChain(s.org, "replacement-3");
    },
    v2: async (s) => {
      const v = await v2Checkpoint(s.org, s.receipts[2]!.checkpoint);
      expect(v).toMatchObject({ overall_status: "invalid", log: { status: "forked", latest_sequence: 3 } });
      expect(v.problems.join(" ")).toContain("the log was rewritten");
    },
    cliArgs: (s) => ["--checkpoint", write(s.receipts[2]!.checkpoint)],
    cli: (_s, r) => {
      expect(r.checkpoint).toMatchObject({ log: "forked" });
    },
  },
];

/** Deletes the receipts after `sequence` and rewinds the organization's counters to it. */
async function truncateTo(s: Scenario, sequence: number) {
  await sql(t, "DELETE FROM receipts WHERE org_id = $1 AND sequence > $2", [s.org.orgId, sequence]);
  await sql(
    t,
    `UPDATE organizations SET receipt_seq = $2,
       last_receipt_hash = (SELECT receipt_hash FROM receipts WHERE org_id = $1 AND sequence = $2) WHERE id = $1`,
    [s.org.orgId, sequence],
  );
}

describe("tamper detection: every kind is detected by v2 and by tollgate verify", () => {
  it.each(cases.map((c, i) => [c.name, i] as const))("%s", async (_name, index) => {
    const c = cases[index]!;
    const s = await scenario(`ev-tamper-${index}`);
    await c.tamper(s);
    await c.v2(s);
    const { code, report, text } = await cli(s.org, c.cliArgs?.(s) ?? []);
    expect(code, text).toBe(1);
    expect(report.overall_status).toBe("invalid");
    expect(text).toContain("Result: INVALID");
    c.cli(s, report, text);
  });
});

describe("the dashboard chain page", () => {
  it("marks the events and approvals that no longer match the receipt", async () => {
    const s = await scenario("ev-dash");
    await t.call("PUT", `/v1/admin/organizations/ev-dash/members/dora@ev.test`, {
      token: t.adminToken,
      body: { roles: ["member"] },
    });
    const viewer = await sessionFor(t.service.ctx.db, t.clock, "dora@ev.test", "ev-dash");
    const before = await get(t.service.app, `/dashboard/chains/${s.rich.chainId}`, viewer);
    expect(before.statusCode).toBe(200);
    expect(before.body).toContain("Recorded events");
    expect(before.body).toContain("all 3 match the receipt");
    expect(before.body).not.toContain("Does not match the receipt");

    await sql(
      t,
      `UPDATE chain_events SET decision = jsonb_set(decision, '{policy_decision}', '"allow"') WHERE id = $1`,
      [s.events.secret],
    );
    await sql(t, "UPDATE approvals SET notes = 'rubber-stamped' WHERE id = $1", [s.approvalId]);
    const after = await get(t.service.app, `/dashboard/chains/${s.rich.chainId}`, viewer);
    expect(after.statusCode).toBe(200);
    expect(after.body).toMatch(/<li class="d-allow" id="event-3" data-evidence="mismatch">/);
    expect(after.body).not.toMatch(/id="event-[12]" data-evidence/);
    expect(after.body).toContain("event #3 does not match the receipt");
    expect(after.body.match(/Does not match the receipt/g)).toHaveLength(2); // the event and the approval

    await sql(t, "DELETE FROM receipts WHERE id = $1", [s.rich.receiptId]);
    const gone = await get(t.service.app, `/dashboard/chains/${s.rich.chainId}`, viewer);
    expect(gone.statusCode).toBe(200);
    expect(gone.body).toContain("is missing: it was deleted");
  });
});

// ---------------------------------------------------------------------------------------------
// Receipts issued before the event hash chain (793c0af^), and a log that continues after it.

/**
 * Completes a chain the way the service did before the event hash chain (793c0af^:
 * src/service/receipts/complete.ts): the same transaction, lock, numbering and links, a body of
 * the old shape (no event_chain, no events_summary[].event_hash, approvals by requested_at)
 * validated with the old schema and signed with the service's HMAC and receipt keys.
 */
async function completeAsBefore(org: Org, chainId: string): Promise<Completed> {
  const ctx = t.service.ctx;
  const signingKey = await ctx.signingKeys.active("receipt");
  return ctx.db.tx(async (q) => {
    const chain = await getChain(q, org.orgId, chainId, true);
    const nowMs = Math.max(t.clock.nowMs(), new Date(chain.started_at).getTime());
    const { rows: orgRows } = await q.query(
      "SELECT receipt_seq, last_receipt_hash FROM organizations WHERE id = $1 FOR UPDATE",
      [org.orgId],
    );
    const o = await orgById(q, org.orgId);
    const { policyVersion } = await ctx.configs.get(q, o);
    const sequence = Number(orgRows[0]!.receipt_seq) + 1;
    const receiptId = randomUUID();
    const ev = await q.query(
      `SELECT id, sequence, agent_name, parent_agent_name, action_type, action_name, decision, exception_id, recorded_at, outcome
       FROM chain_events WHERE chain_id = $1 ORDER BY sequence`,
      [chainId],
    );
    const events = ev.rows.map((r) => ({
      sequence: r.sequence,
      event_id: r.id,
      agent_name: r.agent_name,
      parent_agent_name: r.parent_agent_name,
      action_type: r.action_type,
      action_name: r.action_name,
      policy_decision: r.decision.policy_decision,
      decision_source: r.decision.decision_source,
      policy_name: r.decision.policy_name ?? null,
      exception_id: r.exception_id,
      recorded_at: new Date(r.recorded_at).toISOString(),
      outcome: r.outcome ?? null,
    }));
    const ap = await q.query(
      `SELECT a.id, a.event_id, a.status, a.decided_by, a.notes, a.decided_at, a.exception_id,
         e.duration, e.expires_at AS exception_expires_at, ev.agent_name, ev.action_type, ev.action_name
       FROM approvals a JOIN chain_events ev ON ev.id = a.event_id LEFT JOIN exceptions e ON e.id = a.exception_id
       WHERE a.chain_id = $1 AND a.status <> 'pending' ORDER BY a.requested_at`,
      [chainId],
    );
    const approvals = ap.rows.map((r) => ({
      approval_id: r.id,
      action_event_id: r.event_id,
      agent_name: r.agent_name,
      action_type: r.action_type,
      action_name: r.action_name,
      decision: r.status,
      decided_by: r.decided_by,
      notes: r.notes,
      decided_at: new Date(r.decided_at).toISOString(),
      exception: r.exception_id
        ? {
            exception_id: r.exception_id,
            duration: r.duration,
            expires_at: new Date(r.exception_expires_at).toISOString(),
          }
        : null,
    }));
    const receiptNumber = formatReceiptNumber(new Date(nowMs).getUTCFullYear(), sequence);
    // the old signReceipt: parse with the (old) body schema, sign the canonical JSON
    const body = PreEventChainReceiptBodySchema.parse({
      receipt_id: receiptId,
      receipt_number: receiptNumber,
      chain_id: chainId,
      organization: o.slug,
      chain_name: chain.name,
      environment: chain.environment,
      metadata: chain.metadata,
      status: "completed",
      failure: null,
      summary: `Chain "${chain.name}" completed; ${events.length} actions; ${approvals.length} approval decisions.`,
      started_at: new Date(chain.started_at).toISOString(),
      completed_at: new Date(nowMs).toISOString(),
      agents_involved: [...new Set(events.map((e) => e.agent_name))].sort(),
      total_actions: events.length,
      cumulative_metrics: cumulativeMetrics(chain),
      approvals,
      events_summary: events,
      policy_version: policyVersion,
      previous_receipt_hash: orgRows[0]!.last_receipt_hash ?? null,
    });
    const signed = {
      ...body,
      signature: hmacSignature(body, deriveKey(ctx.masterKey, "receipt-hmac")),
      ed25519: { kid: signingKey.kid, signature: ed25519Sign(signingInput(body), signingKey.privateKey) },
    };
    const hash = receiptHash(signed);
    await q.query(
      `INSERT INTO receipts (id, org_id, chain_id, sequence, receipt_number, body, receipt_hash, created_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
      [receiptId, org.orgId, chainId, sequence, receiptNumber, canonicalJson(signed), hash, new Date(nowMs)],
    );
    await q.query("UPDATE organizations SET receipt_seq = $2, last_receipt_hash = $3 WHERE id = $1", [
      org.orgId,
      sequence,
      hash,
    ]);
    await q.query(
      "UPDATE chains SET status = 'completed', completed_at = $2, receipt_id = $3 WHERE id = $1",
      [chainId, new Date(nowMs), receiptId],
    );
    return { chainId, receiptId, receiptNumber, checkpoint: {} };
  });
}

/** PR-1 (the rich chain) and PR-2 issued before the upgrade, PR-3 and PR-4 after it. */
interface MixedScenario {
  org: Org;
  receipts: Completed[];
  old: Completed;
  recorded: Awaited<ReturnType<typeof richChain>>;
}

async function mixedScenario(slug: string): Promise<MixedScenario> {
  const org = await orgWithPolicy(slug);
  const recorded = await richChain(org);
  const old = await completeAsBefore(org, recorded.chainId);
  const second = await simpleChain(org, "second", completeAsBefore);
  const third = await simpleChain(org, "third");
  const fourth = await simpleChain(org, "fourth");
  return { org, receipts: [old, second, third, fourth], old, recorded };
}

/** Reads a stored receipt body, lets `edit` change it, and stores it back with a matching receipt_hash. */
async function restore(receiptId: string, edit: (body: Record<string, unknown>) => void) {
  const { rows } = await sql(t, "SELECT body FROM receipts WHERE id = $1", [receiptId]);
  const body = JSON.parse(rows[0]!.body as string) as Record<string, unknown>;
  edit(body);
  const res = await sql(t, "UPDATE receipts SET body = $2, receipt_hash = $3 WHERE id = $1", [
    receiptId,
    canonicalJson(body),
    receiptHash(body as never),
  ]);
  expect(res.rowCount).toBe(1);
}

describe("receipts issued before the event hash chain", () => {
  it("verify as before (signature, links, numbers) with events and approvals not_evaluated, and the log continues valid", async () => {
    const s = await mixedScenario("ev-upgrade");
    expect(s.receipts.map((r) => r.receiptNumber)).toEqual(
      [1, 2, 3, 4].map((n) => formatReceiptNumber(2026, n)),
    );
    const stored = (
      await t.call("GET", `/v1/receipts/${s.old.receiptId}`, { token: s.org.clientKey })
    ).json();
    expect(stored).not.toHaveProperty("event_chain");
    expect(stored.events_summary[0]).not.toHaveProperty("event_hash");
    expect(stored.approvals).toHaveLength(1);

    const views = [];
    for (const r of s.receipts) views.push(await v2(s.org, r.receiptId));
    expect(
      views.map((v) => [
        v.receipt_format,
        v.overall_status,
        v.chain.status,
        v.events.status,
        v.approvals.status,
      ]),
    ).toEqual([
      ["pre_event_chain", "valid", "genesis", "not_evaluated", "not_evaluated"],
      ["pre_event_chain", "valid", "valid", "not_evaluated", "not_evaluated"],
      ["event_chain", "valid", "valid", "valid", "valid"],
      ["event_chain", "valid", "valid", "valid", "valid"],
    ]);
    expect(views[0]).toMatchObject({
      integrity: { status: "valid" },
      signature: { status: "valid", key_status: "trusted" },
      events: { event_count: 3, mismatched_sequences: [] },
      approvals: { approval_count: 1, mismatched_approval_ids: [] },
      problems: [],
    });
    expect(views[2]!.chain.predecessor_receipt_number).toBe(s.receipts[1]!.receiptNumber);

    // the legacy and public views follow overall_status
    const legacy = await t.call("GET", `/v1/receipts/${s.old.receiptId}/verify`, { token: s.org.clientKey });
    expect(legacy.json()).toMatchObject({ valid: true, signature_valid: true, chain_valid: true });

    const chain = (await t.call("GET", `/v1/chains/${s.old.chainId}`, { token: s.org.clientKey })).json();
    expect(chain.evidence).toMatchObject({
      status: "valid",
      receipt_format: "pre_event_chain",
      events: { status: "not_evaluated", event_count: 3 },
      approvals: { status: "not_evaluated", approval_count: 1 },
      problems: [],
    });

    const { code, report, text } = await cli(s.org, ["--checkpoint", write(s.receipts[3]!.checkpoint)]);
    expect(code, text).toBe(0);
    expect(report).toMatchObject({
      overall_status: "valid",
      pre_event_chain_receipt_count: 2,
      event_count: 6,
    });
    expect(
      report.receipts.map((x) => [
        x.receipt_format,
        x.overall_status,
        x.signature,
        x.link,
        x.events,
        x.approvals,
      ]),
    ).toEqual([
      ["pre_event_chain", "valid", "valid", "genesis", "not_evaluated", "not_evaluated"],
      ["pre_event_chain", "valid", "valid", "valid", "not_evaluated", "not_evaluated"],
      ["event_chain", "valid", "valid", "valid", "valid", "valid"],
      ["event_chain", "valid", "valid", "valid", "valid", "valid"],
    ]);
    expect(report.checkpoint).toMatchObject({ signature: "valid", log: "extended" });
    expect(text).toContain("2 receipts issued before the event hash chain");

    await t.call("PUT", "/v1/admin/organizations/ev-upgrade/members/uma@ev.test", {
      token: t.adminToken,
      body: { roles: ["member"] },
    });
    const viewer = await sessionFor(t.service.ctx.db, t.clock, "uma@ev.test", "ev-upgrade");
    const page = await get(t.service.app, `/dashboard/chains/${s.old.chainId}`, viewer);
    expect(page.statusCode).toBe(200);
    expect(
      page.body.match(/not covered: this receipt was issued before events were hash-linked/g),
    ).toHaveLength(2);
    expect(page.body).toMatch(/<dt>Overall \(v2\)<\/dt><dd><span class="badge b-ok">valid<\/span>/);
    expect(page.body).not.toContain("Does not match the receipt");
    expect(page.body).not.toContain('data-evidence="mismatch"');
  });

  it("an old receipt edited or deleted in the database is still caught, as before", async () => {
    const edited = await mixedScenario("ev-upgrade-edit");
    await sql(
      t,
      `UPDATE receipts SET body = replace(body, '"chain_name":"second"', '"chain_name":"payroll"') WHERE id = $1`,
      [edited.receipts[1]!.receiptId],
    );
    expect(await v2(edited.org, edited.receipts[1]!.receiptId)).toMatchObject({
      receipt_format: "pre_event_chain",
      overall_status: "invalid",
      integrity: { status: "invalid" },
      signature: { status: "invalid" },
    });
    expect(await v2(edited.org, edited.receipts[2]!.receiptId)).toMatchObject({
      overall_status: "invalid",
      chain: { status: "broken" },
    });
    const e = await cli(edited.org);
    expect(e.code).toBe(1);
    expect(e.report.receipts.map((x) => [x.signature, x.link])).toEqual([
      ["valid", "genesis"],
      ["invalid", "valid"],
      ["valid", "broken"],
      ["valid", "valid"],
    ]);

    const deleted = await mixedScenario("ev-upgrade-delete");
    await sql(t, "DELETE FROM receipts WHERE id = $1", [deleted.receipts[1]!.receiptId]);
    expect(await v2(deleted.org, deleted.receipts[2]!.receiptId)).toMatchObject({
      overall_status: "invalid",
      chain: { status: "gap" },
    });
  });

  it("a new receipt with event_chain removed and re-stored does not verify: its signatures cover it", async () => {
    const s = await mixedScenario("ev-upgrade-strip");
    const [, , third, fourth] = s.receipts as [Completed, Completed, Completed, Completed];
    // PR-3 made to look exactly like an old receipt: event_chain and every event_hash removed
    await restore(third.receiptId, (body) => {
      delete body.event_chain;
      for (const item of body.events_summary as Array<Record<string, unknown>>) delete item.event_hash;
    });
    // PR-4 with only event_chain removed
    await restore(fourth.receiptId, (body) => {
      delete body.event_chain;
    });
    const v3 = await v2(s.org, third.receiptId);
    expect(v3).toMatchObject({
      receipt_format: "pre_event_chain",
      overall_status: "invalid",
      integrity: { status: "invalid" },
      signature: { status: "invalid" },
    });
    expect(v3.problems.join(" ")).toContain("its signature does not match its contents");
    // (its schema problem names the field paths, so not through v2(), which forbids the word events_summary)
    const raw4 = await t.call("GET", `/v1/verification/v2/receipts/${fourth.receiptId}`, {
      token: s.org.adminKey,
    });
    expect(raw4.body).not.toMatch(/sha256:[0-9a-f]{8}|[A-Za-z0-9_-]{85}[AQgw]/);
    const v4 = raw4.json();
    expect(v4).toMatchObject({
      overall_status: "invalid",
      integrity: { status: "invalid" },
      chain: { status: "broken" },
    });
    expect(v4.problems.join(" ")).toContain("does not match the pre-event-chain receipt schema");
    const chain = (await t.call("GET", `/v1/chains/${third.chainId}`, { token: s.org.clientKey })).json();
    expect(chain.evidence.status).toBe("invalid");

    const { code, report } = await cli(s.org);
    expect(code).toBe(1);
    expect(report.receipts.map((x) => [x.overall_status, x.signature, x.link])).toEqual([
      ["valid", "valid", "genesis"],
      ["valid", "valid", "valid"],
      ["invalid", "invalid", "valid"],
      ["invalid", "invalid", "broken"],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Every approval a receipt commits to is signed by the time the receipt is built. Last in the
// file: it moves the clock past the approval timeout.

describe("approvals resolved without a signature before completion", () => {
  it("are signed in the completion transaction, so the receipt's approvals verify before any job runs", async () => {
    const org = await t.bootstrapOrg("ev-unsigned");
    // a timeout applied on read by a caller without keys; its durable job has not run
    const late = await pendingApproval(t, org);
    t.clock.advance(25 * 3600_000);
    const read = await approvalStatus(
      { db: t.service.ctx.db, clock: t.clock, approvalWaiters: t.service.ctx.approvalWaiters },
      { orgId: org.orgId, chainId: late.chainId },
    );
    expect(read.approval?.status).toBe("timed_out");
    // a resolution recorded before approvals were signed, on a chain still open
    const older = await pendingApproval(t, org);
    await decide(t, org.adminKey, older.approvalId, { decision: "approve", notes: "ok" });
    await sql(
      t,
      "UPDATE approvals SET signature = NULL, signed_payload = NULL, signing_kid = NULL WHERE id = $1",
      [older.approvalId],
    );
    const unsigned = await sql(
      t,
      "SELECT id FROM approvals WHERE id = ANY($1::uuid[]) AND signature IS NULL",
      [[late.approvalId, older.approvalId]],
    );
    expect(unsigned.rowCount).toBe(2);

    const receipts = [await complete(org, late.chainId), await complete(org, older.chainId)];
    for (const [r, approvalId, decision] of [
      [receipts[0]!, late.approvalId, "timed_out"],
      [receipts[1]!, older.approvalId, "approved"],
    ] as const) {
      const v = await v2(org, r.receiptId);
      expect(v, r.receiptNumber).toMatchObject({
        overall_status: "valid",
        events: { status: "valid" },
        approvals: { status: "valid", approval_count: 1, mismatched_approval_ids: [] },
        problems: [],
      });
      const a = await t.call("GET", `/v1/verification/v2/approvals/${approvalId}`, { token: org.adminKey });
      expect(a.json()).toMatchObject({
        status: decision,
        overall_status: "valid",
        signature: { status: "valid" },
      });
    }
    const { code, report } = await cli(org);
    expect(code, JSON.stringify(report.problems)).toBe(0);

    // the timeout job that runs later changes nothing
    const before = await sql(t, "SELECT signature FROM approvals WHERE id = $1", [late.approvalId]);
    await t.runJobs();
    const after = await sql(t, "SELECT signature FROM approvals WHERE id = $1", [late.approvalId]);
    expect(after.rows[0]!.signature).toBe(before.rows[0]!.signature);
    expect((await v2(org, receipts[0]!.receiptId)).overall_status).toBe("valid");
  });
});
