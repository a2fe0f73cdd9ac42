/**
 * Secrets outside the payload (README "Secrets outside the payload"): the payload's field-name
 * and value-prefix rules apply to chain names, chain metadata, approval notes and failure
 * messages, so a pasted secret is never stored, returned or put in a receipt; the service's own
 * prefixes (tg_, tgs_, tgp_, tga_) are among the defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

describe("secrets outside the payload are redacted before they are stored", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let chainId: string;
  let receiptBody = "";
  const secrets = [
    "sk_live_123456",
    "tga_adminadmin",
    "hunter2",
    "tgs_sessionsession",
    "AKIAIOSFODNN7EXAMPLE",
  ];

  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("secrets-org");
    const chain = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: {
        name: "deploy with sk_live_123456",
        metadata: { ticket: "INC-1", db_password: "hunter2", nested: { note: "tga_adminadmin" } },
      },
    });
    expect(chain.statusCode, chain.body).toBe(201);
    chainId = chain.json().chain_id;
    const pay = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "payer",
        action_type: "tool_call",
        action_name: "pay",
        payload: { amount_usd: 9000 },
      },
    });
    const decided = await t.call("POST", `/v1/approvals/${pay.json().approval_id}/decision`, {
      token: org.adminKey,
      body: { decision: "deny", notes: "no. the session tgs_sessionsession was leaked, password: hunter2" },
    });
    expect(decided.statusCode, decided.body).toBe(200);
    const done = await t.call("POST", `/v1/chains/${chainId}/complete`, {
      token: org.clientKey,
      body: { failure: { mode: "CrashError", message: "boom with AKIAIOSFODNN7EXAMPLE in env" } },
    });
    expect(done.statusCode, done.body).toBe(200);
    receiptBody = (await t.call("GET", `/v1/chains/${chainId}/receipt`, { token: org.clientKey })).body;
  });
  afterAll(async () => t?.close());

  it("the chain's name and metadata are stored redacted", async () => {
    const r = (await t.call("GET", `/v1/chains/${chainId}`, { token: org.clientKey })).json();
    expect(r.name).toBe("deploy with [REDACTED]");
    expect(r.metadata).toEqual({
      ticket: "INC-1",
      db_password: "[REDACTED]",
      nested: { note: "[REDACTED]" },
    });
    expect(r.failure).toEqual({ mode: "CrashError", message: "boom with [REDACTED] in env" });
  });

  it("approval notes are stored redacted", async () => {
    const { rows } = await t.service.ctx.db.query("SELECT notes FROM approvals WHERE chain_id = $1", [
      chainId,
    ]);
    expect(rows[0]!.notes).toBe("no. the session [REDACTED] was leaked, password: [REDACTED]");
  });

  it("no secret reaches the receipt or any stored row", async () => {
    expect(receiptBody).toContain("[REDACTED]");
    const dump = JSON.stringify(
      (
        await t.service.ctx.db.query(
          "SELECT c.name, c.metadata, c.failure, a.notes, a.final_decision, r.body FROM chains c JOIN approvals a ON a.chain_id = c.id JOIN receipts r ON r.chain_id = c.id WHERE c.id = $1",
          [chainId],
        )
      ).rows,
    );
    for (const s of secrets) {
      expect(receiptBody).not.toContain(s);
      expect(dump).not.toContain(s);
    }
  });
});
