/**
 * Every recorded event is covered by the evidence (issue 18 §2), on the real database: each
 * kind of tampering done with direct SQL — alter a receipt field, delete or reorder receipts,
 * alter, delete, insert or reorder an event, alter or delete an approval, truncate the tail
 * (with and without re-appending) — is detected by v2 verification (receipts, approvals,
 * checkpoints) AND by the offline `tollgate verify` on a fresh export, which name what changed.
 * An untouched organization verifies valid everywhere; GET /v1/chains/{id} and the dashboard
 * chain page say whether the stored events match their receipt.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Io, main } from "../../src/cli/main.js";
import type { ExportReport } from "../../src/cli/verify-export.js";
import { get, sessionFor } from "../browser/support/dashboard.js";
import { startTestService, type TestService } from "../support/service.js";
import { assertNoProofMaterial, decide, type Org, sql } from "./verification-helpers.js";

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

async function simpleChain(org: Org, name: string): Promise<Completed> {
  const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name } });
  const chainId = c.json().chain_id as string;
  await record(org, chainId, {
    agent_name: "reader",
    action_type: "tool_call",
    action_name: "read_file",
    payload: { path: "/x" },
  });
  return complete(org, chainId);
}

async function scenario(slug: string): Promise<Scenario> {
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
  const first = await simpleChain(org, "first");
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
  const rich = await complete(org, chainId);
  const last = await simpleChain(org, "last");
  return {
    org,
    receipts: [first, rich, last],
    rich,
    events: { read: read.event_id, pay: pay.event_id, secret: secret.event_id },
    approvalId: pay.approval_id,
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
