import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";
import { completedReceipt, type Org, session, tollgate } from "./verification-helpers.js";

describe("receipt export and offline verification", () => {
  let t: TestService;
  let org: Org;
  let otherOrg: Org;
  let dir: string;
  let jwksUrl: string;
  let member: string;
  const numbers: string[] = [];
  const write = (name: string, value: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, typeof value === "string" ? value : JSON.stringify(value, null, 2));
    return file;
  };
  const exportOf = async (query = "") => {
    const r = await t.call("GET", `/v1/receipts/export${query}`, { token: member });
    expect(r.statusCode, r.body).toBe(200);
    return r.json();
  };

  beforeAll(async () => {
    t = await startTestService({ listen: true });
    org = await t.bootstrapOrg("export");
    otherOrg = await t.bootstrapOrg("export-other");
    await completedReceipt(t, otherOrg, "elsewhere");
    for (let i = 0; i < 3; i++) numbers.push((await completedReceipt(t, org, `c${i}`)).receiptNumber);
    // a rotation in the middle: the export must carry the retired key too
    await t.service.ctx.signingKeys.rotate("receipt");
    for (let i = 3; i < 5; i++) numbers.push((await completedReceipt(t, org, `c${i}`)).receiptNumber);
    member = await session(t, org, "eve@example.com", ["member"]);
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-export-"));
    jwksUrl = `${t.url}/.well-known/tollgate/receipt-keys.json`;
  });
  afterAll(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("exports the organization's receipts in order with anchor, head, keys and attestation", async () => {
    const e = await exportOf();
    expect(e).toMatchObject({
      format: "tollgate.receipt-export.v2",
      organization: "export",
      from_sequence: 1,
      to_sequence: 5,
      anchor: null,
      head: { receipt_number: numbers[4] },
    });
    expect(e.receipts.map((r: { receipt_number: string }) => r.receipt_number)).toEqual(numbers);
    expect(e.receipts.every((r: { organization: string }) => r.organization === "export")).toBe(true);
    expect(e.jwks.keys).toHaveLength(2);
    expect(e.attestation.signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    const partial = await exportOf("?from_sequence=2&to_sequence=3");
    expect(partial.receipts.map((r: { receipt_number: string }) => r.receipt_number)).toEqual(
      numbers.slice(1, 3),
    );
    expect(partial.anchor.receipt_number).toBe(numbers[0]);
    expect(partial.head.receipt_number).toBe(numbers[2]);
  });

  it("publishes the receipt keys as a JWKS without private material", async () => {
    const res = await fetch(jwksUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    const jwks = (await res.json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.map((k) => k.status).sort()).toEqual(["active", "retired"]);
    for (const k of jwks.keys) {
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
      expect(k).not.toHaveProperty("d");
    }
  });

  it("validates the export range and guards roles", async () => {
    const bad = await t.call("GET", "/v1/receipts/export?from_sequence=3&to_sequence=2", { token: member });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain("to_sequence");
    const beyond = await t.call("GET", "/v1/receipts/export?from_sequence=9", { token: member });
    expect(beyond.statusCode).toBe(400);
    expect(beyond.json().message).toContain("from_sequence");
    const zero = await t.call("GET", "/v1/receipts/export?from_sequence=0", { token: member });
    expect(zero.statusCode).toBe(400);
    expect((await t.call("GET", "/v1/receipts/export", { token: org.clientKey })).statusCode).toBe(403);
    expect((await t.call("GET", "/v1/receipts/export")).statusCode).toBe(401);
    const empty = await exportOf("?from_sequence=6");
    expect(empty).toMatchObject({ receipts: [], from_sequence: 6, to_sequence: 5, head: null });
    expect(empty.anchor.receipt_number).toBe(numbers[4]);
  });

  it("tollgate verify accepts the exported chain with the service's published keys (exit 0)", async () => {
    const file = write("good.json", await exportOf());
    const r = await tollgate(["verify", file, "--jwks", jwksUrl]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (const n of numbers) expect(r.stdout).toMatch(new RegExp(`ok\\s+${n}\\s+signature valid`));
    expect(r.stdout).toContain("link genesis");
    expect(r.stdout).toContain("Export attestation: valid");
    expect(r.stdout).toContain("Result: VALID (5 receipts verified offline)");

    const json = await tollgate(["verify", file, "--jwks", jwksUrl, "--json"]);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({
      overall_status: "valid",
      keys_source: "url",
      receipt_count: 5,
      key_count: 2,
    });
    expect(report.receipts.map((x: { link: string }) => x.link)).toEqual([
      "genesis",
      "valid",
      "valid",
      "valid",
      "valid",
    ]);

    const partial = write("partial.json", await exportOf("?from_sequence=3"));
    const p = await tollgate(["verify", partial, "--jwks", jwksUrl]);
    expect(p.code, p.stdout).toBe(0);
  });

  it("without --jwks it uses the export's own keys and says that this proves consistency only", async () => {
    const file = write("selfkeys.json", await exportOf());
    const r = await tollgate(["verify", file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("from the export itself");
  });

  it("a receipt body edited in the export fails its signature and the next link (exit 1)", async () => {
    const e = await exportOf();
    e.receipts[1].summary = "nothing to see here";
    const r = await tollgate(["verify", write("edited.json", e), "--jwks", jwksUrl]);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`FAIL\\s+${numbers[1]}\\s+signature invalid`));
    expect(r.stdout).toMatch(new RegExp(`FAIL\\s+${numbers[2]}\\s+signature valid\\s+link broken`));
    expect(r.stdout).toContain("Result: INVALID");
  });

  it("a receipt removed from the export shows as a gap (exit 1)", async () => {
    const e = await exportOf();
    e.receipts.splice(2, 1);
    const r = await tollgate(["verify", write("gap.json", e), "--jwks", jwksUrl, "--json"]);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.overall_status).toBe("invalid");
    expect(
      report.receipts.find((x: { receipt_number: string }) => x.receipt_number === numbers[3]).link,
    ).toBe("gap");
    expect(report.problems.join(" ")).toContain("missing");
  });

  it("cutting the tail, or rewriting the declared range to match, fails the attestation (exit 1)", async () => {
    const e = await exportOf();
    e.receipts.pop();
    const cut = await tollgate(["verify", write("cut.json", e), "--jwks", jwksUrl]);
    expect(cut.code).toBe(1);
    expect(cut.stdout).toContain("holds 4");
    e.to_sequence = 4;
    e.head = {
      receipt_number: e.receipts[3].receipt_number,
      receipt_hash: (await exportOf("?to_sequence=4")).head.receipt_hash,
    };
    const rewritten = await tollgate(["verify", write("rewritten.json", e), "--jwks", jwksUrl]);
    expect(rewritten.code).toBe(1);
    expect(rewritten.stdout).toContain("Export attestation: invalid");
  });

  it("checks the exported events, and --checkpoint against the published checkpoint", async () => {
    const approvalJwks = `${t.url}/.well-known/tollgate/approval-keys.json`;
    const cp = await t.call("GET", "/v1/receipts/checkpoint", { token: member });
    expect(cp.statusCode, cp.body).toBe(200);
    expect(cp.json()).toMatchObject({ organization: "export", sequence: 5, receipt_number: numbers[4] });
    const cpFile = write("checkpoint.json", cp.json());
    const e = await exportOf();
    expect(e.events).toHaveLength(5);
    expect(e.latest_sequence).toBe(5);
    const args = ["--jwks", jwksUrl, "--approval-jwks", approvalJwks, "--checkpoint", cpFile];
    const ok = await tollgate(["verify", write("with-cp.json", e), ...args]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`Checkpoint ${numbers[4]} (sequence 5): signature valid, log extended`);
    expect(ok.stdout).toMatch(
      new RegExp(`ok\\s+${numbers[0]}\\s+signature valid\\s+link genesis\\s+events valid`),
    );

    e.events[2].action_name = "renamed";
    const edited = await tollgate(["verify", write("event-edited.json", e), ...args]);
    expect(edited.code).toBe(1);
    expect(edited.stdout).toMatch(
      new RegExp(`FAIL\\s+${numbers[2]}\\s+signature valid\\s+link valid\\s+events invalid`),
    );
    expect(edited.stdout).toContain(`of ${numbers[2]} was altered`);

    const partial = await tollgate([
      "verify",
      write("before-cp.json", await exportOf("?to_sequence=3")),
      ...args,
    ]);
    expect(partial.code).toBe(1);
    expect(partial.stdout).toContain("log not_covered");
  });

  it("a receipt of another organization spliced into the export is detected (exit 1)", async () => {
    const e = await exportOf();
    const other = await t.call("GET", "/v1/receipts/export", {
      token: await session(t, otherOrg, "x@example.com", ["member"]),
    });
    expect(other.statusCode).toBe(200);
    expect(other.json().organization).toBe("export-other");
    e.receipts[0] = other.json().receipts[0];
    const r = await tollgate(["verify", write("mixed.json", e), "--jwks", jwksUrl]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("another organization");
  });
});
