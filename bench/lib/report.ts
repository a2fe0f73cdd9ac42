/**
 * Writes a benchmark's rows to bench/results/<name>.json and .md and prints the table.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { markdownTable, type ResultRow } from "./stats.js";

const resultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "results");

/** Persists and prints the rows of benchmark `name`. */
export function report(name: string, rows: ResultRow[], extra: Record<string, unknown> = {}): void {
  mkdirSync(resultsDir, { recursive: true });
  const md = markdownTable(rows);
  writeFileSync(
    path.join(resultsDir, `${name}.json`),
    `${JSON.stringify({ name, rows, ...extra }, null, 2)}\n`,
  );
  writeFileSync(path.join(resultsDir, `${name}.md`), `${md}\n`);
  process.stdout.write(`\n${md}\n`);
}

/** Prints a progress line to stderr (the table goes to stdout). */
export const progress = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
