/**
 * bench/receipt: receipt build and chain verification throughput of src/receipts, each beside
 * raw node:crypto over the same canonical bytes, measured in the same run.
 *
 * - build: what the service does to seal a chain (src/service/receipts/complete.ts), minus the
 *   database: `signReceipt` (schema validation, RFC 8785 canonical JSON, HMAC-SHA256) and
 *   `receiptHash` (canonical JSON of the signed receipt, SHA-256), for receipts of 10, 1,000
 *   and 100,000 events. Baseline: createHmac("sha256") over the canonical body bytes plus
 *   createHash("sha256") over the canonical signed bytes, which it is handed ready-made.
 * - verify: `verifyReceiptChain` over a 10,000-receipt chain (10 events each) as read back
 *   from JSON, once with the HMAC key (the service's check) and once with the Ed25519 public
 *   keys (what `tollgate verify` runs offline). Baseline: per receipt, HMAC-SHA256 (or
 *   Ed25519 verify) over the canonical body bytes and SHA-256 over the canonical receipt bytes
 *   for the link, with the comparisons.
 *
 * Ratio = ours / raw throughput; target ≥ 0.5×. Beside each, one "library floor" row per RFC 8785
 * library of `LIBRARIES`: that library alone over the same objects (body and signed receipt)
 * plus the same raw crypto — what any build or verify that keeps RFC 8785 with that library (the
 * project's rule) pays; the floor of the library src/receipts/canonical.ts uses is the most ours
 * can reach, the others say whether another library would raise it. Not part of the rows, in the JSON `extra`:
 * canonical sizes, the build "floor" (JSON.stringify of body and receipt plus the raw
 * crypto: what no serializer in JavaScript can beat) and the build with the service's Ed25519
 * signature and storage serialization.
 *
 *   npx tsx bench/receipt/run.ts [--repeats 3] [--build-events 10,1000,100000] [--chain-receipts 10000] [--quick]
 */
import { createHash, createHmac, generateKeyPairSync, timingSafeEqual, verify } from "node:crypto";
import { parseArgs } from "node:util";
import { canonify } from "@truestamp/canonify";
import canonicalize from "canonicalize";
import canonicalize5 from "canonicalize-5";
import jsonCanon from "json-canon";
import { canonicalJson } from "../../src/receipts/canonical.js";
import { keyIdOf } from "../../src/receipts/ed25519.js";
import type { SignedReceipt } from "../../src/receipts/schema.js";
import { hashOfCanonical, receiptHash, signingInput, signReceipt } from "../../src/receipts/sign.js";
import { verifyReceiptChain } from "../../src/receipts/verify.js";
import { progress, report } from "../lib/report.js";
import { infoRow, median, type ResultRow, spreadPct } from "../lib/stats.js";
import { receiptBody } from "./fixtures.js";

const { values: args } = parseArgs({
  options: {
    repeats: { type: "string", default: "3" },
    "build-events": { type: "string", default: "10,1000,100000" },
    "chain-receipts": { type: "string", default: "10000" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const repeats = quick ? 1 : Number(args.repeats);
const buildSizes = quick ? [10, 1_000] : args["build-events"]!.split(",").map(Number);
const chainLength = quick ? 200 : Number(args["chain-receipts"]);
const eventsPerReceipt = 10;
/** Each measurement runs at least this long and this many operations. */
const minMs = quick ? 100 : 2_000;
const minOps = quick ? 1 : 3;
const TARGET = 0.5;

const hmacKey = createHash("sha256").update("bench receipt hmac key").digest();
const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const kid = keyIdOf(publicKey);

/** Operations per second of `op`, run back to back for at least minMs and minOps. */
function perSecond(op: () => void): number {
  op(); // warm-up: JIT and first-use allocations
  let ops = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    op();
    ops++;
    elapsed = performance.now() - start;
  } while (elapsed < minMs || ops < minOps);
  return (ops / elapsed) * 1000;
}

const fmt = (n: number) => n.toLocaleString("en-US");

/**
 * The RFC 8785 libraries measured as floors (ADR 0011), the one src/receipts/canonical.ts uses
 * first. Each must give canonicalJson's text on the bench's objects (checked before measuring).
 */
const LIBRARIES: readonly { name: string; canonicalize: (value: unknown) => string | undefined }[] = [
  { name: "json-canon", canonicalize: jsonCanon },
  { name: "canonicalize", canonicalize },
  { name: "canonicalize 5", canonicalize: canonicalize5 },
  { name: "@truestamp/canonify", canonicalize: canonify },
];

/** Throws unless every library gives `expected` (canonicalJson's text) for `value`. */
function assertLibrariesAgree(value: unknown, expected: string, what: string): void {
  for (const library of LIBRARIES) {
    if (library.canonicalize(value) !== expected)
      throw new Error(`${library.name} does not give canonicalJson's text for ${what}`);
  }
}

/** `libraries` of a repeat, as "name r× raw (ours q× of it)" for the progress line. */
const floorsText = (run: Measured) =>
  LIBRARIES.map(
    (library, i) =>
      `${library.name} ${(run.libraries[i]! / run.raw).toFixed(3)}× (ours ${(run.ours / run.libraries[i]!).toFixed(2)}× of it)`,
  ).join(", ");

/** One build size: ours, raw, and the extras, `repeats` times. */
function benchBuild(events: number) {
  const body = receiptBody(42, events, `sha256:${"ab".repeat(32)}`);
  const signed = signReceipt(body, { hmacKey });
  const bodyBytes = Buffer.from(signingInput(body), "utf8");
  const signedBytes = Buffer.from(canonicalJson(signed), "utf8");
  assertLibrariesAgree(body, bodyBytes.toString("utf8"), `the ${events}-event body`);
  assertLibrariesAgree(signed, signedBytes.toString("utf8"), `the ${events}-event signed receipt`);
  const runs: (Measured & { floor: number; service: number })[] = [];
  for (let i = 0; i < repeats; i++) {
    const ours = perSecond(() => {
      receiptHash(signReceipt(body, { hmacKey }));
    });
    const raw = perSecond(() => {
      createHmac("sha256", hmacKey).update(bodyBytes).digest("hex");
      createHash("sha256").update(signedBytes).digest("hex");
    });
    const libraries = LIBRARIES.map((library) =>
      perSecond(() => {
        createHmac("sha256", hmacKey).update(library.canonicalize(body)!, "utf8").digest("hex");
        createHash("sha256").update(library.canonicalize(signed)!, "utf8").digest("hex");
      }),
    );
    const floor = perSecond(() => {
      const text = JSON.stringify(body);
      createHmac("sha256", hmacKey).update(text, "utf8").digest("hex");
      createHash("sha256").update(JSON.stringify(signed), "utf8").digest("hex");
    });
    // completeChain: Ed25519 beside the HMAC, and the canonical text it stores and hashes.
    const service = perSecond(() => {
      const s = signReceipt(body, { hmacKey, ed25519: { kid, privateKey } });
      hashOfCanonical(canonicalJson(s));
    });
    const run = { ours, raw, libraries, floor, service };
    runs.push(run);
    progress(
      `  build ${fmt(events)} events, run ${i + 1}: ours ${ours.toFixed(1)}/s, raw ${raw.toFixed(1)}/s (${(ours / raw).toFixed(3)}×); library floors ${floorsText(run)}; JSON.stringify floor ${floor.toFixed(1)}/s, as the service ${service.toFixed(1)}/s`,
    );
  }
  const figure = `build, ${fmt(events)}-event receipt`;
  const rows = [
    ratioRow(figure, "raw HMAC-SHA256 + SHA-256 of the canonical bytes", runs),
    ...libraryRows(figure, runs),
  ];
  const extra = {
    events,
    canonical_body_bytes: bodyBytes.length,
    canonical_receipt_bytes: signedBytes.length,
    floor_per_s: median(runs.map((r) => r.floor)),
    with_ed25519_and_storage_text_per_s: median(runs.map((r) => r.service)),
  };
  return { rows, extra };
}

/** One repeat: ours, raw crypto over ready bytes, and each of `LIBRARIES` plus the same crypto. */
interface Measured {
  ours: number;
  raw: number;
  /** In the order of `LIBRARIES`. */
  libraries: number[];
}

/** The figure's row: ours beside the raw crypto, against the target. */
function ratioRow(figure: string, baseline: string, runs: Measured[]): ResultRow {
  const ratios = runs.map((r) => r.ours / r.raw);
  return {
    benchmark: "receipt",
    figure,
    value: median(runs.map((r) => r.ours)),
    unit: "receipts/s",
    baseline,
    baselineValue: median(runs.map((r) => r.raw)),
    ratio: median(ratios),
    better: "higher",
    target: `≥ ${TARGET}× raw`,
    met: median(ratios) >= TARGET,
    spreadPct: spreadPct(ratios),
    repeats,
  };
}

/**
 * The library floors of a figure, one row per library of `LIBRARIES`: the library alone over the
 * same objects plus the raw crypto, beside the raw crypto (the ratio of the library in use is the
 * most ours can reach while RFC 8785 is serialized by it).
 */
function libraryRows(figure: string, runs: Measured[]): ResultRow[] {
  return LIBRARIES.map((library, i) => {
    const ratios = runs.map((r) => r.libraries[i]! / r.raw);
    return {
      ...infoRow(
        "receipt",
        `library floor (${library.name} + raw crypto): ${figure}`,
        "receipts/s",
        runs.map((r) => r.libraries[i]!),
      ),
      baseline: "raw crypto, same run",
      baselineValue: median(runs.map((r) => r.raw)),
      ratio: median(ratios),
      better: "higher",
      spreadPct: spreadPct(ratios),
    };
  });
}

/** A signed, linked chain of `n` receipts as read back from their stored JSON, and its bytes. */
function storedChain(n: number) {
  const receipts: SignedReceipt[] = [];
  const bodies: Buffer[] = [];
  const fulls: Buffer[] = [];
  const macs: Buffer[] = [];
  const signatures: Buffer[] = [];
  const previousHashes: (string | null)[] = [];
  let previous: string | null = null;
  for (let sequence = 1; sequence <= n; sequence++) {
    const signed = signReceipt(receiptBody(sequence, eventsPerReceipt, previous), {
      hmacKey,
      ed25519: { kid, privateKey },
    });
    const text = canonicalJson(signed);
    receipts.push(JSON.parse(text));
    bodies.push(Buffer.from(signingInput(signed), "utf8"));
    fulls.push(Buffer.from(text, "utf8"));
    macs.push(Buffer.from(signed.signature.slice("hmac-sha256:".length), "hex"));
    signatures.push(Buffer.from(signed.ed25519!.signature, "base64url"));
    previousHashes.push(previous);
    previous = receiptHash(signed);
  }
  return { receipts, bodies, fulls, macs, signatures, previousHashes };
}

function benchVerify(): ResultRow[] {
  progress(`  signing a ${fmt(chainLength)}-receipt chain`);
  const chain = storedChain(chainLength);
  /** The link check the raw baseline does: SHA-256 of receipt i is receipt i+1's previous hash. */
  const linked = (i: number) =>
    i + 1 === chainLength ||
    `sha256:${createHash("sha256").update(chain.fulls[i]!).digest("hex")}` === chain.previousHashes[i + 1];
  /**
   * A library floor: per receipt, `serialize` (one of `LIBRARIES`) of its body (the receipt
   * without its signatures) and of the whole receipt, `check` of the body text, SHA-256 of the
   * whole text against the next receipt's previous hash.
   */
  const libraryVerify = (
    serialize: (value: unknown) => string | undefined,
    check: (body: string, i: number) => boolean,
  ) => {
    let ok = true;
    for (let i = 0; i < chainLength; i++) {
      const { signature: _s, ed25519: _e, ...body } = chain.receipts[i]!;
      const full = serialize(chain.receipts[i])!;
      const hash = `sha256:${createHash("sha256").update(full, "utf8").digest("hex")}`;
      ok =
        check(serialize(body)!, i) && (i + 1 === chainLength || hash === chain.previousHashes[i + 1]) && ok;
    }
    return ok;
  };
  const modes = [
    {
      figure: `verify ${fmt(chainLength)}-receipt chain, HMAC (service)`,
      baseline: "raw HMAC-SHA256 + SHA-256 of the canonical bytes",
      ours: () => verifyReceiptChain(chain.receipts, { hmacKey }),
      raw: () => {
        let ok = true;
        for (let i = 0; i < chainLength; i++) {
          const mac = createHmac("sha256", hmacKey).update(chain.bodies[i]!).digest();
          ok = timingSafeEqual(mac, chain.macs[i]!) && linked(i) && ok;
        }
        return ok;
      },
      library: (serialize: (value: unknown) => string | undefined) =>
        libraryVerify(serialize, (body, i) =>
          timingSafeEqual(createHmac("sha256", hmacKey).update(body, "utf8").digest(), chain.macs[i]!),
        ),
    },
    {
      figure: `verify ${fmt(chainLength)}-receipt chain, Ed25519 (tollgate verify)`,
      baseline: "raw Ed25519 verify + SHA-256 of the canonical bytes",
      ours: () =>
        verifyReceiptChain(chain.receipts, {
          publicKeys: new Map([[kid, publicKey]]),
          requireEd25519: true,
        }),
      raw: () => {
        let ok = true;
        for (let i = 0; i < chainLength; i++) {
          ok = verify(null, chain.bodies[i]!, publicKey, chain.signatures[i]!) && linked(i) && ok;
        }
        return ok;
      },
      library: (serialize: (value: unknown) => string | undefined) =>
        libraryVerify(serialize, (body, i) =>
          verify(null, Buffer.from(body, "utf8"), publicKey, chain.signatures[i]!),
        ),
    },
  ];
  const rows: ResultRow[] = [];
  for (const mode of modes) {
    const result = mode.ours();
    if (
      result.overall_status !== "valid" ||
      !result.authenticated ||
      !mode.raw() ||
      LIBRARIES.some((library) => !mode.library(library.canonicalize))
    )
      throw new Error(`${mode.figure}: the bench chain does not verify: ${result.problems.slice(0, 3)}`);
    const runs: Measured[] = [];
    for (let i = 0; i < repeats; i++) {
      const ours = perSecond(() => void mode.ours()) * chainLength;
      const raw = perSecond(() => void mode.raw()) * chainLength;
      const libraries = LIBRARIES.map(
        (library) => perSecond(() => void mode.library(library.canonicalize)) * chainLength,
      );
      const run = { ours, raw, libraries };
      runs.push(run);
      progress(
        `  ${mode.figure}, run ${i + 1}: ours ${ours.toFixed(0)}/s, raw ${raw.toFixed(0)}/s (${(ours / raw).toFixed(3)}×); library floors ${floorsText(run)}`,
      );
    }
    rows.push(ratioRow(mode.figure, mode.baseline, runs), ...libraryRows(mode.figure, runs));
  }
  return rows;
}

function main() {
  progress(
    `receipt: build ${buildSizes.map(fmt).join(", ")} events; verify ${fmt(chainLength)} receipts; ${repeats} repeats`,
  );
  const rows: ResultRow[] = [];
  const builds: Record<string, unknown>[] = [];
  for (const events of buildSizes) {
    const { rows: built, extra } = benchBuild(events);
    rows.push(...built);
    builds.push(extra);
  }
  rows.push(...benchVerify());
  report("receipt", rows, { builds, chain: { receipts: chainLength, events_per_receipt: eventsPerReceipt } });
}

main();
