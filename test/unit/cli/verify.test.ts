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
import {
  ed25519Sign,
  exportJwks,
  generateSigningKey,
  type SigningKey,
} from "../../../src/receipts/ed25519.js";
import type { SignedReceipt } from "../../../src/receipts/schema.js";
import { receiptHash, signReceipt } from "../../../src/receipts/sign.js";
import { receiptAnchor } from "../../../src/receipts/verify.js";
import { HMAC_KEY, makeBody } from "../receipts/fixtures.js";

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../bin/tollgate.mjs");
const key = generateSigningKey();
const jwks = exportJwks([key]);

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
  all: SignedReceipt[],
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
  } as const;
  const signature = ed25519Sign(
    exportSigningInput({ ...fields, receipt_count: receipts.length }),
    signer.privateKey,
  );
  return { ...fields, receipts, jwks: { keys: [...jwks.keys] }, attestation: { kid: signer.kid, signature } };
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
