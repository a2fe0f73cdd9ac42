/**
 * bench/pii-scan: time of one `detectPii` call (src/policy/facts.ts) over adversarial strings
 * built to make a backtracking regular expression blow up (50,000 repetitions of "a@", "1 ",
 * "+" and "a." then "@"), beside the same call over as many bytes of plain text. Target: the
 * adversarial call under 2,000 ms (it used to be a timed assertion in
 * test/unit/policy/facts.test.ts; the unit test now checks what the scan finds).
 *
 *   npx tsx bench/pii-scan/run.ts [--repeats 5] [--quick]
 */
import { parseArgs } from "node:util";
import { detectPii } from "../../src/policy/facts.js";
import { progress, report } from "../lib/report.js";
import { infoRow, median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: { repeats: { type: "string", default: "5" }, quick: { type: "boolean", default: false } },
});
const repeats = args.quick ? 1 : Number(args.repeats);
const TARGET_MS = 2000;

const adversarial = ["a@".repeat(50_000), "1 ".repeat(50_000), "+".repeat(50_000), `${"a.".repeat(50_000)}@`];
const plain = adversarial.map((s) => "lorem ipsum ".repeat(Math.ceil(s.length / 12)).slice(0, s.length));

/** Milliseconds of one detectPii call over `texts`, `repeats` times; throws if it finds PII. */
function time(texts: string[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    const found = detectPii(texts);
    out.push(performance.now() - t0);
    if (found.length) throw new Error(`detectPii found ${found} in input without PII`);
  }
  return out;
}

progress(`pii-scan: ${repeats} repeats`);
const bad = time(adversarial);
const base = time(plain);
const value = median(bad);
const rows: ResultRow[] = [
  {
    benchmark: "pii-scan",
    figure: "detectPii over adversarial input (4 × 50k repetitions)",
    value,
    unit: "ms",
    baseline: "same size of plain text",
    baselineValue: median(base),
    ratio: median(base) > 0 ? value / median(base) : null,
    better: "lower",
    target: `< ${TARGET_MS} ms`,
    met: value < TARGET_MS,
    spreadPct: spreadPct(bad),
    repeats,
  },
  infoRow("pii-scan", "detectPii over plain text of the same size", "ms", base),
];
report("pii-scan", rows);
