/**
 * `tollgate verify` on exports built in the test with real keys (no service): the pure
 * verifier, the command in-process (exit codes, output), and the installed bin as a child
 * process (exit 0 valid, 1 invalid, 2 usage or input error).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  exportSigningInput,
  RECEIPT_EXPORT_FORMAT,
  type ReceiptExport,
} from "../../../src/cli/export-format.js";
import { type Io, main } from "../../../src/cli/main.js";
import { ExportInputError, importJwks, verifyExport } from "../../../src/cli/verify-export.js";
import { signCheckpoint } from "../../../src/receipts/checkpoint.js";
import {
  ed25519Sign,
  exportJwks,
  generateSigningKey,
  type SigningKey,
} from "../../../src/receipts/ed25519.js";
import type { AnySignedReceipt, SignedReceipt } from "../../../src/receipts/schema.js";
import { receiptHash, signReceipt } from "../../../src/receipts/sign.js";
import { receiptAnchor } from "../../../src/receipts/verify.js";
import {
  buildMixedChain,
  HMAC_KEY,
  makeApprovalRecord,
  makeBody,
  makeExportedEvents,
} from "../receipts/fixtures.js";

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../bin/tollgate.mjs");
const key = generateSigningKey();
const jwks = exportJwks([key]);
const approvalKey = generateSigningKey();
const approvalJwks = exportJwks([approvalKey]);

/** A chain of `n` receipts signed with `signer`. */
function chain(n: number, signer: SigningKey = key): SignedReceipt[] {
  const list: SignedReceipt[] = [];
  for (let i = 1; i <= n; i++) {
    const prev = list.at(-1);
    list.push(
      signReceipt(makeBody(i, prev ? receiptHash(prev) : null), {
        hmacKey: HMAC_KEY,
        ed25519: { kid: signer.kid, privateKey: signer.privateKey },
      }),
    );
  }
  return list;
}

/** An export of receipts[from-1 .. to-1] of `all`, attested by `signer`. */
function makeExport(
  all: AnySignedReceipt[],
  from = 1,
  to = all.length,
  signer: SigningKey = key,
): ReceiptExport {
  const receipts = all.slice(from - 1, to);
  const fields = {
    format: RECEIPT_EXPORT_FORMAT,
    organization: "acme",
    from_sequence: from,
    to_sequence: to,
    exported_at: "2026-02-01T00:00:00.000Z",
    anchor: from > 1 ? receiptAnchor(all[from - 2]!) : null,
    head: receipts.length > 0 ? receiptAnchor(receipts.at(-1)!) : null,
    latest_sequence: all.length,
  } as const;
  const signature = ed25519Sign(
    exportSigningInput({ ...fields, receipt_count: receipts.length }),
    signer.privateKey,
  );
  const sequences = receipts.map((_, i) => from + i);
  return {
    ...fields,
    receipts,
    events: sequences.flatMap((n) => makeExportedEvents(n)),
    approvals: sequences.map((n) => makeApprovalRecord(n, approvalKey)),
    jwks: { keys: [...jwks.keys] },
    approval_jwks: { keys: [...approvalJwks.keys] },
    attestation: { kid: signer.kid, signature },
  };
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));
const keys = importJwks(jwks);

describe("verifyExport", () => {
  it("accepts an intact chain from genesis", () => {
    const r = verifyExport(makeExport(chain(4)), keys, "file");
    expect(r.overall_status).toBe("valid");
    expect(r.problems).toEqual([]);
    expect(r.attestation).toEqual({ status: "valid", kid: key.kid });
    expect(r.receipts.map((x) => [x.signature, x.link])).toEqual([
      ["valid", "genesis"],
      ["valid", "valid"],
      ["valid", "valid"],
      ["valid", "valid"],
    ]);
  });

  it("accepts a slice that starts from its anchor, and an empty export", () => {
    expect(verifyExport(makeExport(chain(5), 3, 5), keys, "file").overall_status).toBe("valid");
    const empty = makeExport(chain(2), 3, 2);
    expect(empty.receipts).toEqual([]);
    expect(verifyExport(empty, keys, "file").overall_status).toBe("valid");
  });

  it("an edited body fails its signature and breaks the next link", () => {
    const e = clone(makeExport(chain(3)));
    (e.receipts[1] as SignedReceipt).total_actions = 99;
    const r = verifyExport(e, keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts.map((x) => [x.signature, x.link])).toEqual([
      ["valid", "genesis"],
      ["invalid", "valid"],
      ["valid", "broken"],
    ]);
  });

  it("a removed receipt is a gap, and the declared range no longer matches", () => {
    const e = clone(makeExport(chain(4)));
    e.receipts.splice(1, 1);
    const r = verifyExport(e, keys, "file");
    expect(r.receipts[1]!.link).toBe("gap");
    expect(r.problems.join("\n")).toMatch(/declares sequences 1–4 \(4 receipts\) but holds 3/);
    expect(r.attestation.status).toBe("invalid");
  });

  it("reordered receipts are broken links", () => {
    const e = clone(makeExport(chain(3)));
    e.receipts.reverse();
    expect(verifyExport(e, keys, "file").receipts.map((x) => x.link)).not.toContain("valid");
  });

  it("receipts signed with a key outside the trusted set are unknown_key", () => {
    const rogue = generateSigningKey();
    const r = verifyExport(makeExport(chain(2, rogue), 1, 2, rogue), keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts.map((x) => x.signature)).toEqual(["unknown_key", "unknown_key"]);
    expect(r.attestation.status).toBe("unknown_key");
  });

  it("a missing attestation or a changed anchor fails", () => {
    const noAtt = clone(makeExport(chain(2)));
    noAtt.attestation = null;
    expect(verifyExport(noAtt, keys, "file").attestation.status).toBe("missing");
    const slice = clone(makeExport(chain(4), 3, 4));
    slice.anchor = receiptAnchor(chain(4)[0]!);
    const r = verifyExport(slice, keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts[0]!.link).toBe("gap");
  });

  it("rejects input that is not an export, and keys that are not an Ed25519 JWKS", () => {
    expect(() => verifyExport({ receipts: [] }, keys, "file")).toThrow(ExportInputError);
    expect(() => verifyExport({ ...makeExport(chain(1)), format: "other" }, keys, "file")).toThrow(/format/);
    expect(() => importJwks({ keys: [{ kty: "RSA", n: "x", e: "AQAB" }] })).toThrow(ExportInputError);
    expect(() => importJwks([])).toThrow(/JWKS/);
  });
});

describe("verifyExport: events and approvals", () => {
  it("reports every receipt's events and approvals valid when intact", () => {
    const r = verifyExport(makeExport(chain(3)), keys, "file");
    expect(r).toMatchObject({ overall_status: "valid", event_count: 6, approval_count: 3 });
    expect(r.receipts.map((x) => [x.events, x.approvals])).toEqual([
      ["valid", "valid"],
      ["valid", "valid"],
      ["valid", "valid"],
    ]);
  });

  it("an edited event fails only its receipt, naming the event", () => {
    const e = clone(makeExport(chain(3)));
    const events = e.events as Array<{
      payload: Record<string, unknown>;
      sequence: number;
      chain_id: string;
    }>;
    const target = events.find(
      (x) => x.chain_id === (e.receipts[1] as SignedReceipt).chain_id && x.sequence === 2,
    )!;
    target.payload.amount_usd = 75;
    const r = verifyExport(e, keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts.map((x) => x.events)).toEqual(["valid", "invalid", "valid"]);
    expect(r.receipts[1]).toMatchObject({
      overall_status: "invalid",
      signature: "valid",
      mismatched_events: [2],
    });
    expect(r.problems.join("\n")).toContain("event #2");
    expect(r.problems.join("\n")).toContain("PR-2026-00002 was altered");
  });

  it("a deleted, inserted or reordered event is reported", () => {
    const deleted = clone(makeExport(chain(2)));
    deleted.events.splice(0, 1);
    expect(verifyExport(deleted, keys, "file").receipts[0]).toMatchObject({
      events: "invalid",
      mismatched_events: [1],
    });

    const inserted = clone(makeExport(chain(2)));
    inserted.events.splice(2, 0, { ...(inserted.events[1] as object), sequence: 3 });
    expect(verifyExport(inserted, keys, "file").receipts[0]).toMatchObject({
      events: "invalid",
      mismatched_events: [3],
    });

    const reordered = clone(makeExport(chain(2)));
    [reordered.events[0], reordered.events[1]] = [reordered.events[1], reordered.events[0]];
    const r = verifyExport(reordered, keys, "file");
    expect(r.receipts[0]!.events).toBe("invalid");
    expect(r.problems.join()).toContain("reordered");

    const stray = clone(makeExport(chain(2), 1, 1));
    stray.events.push(...makeExportedEvents(2));
    expect(verifyExport(stray, keys, "file").problems.join()).toContain("belong to no receipt of the export");
  });

  it("an edited, deleted, inserted or reordered approval is reported", () => {
    const edited = clone(makeExport(chain(2)));
    (edited.approvals[1] as { notes: string }).notes = "rubber-stamped";
    const r = verifyExport(edited, keys, "file");
    expect(r.receipts.map((x) => x.approvals)).toEqual(["valid", "invalid"]);
    expect(r.receipts[1]!.mismatched_approvals).toEqual([
      (edited.approvals[1] as { approval_id: string }).approval_id,
    ]);
    expect(r.problems.join()).toContain("its signature does not match its recorded facts");

    const deleted = clone(makeExport(chain(2)));
    deleted.approvals.splice(0, 1);
    expect(verifyExport(deleted, keys, "file").receipts[0]!.approvals).toBe("invalid");

    const inserted = clone(makeExport(chain(2)));
    inserted.approvals.push({
      ...(inserted.approvals[0] as object),
      approval_id: "00000007-0000-4000-8000-000000000007",
    });
    expect(verifyExport(inserted, keys, "file").receipts[0]!.approvals).toBe("invalid");

    const reordered = clone(makeExport(chain(2)));
    reordered.approvals.reverse();
    expect(verifyExport(reordered, keys, "file").problems.join()).toContain(
      "approvals of its chains out of receipt order",
    );
  });

  it("approval records are checked against the given approval keys", () => {
    const rogue = generateSigningKey();
    const r = verifyExport(makeExport(chain(1)), keys, "file", {
      approvalKeys: new Map([[rogue.kid, rogue.publicKey]]),
    });
    expect(r).toMatchObject({
      overall_status: "invalid",
      approval_keys_source: "file",
      approval_key_count: 1,
    });
    expect(r.problems.join()).toContain("signed with an untrusted key");
  });
});

describe("verifyExport: receipts issued before the event hash chain", () => {
  /** PR-1, PR-2 without event_chain (issued before the upgrade), PR-3, PR-4 with it. */
  const mixed = () => buildMixedChain(2, 2, { signingKey: key });

  it("a log that starts with old receipts verifies end to end; their evidence is not_evaluated", () => {
    const r = verifyExport(makeExport(mixed()), keys, "file", { approvalKeys: importJwks(approvalJwks) });
    expect(r.problems).toEqual([]);
    expect(r).toMatchObject({
      overall_status: "valid",
      event_count: 8,
      approval_count: 4,
      pre_event_chain_receipt_count: 2,
    });
    expect(
      r.receipts.map((x) => [x.receipt_format, x.overall_status, x.signature, x.link, x.events, x.approvals]),
    ).toEqual([
      ["pre_event_chain", "valid", "valid", "genesis", "not_evaluated", "not_evaluated"],
      ["pre_event_chain", "valid", "valid", "valid", "not_evaluated", "not_evaluated"],
      ["event_chain", "valid", "valid", "valid", "valid", "valid"],
      ["event_chain", "valid", "valid", "valid", "valid", "valid"],
    ]);
    // a slice anchored on an old receipt
    expect(verifyExport(makeExport(mixed(), 3, 4), keys, "file").overall_status).toBe("valid");
  });

  it("an edited old receipt still fails its signature and breaks the next link", () => {
    const e = clone(makeExport(mixed()));
    (e.receipts[0] as { summary: string }).summary = "edited";
    const r = verifyExport(e, keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts.map((x) => [x.signature, x.link])).toEqual([
      ["invalid", "genesis"],
      ["valid", "broken"],
      ["valid", "valid"],
      ["valid", "valid"],
    ]);
  });

  it("a new receipt stripped of event_chain (to hide its events) fails its signature", () => {
    const e = clone(makeExport(mixed()));
    const r3 = e.receipts[2] as Record<string, unknown> & { events_summary: Array<Record<string, unknown>> };
    delete r3.event_chain;
    for (const item of r3.events_summary) delete item.event_hash;
    const r = verifyExport(e, keys, "file");
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts[2]).toMatchObject({
      receipt_format: "pre_event_chain",
      overall_status: "invalid",
      signature: "invalid",
      events: "not_evaluated",
    });
    expect(r.receipts[3]!.link).toBe("broken");
  });
});

describe("verifyExport: checkpoints", () => {
  const all = chain(5);
  const checkpointAt = (n: number, signer: SigningKey = key) =>
    signCheckpoint(
      {
        organization: "acme",
        sequence: n,
        receipt_number: all[n - 1]!.receipt_number,
        receipt_hash: receiptHash(all[n - 1]!),
        issued_at: "2026-01-20T00:00:00.000Z",
      },
      signer,
    );

  it("passes when the exported log extends the checkpoint (also from its anchor)", () => {
    const r = verifyExport(makeExport(all), keys, "file", { checkpoint: checkpointAt(3) });
    expect(r.overall_status).toBe("valid");
    expect(r.checkpoint).toMatchObject({ sequence: 3, signature: "valid", log: "extended", problems: [] });
    expect(
      verifyExport(makeExport(all, 4, 5), keys, "file", { checkpoint: checkpointAt(3) }).checkpoint?.log,
    ).toBe("extended");
    // the completion answer carries the checkpoint in a member
    const wrapped = { receipt_number: "PR-2026-00003", checkpoint: checkpointAt(3) };
    expect(verifyExport(makeExport(all), keys, "file", { checkpoint: wrapped }).checkpoint?.log).toBe(
      "extended",
    );
  });

  it("fails when the tail was truncated after the checkpoint", () => {
    const truncated = makeExport(all.slice(0, 3));
    const r = verifyExport(truncated, keys, "file", { checkpoint: checkpointAt(5) });
    expect(r.overall_status).toBe("invalid");
    expect(r.checkpoint).toMatchObject({ log: "truncated", sequence: 5 });
    expect(r.problems.join()).toContain("the log ends at sequence 3, before the checkpoint's PR-2026-00005");
  });

  it("fails when the log was rewritten from the checkpoint on (forked)", () => {
    const rewritten = chain(3);
    const tail = signReceipt(makeBody(4, receiptHash(rewritten[2]!), { summary: "rewritten" }), {
      hmacKey: HMAC_KEY,
      ed25519: { kid: key.kid, privateKey: key.privateKey },
    });
    const r = verifyExport(makeExport([...rewritten, tail]), keys, "file", { checkpoint: checkpointAt(4) });
    expect(r.checkpoint?.log).toBe("forked");
    expect(r.overall_status).toBe("invalid");
  });

  it("fails when the export does not cover the checkpoint, or its signature does not verify", () => {
    expect(
      verifyExport(makeExport(all, 1, 2), keys, "file", { checkpoint: checkpointAt(4) }).checkpoint?.log,
    ).toBe("not_covered");
    const edited = { ...checkpointAt(3), issued_at: "2026-01-21T00:00:00.000Z" };
    const r = verifyExport(makeExport(all), keys, "file", { checkpoint: edited });
    expect(r).toMatchObject({
      overall_status: "invalid",
      checkpoint: { signature: "invalid", log: "extended" },
    });
    const rogue = generateSigningKey();
    expect(
      verifyExport(makeExport(all), keys, "file", { checkpoint: checkpointAt(3, rogue) }).checkpoint
        ?.signature,
    ).toBe("unknown_key");
    expect(() => verifyExport(makeExport(all), keys, "file", { checkpoint: { sequence: 3 } })).toThrow(
      /not a Tollgate checkpoint/,
    );
  });
});

describe("tollgate main() in-process", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-cli-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = async (argv: string[], stdin = "") => {
    let stdout = "";
    let stderr = "";
    const io: Io = {
      stdout: (s) => {
        stdout += s;
      },
      stderr: (s) => {
        stderr += s;
      },
      readStdin: async () => stdin,
      fetch: async () => new Response("nope", { status: 503 }),
    };
    return { code: await main(argv, io), stdout, stderr };
  };
  const file = (name: string, content: unknown) => {
    const p = path.join(dir, name);
    writeFileSync(p, typeof content === "string" ? content : JSON.stringify(content));
    return p;
  };

  it("reads the export from standard input with -", async () => {
    const r = await run(["verify", "-", "--json"], JSON.stringify(makeExport(chain(2))));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      overall_status: "valid",
      keys_source: "export",
      receipt_count: 2,
    });
  });

  it("--checkpoint fails a truncated log (exit 1) and passes an extended one (exit 0)", async () => {
    const all = chain(4);
    const cp = signCheckpoint(
      {
        organization: "acme",
        sequence: 4,
        receipt_number: all[3]!.receipt_number,
        receipt_hash: receiptHash(all[3]!),
        issued_at: "2026-01-20T00:00:00.000Z",
      },
      key,
    );
    const cpFile = file("cp.json", cp);
    const ok = await run(["verify", file("full.json", makeExport(all)), "--checkpoint", cpFile]);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stdout).toContain("Checkpoint PR-2026-00004 (sequence 4): signature valid, log extended");
    const cut = await run(["verify", file("cut.json", makeExport(all.slice(0, 2))), "--checkpoint", cpFile]);
    expect(cut.code).toBe(1);
    expect(cut.stdout).toContain("log truncated");
    expect(cut.stdout).toContain("Result: INVALID");
    const bad = await run([
      "verify",
      file("full2.json", makeExport(all)),
      "--checkpoint",
      file("nocp.json", {}),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("not a Tollgate checkpoint");
  });

  it("says which receipts predate the event hash chain (exit 0)", async () => {
    const r = await run([
      "verify",
      file("mixed.json", makeExport(buildMixedChain(1, 1, { signingKey: key }))),
    ]);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain(
      "1 receipt issued before the event hash chain (events and approvals not evaluated)",
    );
    expect(r.stdout).toMatch(
      /ok +PR-2026-00001 .*events not_evaluated +approvals not_evaluated\n +· issued before the event hash chain/,
    );
    expect(r.stdout).toContain("Result: VALID (2 receipts verified offline)");
  });

  it("--approval-jwks names the approval keys used", async () => {
    const r = await run([
      "verify",
      file("ev.json", makeExport(chain(2))),
      "--approval-jwks",
      file("ak.json", approvalJwks),
      "--json",
    ]);
    expect(r.code, r.stdout).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ approval_keys_source: "file", approval_key_count: 1 });
  });

  it("exit 2 on usage and input errors, with a message on stderr", async () => {
    expect((await run([])).code).toBe(2);
    expect((await run(["verify"])).code).toBe(2);
    expect((await run(["frobnicate"])).code).toBe(2);
    expect((await run(["verify", "x.json", "--nope"])).code).toBe(2);
    const missing = await run(["verify", path.join(dir, "absent.json")]);
    expect(missing).toMatchObject({ code: 2, stdout: "" });
    expect(missing.stderr).toContain("ENOENT");
    const notJson = await run(["verify", file("bad.json", "{")]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toContain("is not JSON");
    const notExport = await run(["verify", file("other.json", { hello: 1 })]);
    expect(notExport.code).toBe(2);
    expect(notExport.stderr).toContain("not a Tollgate receipt export");
    const down = await run([
      "verify",
      file("ok.json", makeExport(chain(1))),
      "--jwks",
      "http://127.0.0.1:9/keys.json",
    ]);
    expect(down.code).toBe(2);
    expect(down.stderr).toContain("HTTP 503");
    expect((await run(["--help"])).code).toBe(0);
  });
});

describe("tollgate bin as a child process", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tg-cli-bin-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: unknown) => {
    const p = path.join(dir, name);
    writeFileSync(p, JSON.stringify(content));
    return p;
  };
  const tollgate = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [bin, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
      });
    });

  it("exit 0 for an intact export, with one line per receipt", async () => {
    const jwksFile = file("jwks.json", jwks);
    const r = await tollgate(["verify", file("good.json", makeExport(chain(3))), "--jwks", jwksFile]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Keys: 1 from ${jwksFile}`);
    expect(r.stdout.match(/^ {2}ok {4}PR-2026-0000[123] /gm)).toHaveLength(3);
    expect(r.stdout).toContain("Result: VALID (3 receipts verified offline)");
  });

  it("exit 1 for a tampered export, naming the receipt and the problem", async () => {
    const e = clone(makeExport(chain(3)));
    (e.receipts[2] as SignedReceipt).summary = "edited";
    const r = await tollgate(["verify", file("tampered.json", e), "--jwks", file("jwks2.json", jwks)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/FAIL {2}PR-2026-00003 +signature invalid/);
    expect(r.stdout).toContain("PR-2026-00003 has an invalid Ed25519 signature");
    expect(r.stdout).toMatch(/Result: INVALID \(\d+ problems?\)/);
  });

  it("exit 1 against keys that did not sign the export", async () => {
    const other = exportJwks([generateSigningKey()]);
    const r = await tollgate([
      "verify",
      file("good2.json", makeExport(chain(2))),
      "--jwks",
      file("other.json", other),
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("untrusted Ed25519 key");
  });

  it("exit 2 for usage errors", async () => {
    const r = await tollgate(["verify", path.join(dir, "missing.json")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cannot read");
    expect((await tollgate([])).code).toBe(2);
  });
});
